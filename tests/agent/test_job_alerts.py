"""Job alerts: a failure alerts until a later run of the same job on the same dataset follows it."""

from __future__ import annotations

from agent.protocol import JobInfo, JobState
from agent.watch.snapshot_assembly import job_alerts

NOW = 10_000.0


def run(job_id: str, state: JobState, started: float, dataset: str | None = "B3") -> JobInfo:
    code = 2 if state == "failed" else (0 if state == "exited" else None)
    return JobInfo(job_id, "inference", "inference", state, (), dataset=dataset,
                   started_at=started, ended_at=started + 5 if code is not None else None,
                   exit_code=code)  # fmt: skip


def failed_ids(jobs: tuple[JobInfo, ...]) -> list[str]:
    return [a.subject for a in job_alerts(jobs, NOW) if a.kind == "job_failed"]


def test_a_failure_alerts_while_it_is_the_latest_run() -> None:
    assert failed_ids((run("a", "failed", 1.0),)) == ["a"]


def test_a_later_run_of_the_same_dataset_ends_the_failures_alert() -> None:
    assert failed_ids((run("a", "failed", 1.0), run("b", "running", 50.0))) == []
    assert failed_ids((run("a", "failed", 1.0), run("b", "exited", 50.0))) == []
    assert failed_ids((run("a", "failed", 1.0), run("b", "failed", 50.0))) == ["b"]


def test_a_run_of_another_dataset_leaves_the_failure_standing() -> None:
    jobs = (run("a", "failed", 1.0), run("b", "running", 50.0, dataset="B4"))
    assert failed_ids(jobs) == ["a"]
