"""`{best_checkpoint}`: the drafter server is started on the best evaluation's folder.

A real daemon; the training job prints SpecForge 0.2.0's `step N: {...}` lines (acceptance best
at step 4, lower at 8) with its command line naming a SpecForge config whose output_dir and
run_id say where the checkpoints go; the drafter server job takes `{best_checkpoint}`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.protocol import (
    EVENTS_LIST,
    JOBS_LAUNCH,
    EventsList,
    EventsParams,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
)
from console.link.agent_link import AgentLink, AgentRequestError
from tests.support.operations import (
    jobs_now,
    jobs_where,
    local_link,
    observer_scans,
    snapshot_where,
    text_appears,
)

PY = sys.executable
LOG = (
    "step 4: {'eval/avg_loss': 1.9, 'eval/per_position_acc': [0.8, 0.7, 0.6]}\n"
    "step 8: {'eval/avg_loss': 1.8, 'eval/per_position_acc': [0.7, 0.6, 0.5]}\n"
)


def pipeline(tmp_path: Path) -> PipelineConfig:
    (tmp_path / "run.yaml").write_text("run_id: r\noutput_dir: out\n")
    trainer = (PY, "-c", f"print({LOG!r}, flush=True)", "specforge", "train", "--config",
               str(tmp_path / "run.yaml"))  # fmt: skip
    server = (PY, "-c", "import sys, time; print('serving', sys.argv[1], flush=True); time.sleep(600)",
              "{best_checkpoint}")  # fmt: skip
    return PipelineConfig(jobs={
        "train": JobSpec(trainer, kind="train", cwd=str(tmp_path)),
        "drafter": JobSpec(server, kind="drafter_server"),
    })  # fmt: skip


async def trained(link: AgentLink) -> Snapshot:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="t")
    await text_appears(Path(job.log_path or ""), "step 8")
    return await snapshot_where(link, lambda s: any(r.best_eval_step == 4 for r in s.training), 30)


@pytest.mark.slow
async def test_the_drafter_server_is_started_on_the_best_evaluation_s_folder(
    tmp_path: Path, state_dir: Path
) -> None:
    (tmp_path / "out" / "r-step4").mkdir(parents=True)
    (tmp_path / "out" / "r-step8").mkdir()  # the last: 5-8 % worse, and what was served before
    async with local_link(state_dir, pipeline(tmp_path)) as link:
        snapshot = await trained(link)
        server: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("drafter"), idempotency_key="d")
        await text_appears(Path(server.log_path or ""), "serving")
    [run] = snapshot.training
    assert run.best_checkpoint == str(tmp_path / "out" / "r-step4")
    assert server.argv[-1] == str(tmp_path / "out" / "r-step4")


@pytest.mark.slow
async def test_without_a_folder_for_the_best_the_server_is_refused_saying_why(
    tmp_path: Path, state_dir: Path
) -> None:
    (tmp_path / "out" / "r-step8").mkdir(parents=True)
    async with local_link(state_dir, pipeline(tmp_path)) as link:
        snapshot = await trained(link)
        with pytest.raises(AgentRequestError) as refused:
            await link.call(JOBS_LAUNCH, LaunchParams("drafter"), idempotency_key="d")
    [run] = snapshot.training
    assert (
        run.best_checkpoint_note == f"no checkpoint for step 4 under {tmp_path / 'out'} (saved: 8)"
    )
    said = str(refused.value)
    assert "needs {best_checkpoint}, which has no value here" in said
    assert "best checkpoint" in said


PEAKED = LOG + (
    "step 12: {'eval/avg_loss': 1.7, 'eval/per_position_acc': [0.6, 0.5, 0.4]}\n"
    "step 16: {'eval/avg_loss': 1.6, 'eval/per_position_acc': [0.5, 0.4, 0.3]}\n"
)


@pytest.mark.slow
async def test_stop_after_peak_evals_stops_training_once_with_its_best_named(
    tmp_path: Path, state_dir: Path
) -> None:
    """Three evaluations in a row below the best at step 4: the GPU-hours after it buy a worse
    drafter (deepseek-ai/DeepSpec #84)."""
    (tmp_path / "out" / "r-step4").mkdir(parents=True)
    (tmp_path / "run.yaml").write_text("run_id: r\noutput_dir: out\n")
    code = f"import time; print({PEAKED!r}, flush=True); time.sleep(600)"
    trainer = (PY, "-c", code, "specforge", "train", "--config", str(tmp_path / "run.yaml"))
    spec = JobSpec(trainer, kind="train", cwd=str(tmp_path), stop_after_peak_evals=3,
                   restart="on-failure")  # fmt: skip
    async with local_link(state_dir, PipelineConfig(jobs={"train": spec})) as link:
        job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="t")
        [stopped] = await jobs_where(link, lambda js: bool(js and js[0].state == "stopped"))
        await observer_scans(link, 3)
        found: EventsList = await link.call(EVENTS_LIST, EventsParams())
        jobs = await jobs_now(link)
    assert stopped.id == job.id
    assert [j.id for j in jobs] == [job.id], "a stop asked for: its restart policy leaves it"
    [said] = [e.message for e in found.events if e.kind == "training_peak_stop"]
    assert "3 evaluations in a row below its best" in said
    assert f"serve {tmp_path / 'out' / 'r-step4'}" in said
