"""Jobs through the real daemon: launch under a shim, stop with escalation, never a recycled pid."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, assert_type

import pytest

from agent.host.procfs import group_members, process_info, start_ticks
from agent.host.signals import is_running, kill_process
from agent.jobs.supervisor import _state as supervisor_state
from agent.protocol import (
    AUDIT_READ,
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    SNAPSHOT,
    AuditParams,
    AuditResult,
    DatasetsConfig,
    JobInfo,
    JobsList,
    JobsParams,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
    StopResult,
)
from agent.state import read_json
from console.link.agent_link import AgentLink, AgentRequestError
from tests.support.datasets import write_prompts
from tests.support.job_programs import ARGV_ECHO
from tests.support.operations import local_link, wait_for_job
from tests.support.waits import until, wait_until

PY = sys.executable
ESCAPING = (
    "import os, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"  # double fork: the worker's parent exits, it is orphaned
    "        signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
    "        open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "        time.sleep(300)\n"
    "    os._exit(0)\n"
    "time.sleep(300)\n"
)
STUBBORN = (
    "trap '' TERM INT; (trap '' TERM INT; sleep 300) & (trap '' TERM INT; sleep 300) & "
    "echo ready; wait; wait"
)


def pipeline(tmp_path: Path) -> PipelineConfig:
    root = tmp_path / "datasets"
    write_prompts(root / "B1_sharegpt", 2)
    return PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=1000),
        jobs={
            "sleeper": JobSpec((PY, "-c", "import time; print('up', flush=True); time.sleep(300)")),
            "quick": JobSpec((PY, "-c", "import sys, time; time.sleep(1.5); sys.exit(7)")),
            "stubborn": JobSpec(
                ("/bin/bash", "-c", STUBBORN), stop_signal="SIGINT", grace_s=0.5, term_grace_s=0.5
            ),
            "echo": JobSpec(
                (PY, "-c", ARGV_ECHO, str(tmp_path / "argv.json"), "{dataset}", "{budget}"),
                env={"PROBE": "{dataset_dir}"},
                per_dataset=True,
            ),  # fmt: skip
            "bad": JobSpec((PY, "{nonsense}")),
            "escaping": JobSpec(
                (PY, "-c", ESCAPING, str(tmp_path / "escaped.pid")), grace_s=0.5, term_grace_s=0.5
            ),
            "escaping-usr1": JobSpec(  # SIGUSR1 ends the job at once: the shim must outlive it
                (PY, "-c", ESCAPING, str(tmp_path / "escaped.pid")),
                stop_signal="SIGUSR1",
                grace_s=0.5,
                term_grace_s=0.5,
            ),  # fmt: skip
        },
    )


@pytest.fixture
async def link(tmp_path: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    async with local_link(state_dir, pipeline(tmp_path)) as agent:
        yield agent


async def launch(
    link: AgentLink,
    job: str,
    key: str,
    dataset: str | None = None,
    argv: tuple[str, ...] | None = None,
) -> JobInfo:
    params = LaunchParams(job, dataset, argv)
    info: JobInfo = await link.call(JOBS_LAUNCH, params, idempotency_key=key)
    return info


async def test_launch_runs_under_a_shim_in_its_own_session(
    link: AgentLink, state_dir: Path
) -> None:
    info = await launch(link, "sleeper", "k1")
    running = await wait_for_job(link, info.id, {"running"})
    assert running.pid is not None
    assert running.pgid is not None
    assert os.getsid(running.pid) == running.pgid, "the job runs in the shim's new session"
    assert os.getpgid(running.pid) == running.pgid
    log = Path(str(running.log_path))
    await until(lambda: b"up" in log.read_bytes(), "the job's first line", 10)
    assert Path(f"/proc/{running.pid}/fd/0").resolve() == Path("/dev/null")
    event = await asyncio.wait_for(link.events.get(), 5)
    assert event.event == "job"
    result: StopResult = await link.call(JOBS_STOP, StopParams(info.id), idempotency_key="s1")
    assert result.outcome == "stopped"
    assert [step.action for step in result.steps] == ["SIGTERM"]
    assert result.job.state == "stopped"
    assert result.job.exit_signal == "SIGTERM"


async def test_a_retried_launch_starts_nothing_new(link: AgentLink) -> None:
    first = await launch(link, "sleeper", "same-key")
    again = await launch(link, "sleeper", "same-key")
    listing = await link.call(JOBS_LIST, JobsParams())
    assert_type(listing, JobsList)  # mypy knows the result from the method constant alone
    assert again.id == first.id
    assert [job.id for job in listing.jobs] == [first.id]
    await link.call(JOBS_STOP, StopParams(first.id), idempotency_key="stop")


async def test_escalation_reaches_sigkill_on_time_and_leaves_no_orphan(link: AgentLink) -> None:
    info = await launch(link, "stubborn", "k2")
    running = await wait_for_job(link, info.id, {"running"})
    assert running.pgid is not None
    pgid = running.pgid
    await wait_until(lambda: len(group_members(pgid)) >= 4, 10)
    started = time.monotonic()

    result: StopResult = await link.call(JOBS_STOP, StopParams(info.id), idempotency_key="s2")

    took = time.monotonic() - started
    assert [step.action for step in result.steps] == ["SIGINT", "SIGTERM", "SIGKILL"]
    kill_after = result.steps[2].at - result.steps[0].at
    assert 1.0 - 1 <= kill_after <= 1.0 + 1, "SIGKILL comes after grace_s + term_grace_s, +- 1 s"
    assert result.outcome == "stopped"
    assert group_members(running.pgid) == []
    assert result.job.state == "stopped"
    assert took < 10
    again: StopResult = await link.call(JOBS_STOP, StopParams(info.id), idempotency_key="s2b")
    assert (again.outcome, again.steps, again.job.state) == ("stopped", (), "stopped")


@pytest.mark.parametrize("job", ["escaping", "escaping-usr1"])
async def test_a_worker_that_left_the_group_and_was_orphaned_is_stopped_too(
    link: AgentLink, tmp_path: Path, job: str
) -> None:
    info = await launch(link, job, f"k-{job}")
    pid_file = tmp_path / "escaped.pid"
    await until(lambda: pid_file.exists() and pid_file.read_text(), "the escaping worker", 10)
    escaped = int(pid_file.read_text())
    assert process_info(escaped) is not None

    result: StopResult = await link.call(JOBS_STOP, StopParams(info.id), idempotency_key="s-e")

    assert result.outcome == "stopped"
    assert result.job.state == "stopped"
    assert escaped in {pid for step in result.steps for pid in step.pids}
    gone = process_info(escaped)
    assert gone is None or not gone.alive


async def test_a_recycled_pid_is_never_signalled(link: AgentLink, state_dir: Path) -> None:
    info = await launch(link, "quick", "k3")
    await wait_for_job(link, info.id, {"failed"})
    canary = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        job_dir = state_dir / "jobs" / info.id
        ticks = start_ticks(canary.pid)
        assert ticks is not None
        (job_dir / "exit.json").unlink()
        for name in ("shim.json", "child.json"):  # as if the job's pid now belonged to the canary
            (job_dir / name).write_text(json.dumps({"pid": canary.pid, "start_ticks": ticks - 1}))

        result: StopResult = await link.call(JOBS_STOP, StopParams(info.id), idempotency_key="s3")

        assert result.outcome == "lost"
        assert result.steps == ()
        assert canary.poll() is None, "the canary was signalled"
        assert result.job.state == "lost"
    finally:
        canary.kill()
        canary.wait()


async def test_a_job_outlives_a_killed_daemon_and_its_exit_is_captured(
    tmp_path: Path, state_dir: Path, link: AgentLink
) -> None:
    info = await launch(link, "quick", "k4")
    running = await wait_for_job(link, info.id, {"running"})
    daemon_pid = read_json(state_dir / "daemon.json")["pid"]
    kill_process(daemon_pid, signal.SIGKILL)
    assert running.pid is not None
    assert is_running(running.pid)  # still alive without its daemon
    await link.close()

    async with local_link(state_dir, pipeline(tmp_path)) as again:
        ended = await wait_for_job(again, info.id, {"failed", "exited", "lost"})
    assert read_json(state_dir / "daemon.json")["pid"] != daemon_pid
    assert (ended.state, ended.exit_code) == ("failed", 7)


@pytest.mark.parametrize(
    "hostile",
    [
        "; touch CANARY",
        "$(touch CANARY)",
        "`touch CANARY`",
        "'\"quotes\"'",
        "line\nbreak",
        "-rf",
        "--token-budget=1",
    ],
)
async def test_edited_argv_reaches_the_job_byte_for_byte(
    link: AgentLink, tmp_path: Path, hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "argv.json"
    argv = (PY, "-c", ARGV_ECHO, str(out), hostile, "{dataset}")
    info = await launch(link, "echo", f"k-{hash(hostile)}", dataset="B1_sharegpt", argv=argv)
    await wait_for_job(link, info.id, {"exited"})
    written = json.loads(out.read_text())
    assert written["argv"] == [str(out), hostile, "B1_sharegpt"]
    assert written["env"] == str(tmp_path / "datasets" / "B1_sharegpt")
    assert not list(tmp_path.rglob("CANARY"))
    assert not list(Path(str(info.log_path)).parent.rglob("CANARY"))


async def test_templates_fill_dataset_and_budget(link: AgentLink, tmp_path: Path) -> None:
    info = await launch(link, "echo", "k5", dataset="B1_sharegpt")
    await wait_for_job(link, info.id, {"exited"})
    written = json.loads((tmp_path / "argv.json").read_text())
    assert written["argv"][1:] == ["B1_sharegpt", "1000"]


@pytest.mark.parametrize(
    ("job", "kwargs", "fragment"),
    [
        ("nope", {}, "no job 'nope' in the host config (configured: bad, echo"),
        ("echo", {}, "runs per dataset"),
        ("echo", {"dataset": "../etc"}, "no dataset '../etc'"),
        ("bad", {}, "uses {nonsense}"),
        ("echo", {"dataset": "B1_sharegpt", "argv": (PY, "a\0b")}, "NUL byte"),
    ],
)
async def test_launches_that_cannot_be_done_safely_are_refused(
    link: AgentLink, job: str, kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(AgentRequestError) as caught:
        await launch(link, job, f"k-{job}-{len(kwargs)}-{fragment}", **kwargs)
    assert caught.value.code == "invalid_params"
    assert fragment in caught.value.detail


async def test_mutations_are_audited(link: AgentLink, state_dir: Path) -> None:
    info = await launch(link, "quick", "audit-me")
    with pytest.raises(AgentRequestError):
        await launch(link, "nope", "audit-me-too")
    entries = [json.loads(line) for line in (state_dir / "audit.jsonl").read_text().splitlines()]
    assert [(e["method"], e["idempotency_key"], e["outcome"][:5]) for e in entries] == [
        ("jobs.launch", "audit-me", "ok"),
        ("jobs.launch", "audit-me-too", "error"),
    ]
    assert entries[0]["client"].startswith("eagle-console")
    assert entries[0]["params"]["job"] == "quick"
    read: AuditResult = await link.call(AUDIT_READ, AuditParams(limit=1))
    assert [entry.idempotency_key for entry in read.entries] == ["audit-me-too"]
    await wait_for_job(link, info.id, {"failed"})


async def test_a_job_whose_script_changed_on_disk_is_flagged_stale(
    tmp_path: Path, state_dir: Path
) -> None:
    script = tmp_path / "run_inference.py"
    script.write_text("import time\ntime.sleep(300)\n")
    config = PipelineConfig(jobs={"script": JobSpec((PY, str(script)))})
    async with local_link(state_dir, config) as agent:
        info = await launch(agent, "script", "stale-1")
        await wait_for_job(agent, info.id, {"running"})
        before: Snapshot = await agent.call(SNAPSHOT, SnapshotParams())
        script.write_text("import time\ntime.sleep(301)  # fixed\n")
        after: Snapshot = await agent.call(SNAPSHOT, SnapshotParams())
        await agent.call(JOBS_STOP, StopParams(info.id), idempotency_key="stale-stop")
    assert [a.kind for a in before.alerts] == []
    [alert] = after.alerts
    assert (alert.kind, alert.subject) == ("stale_code", info.id)
    assert str(script) in alert.message


def test_a_job_that_exits_on_its_requested_stop_reads_stopping_then_stopped_never_failed() -> None:
    """Once a runner exiting with code 3 on its SIGINT showed `failed` until the stop was recorded."""
    shim, ended = {"pid": 1, "start_ticks": 1}, {"exit_code": 3, "ended_at": 5.0}
    assert supervisor_state(True, shim, None, ended, None)[0] == "stopping"
    stopped = {"outcome": "stopped", "steps": ["SIGINT"], "at": 6.0}
    assert supervisor_state(False, shim, None, ended, stopped)[0] == "stopped"
    assert supervisor_state(False, shim, None, ended, None)[0] == "failed"  # nobody asked
