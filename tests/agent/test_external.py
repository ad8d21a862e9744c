"""Processes started by hand are found by pattern and stopped the same safe way."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
from pathlib import Path

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    JobsList,
    JobsParams,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
    StopResult,
)
from console.link.local_link import open_local_link
from tests.support.operations import wait_for_job
from tests.support.waits import wait_until_blocking

MARKER = f"eagle-external-canary-{secrets.token_hex(4)}"
"""Unique to this run: the pattern matches every process on the machine, another run's too."""
SLEEPER = f"import time  # {MARKER}\ntime.sleep(300)"


async def test_an_external_process_is_listed_and_stopped(state_dir: Path) -> None:
    by_hand = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    config = PipelineConfig(
        external={"hand-runner": MARKER},
        jobs={"own": JobSpec((sys.executable, "-c", SLEEPER))},
    )
    link = await open_local_link(state_dir, config)
    try:
        own = await link.call(JOBS_LAUNCH, LaunchParams("own"), idempotency_key="own-1")
        await wait_for_job(link, own.id, {"running"})
        listing: JobsList = await link.call(JOBS_LIST, JobsParams())
        [external] = [job for job in listing.jobs if job.external]
        result: StopResult = await link.call(
            JOBS_STOP, StopParams(external.id), idempotency_key="x"
        )
        await link.call(JOBS_STOP, StopParams(own.id), idempotency_key="y")
    finally:
        await link.close()
        if by_hand.poll() is None:
            by_hand.kill()
        by_hand.wait()
    assert (external.name, external.pid, external.pgid) == ("hand-runner", by_hand.pid, by_hand.pid)
    assert MARKER in " ".join(external.argv)
    assert [job.name for job in listing.jobs if not job.external] == ["own"], (
        "own jobs are not external"
    )
    assert result.outcome == "stopped"
    assert [step.action for step in result.steps] == ["SIGTERM"]
    assert by_hand.returncode == -15


def test_a_server_started_through_a_shell_is_the_server_not_the_shell() -> None:
    """`bash -c "python … sglang …"`: the pattern matched the shell too, and the job showed and
    signalled the shell's pid. The shell's child that serves is the job."""

    from agent.host.procfs import command_line, descendants
    from agent.host.signals import kill_group
    from agent.jobs.external import find_external

    marker = f"eagle-wrapped-{secrets.token_hex(4)}"
    script = f"{sys.executable} -c 'import time  # {marker}\ntime.sleep(300)'; true"
    shell = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
    try:
        # a child forked by the shell reads as the shell until it execs python: wait for that
        assert wait_until_blocking(
            lambda: [
                c for c in descendants(shell.pid) if command_line(c.pid)[:1] == [sys.executable]
            ],
            10,
        ), "the shell started no python"
        [child] = descendants(shell.pid)
        [found] = find_external({"server": marker}, set())
        assert found.pid == child.pid != shell.pid
        assert found.argv[0] == sys.executable
    finally:
        kill_group(shell.pid, signal.SIGKILL)  # its own session: the shell and its child
        shell.wait()
