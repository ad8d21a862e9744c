"""The agent refuses a second writer on a dataset, names the first, and shows a frozen one as stalled.

Through the real daemon: two consoles launching at once, an old script that holds the responses
file open for writing (no lock), a process holding writer.lock, and writers stopped by SIGSTOP.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agent.datasets.writer_lock import LOCK_NAME
from agent.host.procfs import process_info
from agent.host.signals import kill_group, kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    SNAPSHOT,
    DatasetProgress,
    DatasetsConfig,
    ErrorCode,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
)
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from tests.support.datasets import write_prompts
from tests.support.operations import jobs_where, local_link
from tests.support.waits import read_until, wait_until_blocking

PY = sys.executable
HOLD_OPEN = (
    "import sys, time; f = open(sys.argv[1], 'a'); print('open', flush=True); time.sleep(300)"
)
WRITER = JobSpec(
    (PY, "-c", "import time; time.sleep(300)", "{dataset_dir}"), kind="inference",
    per_dataset=True, grace_s=2,
)  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("B1", "B2"):
        write_prompts(tmp_path / "datasets" / name, 3)
    return tmp_path / "datasets"


@pytest.fixture
async def link(root: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=1000), jobs={"inference": WRITER}
    )
    agent = await open_local_link(state_dir, pipeline)
    yield agent
    for job in (await dataset_snapshot(agent)).jobs:
        if job.state == "running":
            with contextlib.suppress(AgentRequestError):
                await agent.call(JOBS_STOP, StopParams(job.id), idempotency_key=f"end-{job.id}")
    await agent.close()


@contextlib.contextmanager
def background(*argv: str) -> Iterator[subprocess.Popen[str]]:
    """A process the agent did not start; killed (and woken first) at the end."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stdout is not None
        process.stdout.readline()  # it says when it holds what it holds
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            kill_group(process.pid, signal.SIGKILL)
        process.wait()
        assert process.stdout is not None
        process.stdout.close()


def stop_process(pid: int) -> None:
    """SIGSTOP `pid` and wait until /proc shows it stopped (the signal lands asynchronously)."""
    kill_process(pid, signal.SIGSTOP)
    stopped = wait_until_blocking(
        lambda: getattr(process_info(pid), "state", None) == "T", 10, 0.005
    )
    assert stopped, f"pid {pid} never stopped"


async def dataset_snapshot(link: AgentLink) -> Snapshot:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    return snapshot


async def progress_of(link: AgentLink, name: str) -> DatasetProgress:
    return next(d for d in (await dataset_snapshot(link)).datasets if d.name == name)


async def progress_where(
    link: AgentLink, name: str, predicate: Callable[[DatasetProgress], bool]
) -> DatasetProgress:
    """The dataset's progress once `predicate` holds (a few snapshots; each took seconds on a
    machine running six test workers on two cores, so the bound is generous)."""
    return await read_until(lambda: progress_of(link, name), predicate, name, 30, 0.1)


async def launch(link: AgentLink, dataset: str, key: str) -> JobInfo:
    info: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams("inference", dataset), idempotency_key=key
    )
    return info


async def test_two_consoles_launching_on_one_dataset_start_one_writer(
    link: AgentLink, state_dir: Path, root: Path
) -> None:
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=1000), jobs={"inference": WRITER}
    )
    async with local_link(state_dir, pipeline) as other:
        answers = await asyncio.gather(
            launch(link, "B1", "console-1"), launch(other, "B1", "console-2"),
            return_exceptions=True,
        )  # fmt: skip

    started = [a for a in answers if isinstance(a, JobInfo)]
    refused = [a for a in answers if isinstance(a, AgentRequestError)]
    assert len(started) == 1, answers
    assert len(refused) == 1, answers
    assert refused[0].code == ErrorCode.DATASET_BUSY
    assert f"agent job {started[0].id}" in refused[0].detail
    assert "B1 already has a writer" in refused[0].detail
    winner = ("console-1", "console-2")[answers.index(started[0])]
    again = await launch(link, "B1", winner)
    assert again.id == started[0].id, "a retried launch still gets its own job, not a refusal"
    assert (await launch(link, "B2", "console-3")).dataset == "B2"


async def test_an_old_script_with_the_file_open_for_writing_is_the_writer(
    link: AgentLink, root: Path
) -> None:
    with background(PY, "-c", HOLD_OPEN, str(root / "B1" / "raw_responses.jsonl")) as script:
        # a scan already under way when it opened the file is shared: the next one sees it
        progress = await progress_where(link, "B1", lambda d: d.writer_active)
        assert progress.writer_pid == script.pid
        assert progress.status == "running"
        assert "has raw_responses.jsonl open for writing" in (progress.writer or "")

        with pytest.raises(AgentRequestError) as refused:
            await launch(link, "B1", "k1")

        assert refused.value.code == ErrorCode.DATASET_BUSY
        assert f"pid {script.pid} (" in refused.value.detail


async def test_a_script_that_ended_stops_being_the_writer_before_the_next_descriptor_scan(
    link: AgentLink, root: Path
) -> None:
    with background(PY, "-c", HOLD_OPEN, str(root / "B1" / "raw_responses.jsonl")) as script:
        await progress_where(link, "B1", lambda d: d.writer_pid == script.pid)
        kill_group(script.pid, signal.SIGKILL)
        script.wait()
        after = await progress_of(link, "B1")  # the last /proc/*/fd scan still lists its pid
    assert not after.writer_active
    assert after.status != "running"


async def test_a_lock_holder_is_the_writer(link: AgentLink, root: Path) -> None:
    lock = str(root / "B1" / LOCK_NAME)
    with background("flock", "--exclusive", lock, "sh", "-c", "echo locked; sleep 300") as held:
        with pytest.raises(AgentRequestError) as refused:
            await launch(link, "B1", "k1")
        assert f"pid {held.pid} (flock" in refused.value.detail
        assert f"holds {LOCK_NAME}" in refused.value.detail


async def test_a_stopped_writer_the_agent_did_not_start_shows_as_stalled(
    link: AgentLink, root: Path
) -> None:
    with background(PY, "-c", HOLD_OPEN, str(root / "B1" / "raw_responses.jsonl")) as script:
        stop_process(script.pid)
        # a scan already under way when the script stopped may be the one a request shares
        progress = await progress_where(link, "B1", lambda p: p.writer_stopped)
        assert (progress.status, progress.writer_stopped) == ("stalled", True)
        snapshot = await dataset_snapshot(link)
        [alert] = [a for a in snapshot.alerts if a.kind == "stalled" and a.subject == "B1"]
        assert "SIGCONT" in alert.message
        with pytest.raises(AgentRequestError):
            await launch(link, "B1", "k1")
        kill_process(script.pid, signal.SIGCONT)


async def test_a_stopped_agent_job_shows_as_stalled_and_keeps_its_dataset(link: AgentLink) -> None:
    launched = await launch(link, "B2", "k1")
    jobs = await jobs_where(
        link, lambda js: any(j.id == launched.id and j.pid and j.state == "running" for j in js)
    )
    job = next(j for j in jobs if j.id == launched.id)
    assert job.pid is not None
    stop_process(job.pid)
    try:
        progress = await progress_of(link, "B2")
        assert (progress.status, progress.writer_pid) == ("stalled", job.pid)
        with pytest.raises(AgentRequestError) as refused:
            await launch(link, "B2", "k2")
        assert "stopped (SIGSTOP)" in refused.value.detail
    finally:
        kill_process(job.pid, signal.SIGCONT)
