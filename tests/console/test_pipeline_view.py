"""The pipeline view: stage states from a snapshot, and the next step."""

from __future__ import annotations

from agent.protocol import DatasetProgress, JobInfo, Snapshot
from console.pipeline_view import next_stage, stages


def snapshot(datasets: tuple[DatasetProgress, ...], jobs: tuple[JobInfo, ...]) -> Snapshot:
    return Snapshot(1.0, "h", "/d", datasets, jobs=jobs)


def job(name: str, kind: str, state: str, started: float, code: int | None = None) -> JobInfo:
    return JobInfo(f"{name}-{started}", name, kind, state, (), started_at=started, exit_code=code)


def test_while_generating_the_next_step_is_generation() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),
         DatasetProgress("B2", 10, 3, 30, 100, status="running", writer_active=True)),
        (job("sglang", "server", "running", 1.0),),
    ))  # fmt: skip
    assert [(s.name, s.state) for s in items] == [
        ("generate", "running"), ("vocab", "not started"), ("stop server", "not started"),
        ("hidden states", "not started"), ("train", "not started"), ("serve with drafter", "not started"),
    ]  # fmt: skip
    upcoming = next_stage(items)
    assert upcoming is not None
    assert upcoming.name == "generate"


def test_after_vocab_and_a_stopped_server_the_next_step_is_hidden_states() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("sglang", "server", "stopped", 1.0), job("vocab", "vocab", "exited", 2.0, 0),
         job("hidden", "hidden_states", "failed", 3.0, 1)),
    ))  # fmt: skip
    states = {s.name: s.state for s in items}
    assert states["generate"] == "done"
    assert states["vocab"] == "done"
    assert states["stop server"] == "done"
    assert states["hidden states"] == "failed"
    upcoming = next_stage(items)
    assert upcoming is not None
    assert (upcoming.name, upcoming.key) == ("hidden states", "t")


def test_training_without_a_hidden_states_job_skips_that_stage() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("sglang", "server", "stopped", 1.0), job("vocab", "vocab", "exited", 2.0, 0),
         job("train", "train", "running", 3.0)),
    ))  # fmt: skip
    states = {s.name: s.state for s in items}
    assert states["hidden states"] == "skipped"
    upcoming = next_stage(items)
    assert upcoming is not None
    assert (upcoming.name, upcoming.state) == ("train", "running")


def test_a_job_stopped_on_request_is_still_to_do_not_failed() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("vocab", "vocab", "stopped", 1.0),),
    ))  # fmt: skip
    assert {s.name: s.state for s in items}["vocab"] == "not started"
