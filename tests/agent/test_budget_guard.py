"""The budget guard stops a dataset's writer at its budget, once, with nobody watching."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agent.jobs.stopper import StopPlan, StopTarget
from agent.journal.audit import AuditLog
from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT,
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    ServerStats,
    Snapshot,
    SnapshotParams,
    StopResult,
)
from agent.tasks import TaskOwner
from agent.watch.guard import BudgetGuard, WriterToStop, stall_alerts, writer_to_stop
from agent.watch.history import FILE_NAME, History
from agent.watch.recorder import Recorder
from console.link.local_link import open_local_link
from tests.support.operations import local_link
from tests.support.runner_files import response_tokens, start_runner, write_id_prompts
from tests.support.simulator_process import running_simulator
from tests.support.waits import until

BUDGET = 3000
MEAN_TOKENS = 100
CONCURRENCY = 4
DEADLINE_S = 90.0


def guarded(root: Path, guard: str = "stop") -> PipelineConfig:
    inference = JobSpec(
        ("{python}", "-m", "agent.pipeline.inference"), kind="inference", grace_s=20
    )
    datasets = DatasetsConfig(str(root), budget=BUDGET, guards={"B3_math": "stop"} if guard else {})
    return PipelineConfig(datasets=datasets, jobs={"inference": inference})


def wait_for_exit(process: subprocess.Popen[str]) -> int:
    try:
        return process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("the guard never stopped the runner") from None


def with_hostile_readings(pipeline: PipelineConfig, folder: Path) -> PipelineConfig:
    """A training job whose config says `max_steps: "²"` and an evaluation whose report holds
    1e400: files other readers of the snapshot read, which once stopped every snapshot."""
    (folder / "train.yaml").write_text('training:\n  max_steps: "²"\n')
    (folder / "eval").mkdir()
    (folder / "eval" / "eval.json").write_text(
        '{"verdict": "x", "finished_at": 1e400, "levels": [{"concurrency": 1e400}]}'
    )
    waits = ("bash", "-c", "sleep 600")
    jobs = {
        **pipeline.jobs,
        "train": JobSpec((*waits, "specforge", "train", "--config", str(folder / "train.yaml")), kind="train"),
        "evaluate": JobSpec((*waits, "--out", str(folder / "eval")), kind="evaluate"),
    }  # fmt: skip
    return replace(pipeline, jobs=jobs)


@pytest.mark.slow
@pytest.mark.parametrize("beside", ["nothing", "hostile files"])
async def test_a_hand_started_runner_capped_only_by_samples_is_stopped_at_its_budget(
    tmp_path: Path, state_dir: Path, beside: str
) -> None:
    folder = tmp_path / "datasets" / "B3_math"
    write_id_prompts(folder, 2000)
    pipeline = guarded(tmp_path / "datasets")
    if beside == "hostile files":
        pipeline = with_hostile_readings(pipeline, tmp_path)
    with running_simulator(
        tmp_path / "sim", "--speed", "10", "--mean-tokens", str(MEAN_TOKENS), "--sd-tokens", "10"
    ) as sim:
        link = await open_local_link(state_dir, pipeline)
        for name in ("train", "evaluate") if beside == "hostile files" else ():
            await link.call(JOBS_LAUNCH, LaunchParams(name), idempotency_key=name)
        await link.close()  # nobody watches from here on
        runner = start_runner(folder, sim.url, "--max-samples", "1500",
                              "--concurrency", str(CONCURRENCY))  # fmt: skip
        code = await asyncio.to_thread(wait_for_exit, runner)
        async with local_link(state_dir, pipeline) as link:
            snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    tokens = response_tokens(folder)
    assert code == 3, "stopped by its signal after draining, not by running out of samples"
    assert BUDGET <= tokens < BUDGET + 20 * CONCURRENCY * MEAN_TOKENS, tokens
    assert tokens < 1500 * MEAN_TOKENS / 2
    [alert] = [a for a in snapshot.alerts if a.kind == "budget_guard"]
    assert alert.subject == "B3_math"
    assert "reached its budget" in alert.message
    audited = [json.loads(line) for line in (state_dir / "audit.jsonl").read_text().splitlines()]
    [stop] = [entry for entry in audited if entry["method"] == "guard.stop"]
    assert (stop["client"], stop["params"]["dataset"]) == ("budget guard", "B3_math")
    with sqlite3.connect(state_dir / FILE_NAME) as db:
        kinds = [
            kind for (kind,) in db.execute("SELECT kind FROM events WHERE subject = 'B3_math'")
        ]
    assert kinds.count("guard_stop") == 1
    if beside == "hostile files":
        [training] = snapshot.training
        assert (
            "training.max_steps = '²' in train.yaml is not a positive whole number"
            in training.total_note
        )
        assert snapshot.evaluation is None, "a report with an infinity is no report"


def progress(tokens: int, writer_pid: int | None = None) -> DatasetProgress:
    return DatasetProgress("B3_math", 10, 10, tokens, BUDGET, writer_pid=writer_pid)


def job(state: str) -> JobInfo:
    return JobInfo("j1", "inference", "inference", state, (), pid=1, dataset="B3_math")  # type: ignore[arg-type]


def test_a_writer_already_stopping_is_not_stopped_again() -> None:
    assert writer_to_stop(progress(BUDGET), (job("stopping"),)) is None
    assert writer_to_stop(progress(BUDGET), (job("running"),)) == WriterToStop(
        "j1", "job inference", True
    )


async def test_the_guard_stops_each_writer_once_and_only_where_configured(tmp_path: Path) -> None:
    stopped: list[str] = []

    async def stop_own(job_id: str) -> StopResult:
        stopped.append(job_id)
        return StopResult(job("stopped"), "stopped", ())

    async def stop_adopted(job_id: str, target: StopTarget, plan: StopPlan) -> StopResult:
        raise AssertionError("no adopted writer here")

    pipeline = guarded(tmp_path)
    history, tasks = History(tmp_path), TaskOwner("test")
    guard = BudgetGuard(
        lambda: pipeline, stop_own, stop_adopted, AuditLog(tmp_path / "audit.jsonl"), history,
        Recorder(history, tasks), tasks,
    )  # fmt: skip
    other = DatasetProgress("B1", 10, 10, BUDGET * 2, BUDGET)
    other_job = JobInfo("j2", "inference", "inference", "running", (), dataset="B1")
    under = Snapshot(
        time.time(), "h", None, (progress(BUDGET - 1), other), (), (job("running"), other_job)
    )
    at = Snapshot(
        time.time(), "h", None, (progress(BUDGET), other), (), (job("running"), other_job)
    )
    try:
        await guard.heard(under)
        await guard.heard(at)
        await guard.heard(at)
        await until(lambda: stopped and not tasks.active, "the stop done", 10)
        await guard.heard(at)
        await tasks.close()
    finally:
        history.close()
    assert stopped == ["j1"], "B1's guard is alert only; B3_math's writer is stopped once"
    assert [a.kind for a in guard.with_alerts(at).alerts] == ["budget_guard"]


def test_a_writer_silent_past_stall_guard_s_with_a_healthy_server_is_an_error_alert() -> None:
    config = DatasetsConfig("/d", stall_guard_s=600)
    silent = DatasetProgress("B3_math", 10, 10, 100, None, writer_active=True,
                             last_response_at=1.0 - 900)  # fmt: skip
    busy = DatasetProgress("B1", 10, 10, 100, None, writer_active=True, last_response_at=1.0 - 5)
    healthy = ServerStats(url="http://s", healthy=True, detail="ok")
    snapshot = Snapshot(1.0, "h", None, (silent, busy), server=healthy)
    [alert] = stall_alerts(snapshot, config)
    assert (alert.kind, alert.severity, alert.subject) == ("writer_stalled", "error", "B3_math")
    down = replace(snapshot, server=replace(healthy, healthy=False))
    assert stall_alerts(down, config) == [], "a writer waiting for a dead server is not stalled"
    assert stall_alerts(snapshot, DatasetsConfig("/d")) == [], "off unless configured"
