"""The hidden-states plan: bytes the job will write against the room where it writes.

The bytes per token are checked against a sample written in each trainer's layout and counted
by the trainer's own reader (SpecForge's `_inspect_feature_file`, which its offline reader runs
to size a feature file) or loaded as speculators' loader takes it; the target's config is read as
its config.json has it, nested `text_config` included.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from agent.datasets.disk_space import size_text
from agent.operations.stages import Context, Fail, Launch, hidden_states_room, job_stage
from agent.plans.hidden_states import FILE_BYTES, ID_BYTES, hidden_states_plan, plan_alerts
from agent.protocol import ExportSummary, JobInfo, JobSpec, PipelineConfig, Snapshot

HIDDEN = 64
SEQ = 10


def export(tokens: int | None, records: int = 3) -> ExportSummary:
    return ExportSummary("e", "/out", 1.0, 1.0, 0.99, False, 10, 1.0, (), tokens, records)


def model(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def pipeline(tmp_path: Path, script: str, *flags: str) -> PipelineConfig:
    argv = ("python", script, "--target-model-path", str(tmp_path / "m"), *flags)
    return PipelineConfig(jobs={"hs": JobSpec(argv, kind="hidden_states", cwd=str(tmp_path))})


def test_specforge_s_bytes_per_token_are_what_its_own_reader_counts(tmp_path: Path) -> None:
    reader: Any = importlib.import_module("specforge.runtime.data_plane.offline_reader")
    sample = {  # the layout scripts/prepare_hidden_states.py writes (eagle3-pipeline.md 2.3)
        "input_ids": torch.arange(SEQ), "loss_mask": torch.ones(SEQ, dtype=torch.long),
        "hidden_state": torch.zeros(1, SEQ, HIDDEN, dtype=torch.bfloat16),
        "aux_hidden_state": torch.zeros(1, SEQ, 3 * HIDDEN, dtype=torch.bfloat16),
    }  # fmt: skip
    torch.save(sample, tmp_path / "data_0.ckpt")
    _, tokens, counted = reader._inspect_feature_file(
        str(tmp_path / "data_0.ckpt"), reader._OFFLINE_EAGLE3_KEYS
    )
    model(tmp_path / "m", {"hidden_size": HIDDEN, "torch_dtype": "bfloat16"})
    plan = hidden_states_plan(
        pipeline(tmp_path, "scripts/prepare_hidden_states.py", "--output-path", "hs"),
        export(tokens, records=1), tmp_path,
    )  # fmt: skip
    assert plan is not None
    assert plan.trainer == "specforge"
    assert plan.bytes_per_token is not None
    assert plan.bytes_needed == counted + FILE_BYTES["specforge"]
    assert counted == SEQ * plan.bytes_per_token
    on_disk = (tmp_path / "data_0.ckpt").stat().st_size
    assert abs(counted + FILE_BYTES["specforge"] - on_disk) < 256, (
        "the file as torch.save writes it, container too"
    )
    assert plan.output == str(tmp_path / "hs")
    assert plan.fits is True
    assert plan.note == f"{SEQ:,} tokens × {plan.bytes_per_token:,} bytes (specforge)"


def test_speculators_bytes_per_token_are_those_its_loader_takes(tmp_path: Path) -> None:
    save_file({"hidden_states": torch.zeros(SEQ, 4, HIDDEN, dtype=torch.bfloat16),
               "token_ids": torch.arange(SEQ)}, str(tmp_path / "hs_0.safetensors"))  # fmt: skip
    loaded = load_file(str(tmp_path / "hs_0.safetensors"))
    counted = sum(t.numel() * t.element_size() for t in loaded.values())
    assert loaded["hidden_states"][:, :-1].flatten(1).shape == (SEQ, 3 * HIDDEN)  # its split
    model(tmp_path / "m", {"text_config": {"hidden_size": HIDDEN, "torch_dtype": "bfloat16"}})
    plan = hidden_states_plan(
        pipeline(tmp_path, "scripts/data_generation_offline.py"), export(SEQ, records=1), tmp_path
    )
    assert plan is not None
    assert (plan.trainer, plan.bytes_needed) == ("speculators", counted + FILE_BYTES["speculators"])
    on_disk = (tmp_path / "hs_0.safetensors").stat().st_size
    assert abs(counted + FILE_BYTES["speculators"] - on_disk) < 256, (
        "the file with its safetensors header"
    )
    assert plan.bytes_per_token == 4 * HIDDEN * 2 + ID_BYTES["speculators"]


def test_a_plan_past_the_free_space_pauses_the_stage_saying_both_figures(tmp_path: Path) -> None:
    model(tmp_path / "m", {"hidden_size": 7168, "torch_dtype": "bfloat16"})  # Kimi-K2's width
    config = pipeline(tmp_path, "scripts/prepare_hidden_states.py", "--output-path", "hs")
    plan = hidden_states_plan(config, export(10**12), tmp_path)  # a trillion tokens: no disk
    assert plan is not None
    assert plan.fits is False
    assert plan.bytes_needed == 10**12 * (4 * 7168 * 2 + 16) + 3 * FILE_BYTES["specforge"]
    taken = Snapshot(1.0, "h", None, (), hidden_states_plan=plan)
    refused = hidden_states_room(Context(taken, config, 0.0, 0.0))
    assert isinstance(refused, Fail)
    assert refused.reason.startswith(
        f"the hidden states will not fit: hs would write {size_text(plan.bytes_needed)} ("
    )
    assert size_text(plan.bytes_needed).endswith(" TiB")
    assert f"{tmp_path / 'hs'} has" in refused.reason
    assert "larger disk" in refused.reason
    assert isinstance(job_stage("hidden_states", before=hidden_states_room)(
        Context(taken, config, 0.0, 0.0)), Fail)  # fmt: skip
    [alert] = plan_alerts(plan, (), 1.0)
    assert (alert.kind, alert.severity, alert.subject) == ("hidden_states_no_room", "error", "hs")
    assert f"has {size_text(plan.bytes_free or 0)} free" in alert.message
    roomy = hidden_states_plan(config, export(1000), tmp_path)
    assert plan_alerts(roomy, (), 1.0) == []
    exited = JobInfo("hs-1", "hs", "hidden_states", "exited", (), exit_code=0)
    assert plan_alerts(plan, (exited,), 1.0) == [], "the space it took is no reason to alert"
    running = JobInfo("hs-1", "hs", "hidden_states", "running", (), pid=1)
    [warning] = plan_alerts(plan, (running,), 1.0)
    assert (warning.kind, warning.severity) == ("hidden_states_low_disk", "warning")
    assert "will be stopped (its stop signal) before the room runs out" in warning.message
    failed = JobInfo("hs-1", "hs", "hidden_states", "failed", (), exit_code=1)
    assert len(plan_alerts(plan, (failed,), 1.0)) == 1, "a capture to run again: still no room"
    taken = Snapshot(1.0, "h", None, (), hidden_states_plan=roomy)
    assert isinstance(job_stage("hidden_states", before=hidden_states_room)(
        Context(taken, config, 0.0, 0.0)), Launch)  # fmt: skip


@pytest.mark.parametrize(
    ("config", "script", "tokens", "unknown"),
    [
        (None, "scripts/prepare_hidden_states.py", 10, "the target's config.json"),
        ({"hidden_size": "wide"}, "scripts/prepare_hidden_states.py", 10, "hidden_size"),
        ({"hidden_size": 64, "torch_dtype": "int3"}, "scripts/prepare_hidden_states.py", 10,
         "the bytes of dtype 'int3'"),
        ({"hidden_size": 64}, "my_capture.py", 10, "which trainer writes them"),
        ({"hidden_size": 64}, "scripts/prepare_hidden_states.py", None, "exported records"),
    ],
)  # fmt: skip
def test_what_is_unknown_is_said_and_never_pauses(
    tmp_path: Path, config: dict[str, Any] | None, script: str, tokens: int | None, unknown: str
) -> None:
    if config is not None:
        model(tmp_path / "m", config)
    plan = hidden_states_plan(pipeline(tmp_path, script), export(tokens), tmp_path)
    assert plan is not None
    assert plan.fits is None
    assert plan.note.startswith("unknown: ")
    assert unknown in plan.note
    taken = Snapshot(1.0, "h", None, (), hidden_states_plan=plan)
    assert hidden_states_room(Context(taken, PipelineConfig(), 0.0, 0.0)) is None


def test_no_hidden_states_job_no_plan(tmp_path: Path) -> None:
    assert hidden_states_plan(PipelineConfig(), export(10), tmp_path) is None


def test_a_job_cutting_longer_than_the_export_counted_is_unknown_shorter_an_upper_bound(
    tmp_path: Path,
) -> None:
    """The export counts tokens cut at its --max-length; a capture at 4,096 would write more."""
    model(tmp_path / "m", {"hidden_size": HIDDEN})
    counted = dataclasses.replace(export(1000), max_length=2048)
    longer = pipeline(tmp_path, "scripts/prepare_hidden_states.py", "--max-length", "4096")
    plan = hidden_states_plan(longer, counted, tmp_path)
    assert plan is not None
    assert plan.fits is None
    assert "the job's --max-length 4,096 (the export counted them cut at 2,048" in plan.note
    assert "export again with --max-length 4096" in plan.note
    shorter = pipeline(tmp_path, "scripts/prepare_hidden_states.py", "--max-length=1024")
    bound = hidden_states_plan(shorter, counted, tmp_path)
    assert bound is not None
    assert bound.fits is True
    assert bound.note.endswith(
        "(specforge), at most: the job cuts at 1,024, the export counted at 2,048"
    )
    same = pipeline(tmp_path, "scripts/prepare_hidden_states.py", "--max-length", "2048")
    plain = hidden_states_plan(same, counted, tmp_path)
    assert plain is not None
    assert plain.note.endswith("bytes (specforge)")
