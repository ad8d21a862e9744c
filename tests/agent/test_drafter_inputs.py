"""What the drafter check is run on, found in the configured jobs: hostile and odd commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.plans.drafter_inputs import drafter_inputs, server_kind
from agent.protocol import JobSpec, PipelineConfig, Snapshot

SNAPSHOT = Snapshot(1.0, "h", None, ())


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (("/home/u/vllm-env/bin/python", "-m", "sglang.launch_server"), "sglang"),
        (("/opt/sglang-venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"), "vllm"),
        (("vllm", "serve", "/m"), "vllm"),
        (("bash", "-c", "exec python -m sglang.launch_server --model-path /m"), "sglang"),
        (("python", "-m", "agent.simulator"), "sglang"),
        (("python", "serve.py"), ""),
    ],
)
def test_the_server_is_told_by_what_runs_never_by_a_folder_s_name(
    argv: tuple[str, ...], kind: str
) -> None:
    assert server_kind(argv) == kind


def pipeline(*argv: str, **jobs: JobSpec) -> PipelineConfig:
    return PipelineConfig(tokenizer="/models/target", jobs={
        "drafter": JobSpec(argv, kind="drafter_server"), **jobs,
    })  # fmt: skip


def test_a_hub_id_is_not_checked_and_says_why() -> None:
    found = drafter_inputs(pipeline("vllm", "serve", "/m", "--speculative-config",
                                    '{"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}'), SNAPSHOT)  # fmt: skip
    assert found.checkpoint is None
    assert "names a model on a hub" in found.why_not


def test_vllm_serve_with_model_as_a_flag_finds_the_target(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    found = drafter_inputs(pipeline("vllm", "serve", "--model", "/models/other", "--spec-model",
                                    str(draft)), SNAPSHOT)  # fmt: skip
    assert found.args[:4] == ("--target-config", "/models/other/config.json", "--server", "vllm")


def test_the_gate_checks_the_drafter_server_being_started(tmp_path: Path) -> None:
    other = JobSpec(("python", "-m", "sglang.launch_server", "--speculative-draft-model-path",
                     str(tmp_path / "b")), kind="drafter_server")  # fmt: skip
    config = pipeline("python", "-m", "sglang.launch_server", "--speculative-draft-model-path",
                      str(tmp_path / "a"), second=other)  # fmt: skip
    assert drafter_inputs(config, SNAPSHOT).checkpoint == str(tmp_path / "a")
    assert drafter_inputs(config, SNAPSHOT, job="second").checkpoint == str(tmp_path / "b")


def test_an_unknown_target_is_no_check_rather_than_a_usage_error(tmp_path: Path) -> None:
    config = PipelineConfig(jobs={"drafter": JobSpec(
        ("python", "-m", "sglang.launch_server", "--speculative-draft-model-path", str(tmp_path)),
        kind="drafter_server")})  # fmt: skip
    found = drafter_inputs(config, SNAPSHOT)
    assert (found.checkpoint, found.args) == (None, ())
    assert "the target's folder is unknown" in found.why_not


def test_digits_int_cannot_read_are_no_value_not_a_crash(tmp_path: Path) -> None:
    """`²` is a digit to str.isdigit and an error to int(): read from a job's argv, it is no value."""
    train = JobSpec(("speculators", "train", "--target-layer-ids", "²", "3"), kind="train")
    config = pipeline("python", "-m", "sglang.launch_server", "--speculative-draft-model-path",
                      str(tmp_path), "--context-length", "²", train=train)  # fmt: skip
    found = drafter_inputs(config, SNAPSHOT)
    assert found.checkpoint == str(tmp_path)
    assert "--served-length" not in found.args
    assert "--trained-layers" not in found.args
