"""A model server's engine left running after its API process died: listed, alerted, stoppable.

The processes here carry titles of vLLM's form (argv[0], as setproctitle leaves /proc/PID/cmdline)
under a prefix of their own, so an agent of another test running meanwhile does not list them,
and are orphaned the way a killed API server leaves them: reparented to init.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.host.procfs import process_info
from agent.jobs.orphans import find_orphans, orphan_alerts
from agent.protocol import JOBS_STOP, PipelineConfig, StopParams
from tests.support.operations import local_link
from tests.support.waits import wait_until_blocking

ENGINE = (
    "import subprocess, sys, time\n"
    "worker = subprocess.Popen(['EAGLETEST::Worker_TP0', '120'], executable='/bin/sleep')\n"
    "time.sleep(120)\n"
)
LAUNCHER = (
    "import subprocess, sys\n"
    "engine = subprocess.Popen(['EAGLETEST::EngineCore', '-c', sys.argv[1]], executable=sys.executable,"
    " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(engine.pid, flush=True)\n"
)
"""It exits at once: the engine, in its group but not leading it, is reparented, as when its API
server is killed (so a stop must end the engine's tree, not a group)."""


@pytest.fixture
def orphan() -> Iterator[tuple[int, int]]:
    launcher = subprocess.run([sys.executable, "-c", LAUNCHER, ENGINE], capture_output=True,
                              text=True, timeout=30, check=True, start_new_session=True)  # fmt: skip
    engine = int(launcher.stdout.split()[0])
    wait_until_blocking(lambda: _children(engine), 20)
    [worker] = _children(engine)
    yield engine, worker
    subprocess.run(["kill", "-9", str(engine), str(worker)], check=False, capture_output=True)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        info = process_info(int(entry.name)) if entry.name.isdigit() else None
        if info is not None and info.ppid == pid and info.alive:
            found.append(info.pid)
    return found


TITLE = re.compile(r"^(EAGLETEST)::(\S+)")


def test_the_engine_is_found_with_its_worker_and_their_memory(orphan: tuple[int, int]) -> None:
    engine, worker = orphan
    [job] = [j for j in find_orphans(set(), TITLE) if j.pid == engine]
    info = process_info(engine)
    assert info is not None
    assert info.pgid != engine, "as vLLM's engine: in its server's group, not leading one"
    assert job.name == "orphaned EAGLETEST EngineCore"
    assert job.external
    assert worker not in {j.pid for j in find_orphans(set(), TITLE)}, (
        "its worker is its, not a root"
    )
    assert engine not in {j.pid for j in find_orphans(set())}, "not a title vLLM or SGLang sets"
    [alert] = [a for a in orphan_alerts((job,), 0.0)]
    assert alert.kind == "orphaned_server"
    assert f"(pid {engine}, {worker})" in alert.message
    assert "runs on without its server, holding" in alert.message


def test_a_stop_ends_the_engine_and_everything_below_it(
    orphan: tuple[int, int], state_dir: Path
) -> None:
    engine, worker = orphan

    async def stop_it() -> None:
        [job] = [j for j in find_orphans(set(), TITLE) if j.pid == engine]
        async with local_link(state_dir, PipelineConfig()) as link:
            await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="stop-orphan",
                            timeout_s=60)  # fmt: skip

    import asyncio

    asyncio.run(stop_it())
    for pid in (engine, worker):
        info = process_info(pid)
        assert info is None or not info.alive, f"pid {pid} still runs"


STAYS = (
    "import subprocess, sys, time\n"
    "subprocess.run([sys.executable, '-c', sys.argv[1], sys.argv[2]], check=True)\n"
    "time.sleep(60)\n"
)
"""A group leader that stays: as a server that is PID 1 of its container, whose engine's parent
reads as init without the server being gone."""


def test_an_engine_whose_server_still_leads_its_group_is_not_an_orphan() -> None:
    leader = subprocess.Popen([sys.executable, "-c", STAYS, LAUNCHER, ENGINE],
                              stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        engines: list[int] = []
        while not engines and time.monotonic() < deadline:
            time.sleep(0.05)
            engines = [
                pid for pid in _group(leader.pid)
                if (info := process_info(pid)) is not None and info.ppid == 1
            ]  # fmt: skip
        assert engines, "the engine was reparented"
        assert not [j for j in find_orphans(set(), TITLE) if j.pid in engines]
    finally:
        subprocess.run(["kill", "-9", "--", f"-{leader.pid}"], check=False, capture_output=True)
        leader.wait()


def _group(pgid: int) -> list[int]:
    return [
        int(entry.name) for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and (info := process_info(int(entry.name))) is not None
        and info.pgid == pgid and info.alive
    ]  # fmt: skip
