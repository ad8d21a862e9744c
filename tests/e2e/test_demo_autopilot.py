"""The plain demo, left alone, ends with an evaluated drafter: the box carries the run.

Run in tmux as a person would start it, with no key pressed until the verdict is on the screen;
on the way the demo kills a runner and the SGLang stand-in once each, and both must come back by
their restart policy; its hidden states do not fit their quota at first (the autopilot pauses and
says so), then the demo deletes a stale capture and resumes it. Long (about five minutes on two cores): the whole pipeline runs.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.support.demo_terminal import demo_processes
from tests.support.tmux import Tmux

VERDICT_TIMEOUT_S = 900.0
KILLED = ("killed runner", "killed the SGLang stand-in")
REFUSAL = "the hidden states will not fit"
ROOM_MADE = "the demo deleted a stale capture"

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.mark.timeout(1200)
@pytest.mark.slow
def test_the_demo_left_alone_reaches_the_verdict_through_a_runner_and_a_server_crash(
    tmp_path: Path,
    tmux: Tmux,
) -> None:
    workspace = tmp_path / "demo"
    console = Path(sys.executable).parent / "eagle-console"
    exited = tmp_path / "exited"
    command = f"{console} demo --dir {workspace} --keep; echo $? > {exited}"
    tmux.run("new-session", "-d", "-s", "demo", "-x", "200", "-y", "50", command)

    seen = _watch_until_verdict(tmux)

    assert set(KILLED) <= seen, f"the demo's own crashes were not both told: {seen}"
    assert {REFUSAL, ROOM_MADE} <= seen, f"the refusal, then the room made: {seen}"
    hidden = workspace / "hidden-states"
    samples = list(hidden.rglob("data_*.ckpt"))
    assert samples, "the capture wrote SpecForge's files"
    assert not (hidden / "stale-capture.tar").exists()
    restarted = _restarted_jobs(workspace / "agent-state" / "jobs")
    assert {"inference", "sglang"} <= restarted, f"restarted by their policy: {restarted}"
    events = (workspace / "agent-state" / "autopilot.json").read_text()
    assert json.loads(events)["state"] == "done"

    tmux.keys("q")
    assert tmux.wait_exit(exited) == "0"
    assert demo_processes(workspace) == []


def _watch_until_verdict(tmux: Tmux) -> set[str]:
    """Read the screen until the autopilot's verdict shows; returns the mishaps it told."""
    seen: set[str] = set()
    deadline = time.monotonic() + VERDICT_TIMEOUT_S
    while True:
        screen = tmux.screen()
        seen |= {said for said in (*KILLED, ROOM_MADE) if said in screen}
        if "autopilot done" in screen and "at concurrency 1" in screen:
            return seen
        if "autopilot PAUSED" in screen and REFUSAL in screen:
            seen.add(REFUSAL)  # the demo's one refusal: it makes the room and resumes
        elif "autopilot PAUSED" in screen:
            pytest.fail(f"the autopilot paused:\n{screen}")
        if time.monotonic() > deadline:
            pytest.fail(f"no verdict in {VERDICT_TIMEOUT_S:g} s; the screen shows:\n{screen}")
        time.sleep(0.5)


def _restarted_jobs(jobs: Path) -> set[str]:
    """Names of the jobs a restart policy started (their job.json says whom they replaced)."""
    names = set()
    for record in jobs.glob("*/job.json"):
        job = json.loads(record.read_text())
        if job.get("restart_of"):
            names.add(str(job["name"]))
    return names
