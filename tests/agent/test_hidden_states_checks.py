"""The agent checks a capture that exited 0, and training waits for a check that passed.

A real daemon runs a stand-in capture named as SpecForge's script is, which writes samples in
SpecForge's layout (torch.save'd dicts, as its offline reader takes them); the agent runs the real
`agent.pipeline.hidden_states_check` on them. One run writes a NaN into a sample.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agent.operations.stages import Context, Fail, Wait, hidden_states_checked
from agent.plans.hidden_states_checks import verdict_of
from agent.protocol import (
    JOBS_LAUNCH,
    HiddenStatesCheck,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
)
from tests.support.operations import local_link, snapshot_where

PY = sys.executable
CAPTURE = """
import sys, torch
out, nan = sys.argv[sys.argv.index("--output-path") + 1], "--nan" in sys.argv
for i in range(3):
    h = torch.full((1, 8, 16), 0.5, dtype=torch.bfloat16)
    if nan and i == 2:
        h[0, 0, 0] = float("nan")
    torch.save({"input_ids": torch.arange(8), "loss_mask": torch.ones(8, dtype=torch.long),
                "hidden_state": h, "aux_hidden_state": torch.full((1, 8, 48), 0.5, dtype=torch.bfloat16)},
               f"{out}/data_{i}.ckpt")
"""


def pipeline(tmp_path: Path, *extra: str) -> PipelineConfig:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "config.json").write_text(
        json.dumps({"hidden_size": 16, "torch_dtype": "bfloat16"})
    )
    (tmp_path / "out").mkdir(exist_ok=True)
    script = tmp_path / "prepare_hidden_states.py"
    script.write_text(CAPTURE)
    argv = (PY, str(script), "--target-model-path", str(tmp_path / "m"), "--output-path",
            str(tmp_path / "out"), *extra)  # fmt: skip
    return PipelineConfig(jobs={"hs": JobSpec(argv, kind="hidden_states")})


async def checked(tmp_path: Path, state_dir: Path, *extra: str) -> Snapshot:
    async with local_link(state_dir, pipeline(tmp_path, *extra)) as link:
        await link.call(JOBS_LAUNCH, LaunchParams("hs"), idempotency_key="hs")
        return await snapshot_where(
            link, lambda s: getattr(s.hidden_states_check, "ok", None) is not None, 120
        )


@pytest.mark.slow
async def test_a_good_capture_passes_its_check(tmp_path: Path, state_dir: Path) -> None:
    snapshot = await checked(tmp_path, state_dir)
    verdict = snapshot.hidden_states_check
    assert verdict is not None
    assert (verdict.ok, verdict.files, verdict.checked, verdict.problems) == (True, 3, 3, ())
    assert not [a for a in snapshot.alerts if a.kind == "hidden_states_check_failed"]


@pytest.mark.slow
async def test_a_nan_in_a_sample_fails_the_check_with_an_alert(
    tmp_path: Path, state_dir: Path
) -> None:
    snapshot = await checked(tmp_path, state_dir, "--nan")
    verdict = snapshot.hidden_states_check
    assert verdict is not None
    assert verdict.ok is False
    assert verdict.problems == ("data_2.ckpt: hidden_state: 1 NaN or infinite values",)
    [alert] = [a for a in snapshot.alerts if a.kind == "hidden_states_check_failed"]
    assert "training will not start on them" in alert.message


def test_training_waits_for_the_check_and_never_starts_on_a_failed_one() -> None:
    spec = JobSpec((PY,), kind="hidden_states")
    config = PipelineConfig(jobs={"hs": spec, "train": JobSpec((PY,), kind="train")})
    capture = JobInfo("hs-1", "hs", "hidden_states", "exited", (), started_at=10.0, exit_code=0)

    def decision(check: HiddenStatesCheck | None) -> object:
        taken = Snapshot(20.0, "h", None, (), jobs=(capture,), hidden_states_check=check)
        return hidden_states_checked(Context(taken, config, 0.0, 0.0))

    assert isinstance(decision(None), Wait)
    assert isinstance(decision(HiddenStatesCheck("hs-1", None, note="checking")), Wait)
    failed = decision(
        HiddenStatesCheck("hs-1", False, 3, None, 3, ("data_2.ckpt: hidden_state: NaN",))
    )
    assert isinstance(failed, Fail)
    assert "data_2.ckpt: hidden_state: NaN" in failed.reason
    assert decision(HiddenStatesCheck("hs-1", True, 3, None, 3)) is None
    assert (
        decision(HiddenStatesCheck("hs-1", None, note="not checked: the target is unknown")) is None
    )


@pytest.mark.parametrize(
    "out", [b"", b"[]", b'{"files": -1, "checked": 1, "expected": null, "problems": [], "ok": true}',
            b'{"files": 1, "checked": 1, "expected": null, "problems": [], "ok": "yes"}'],
)  # fmt: skip
def test_a_report_that_is_no_report_is_no_verdict(out: bytes) -> None:
    verdict = verdict_of("hs-1", out, b"Traceback...\nRuntimeError: boom\n")
    assert verdict.ok is None
    assert verdict.note.startswith("no report: ")


async def test_the_plan_is_said_once_per_export_and_again_when_its_verdict_changes() -> None:
    from agent.operations.plan_events import PlanEvents
    from agent.protocol import ExportSummary, HiddenStatesPlan

    said: list[tuple[str, str]] = []

    class Recording:
        def event(self, kind: str, subject: str, message: str, severity: str = "info",
                  **_: object) -> None:  # fmt: skip
            said.append((message, severity))

    events = PlanEvents(Recording())  # type: ignore[arg-type]
    plan = HiddenStatesPlan("hs", "specforge", 10**9, 57_360, 57_360 * 10**9, "/scratch/hs",
                            100 * 2**40, 2**30, True, "1,000,000,000 tokens × 57,360 bytes")  # fmt: skip
    export = ExportSummary("export-1", "/out", 1.0, 1.0, 0.99, False, 10, 1.0)

    def taken(p: HiddenStatesPlan | None, e: ExportSummary = export) -> Snapshot:
        return Snapshot(1.0, "h", None, (), export=e, hidden_states_plan=p)

    for _ in range(3):
        await events.heard(taken(plan))
    await events.heard(taken(replace(plan, fits=None)))  # unknown for a moment: nothing said
    await events.heard(taken(replace(plan, bytes_free=2**40, fits=False)))
    await events.heard(
        taken(replace(plan, bytes_free=2**40, fits=False), replace(export, job_id="e2"))
    )
    assert [severity for _, severity in said] == ["info", "error", "error"]
    assert said[0][0] == (
        "hidden states of hs: 52.2 TiB (1,000,000,000 tokens × 57,360 bytes) to /scratch/hs, "
        "100.0 TiB free: fits"
    )
    assert said[1][0].endswith("1.0 TiB free: does NOT fit: the autopilot will not start it")
