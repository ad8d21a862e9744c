"""Demo hang-up: the terminal of `eagle-console demo` is closed at each phase of its life.

`eagle-console demo` runs on a pty of its own (the real command, as a user starts it), and the
pty is closed, as closing a terminal window does (the kernel sends SIGHUP), at a moment told by
what the demo writes, never by a guessed time: while it builds its workspace; once the agent has
started jobs but before the console is up; while the console runs (also through its loopback SSH
server, in the full campaign); and during the teardown after `q`.

Checks: the demo exits within EXIT_WITHIN_S of the hang-up; no process whose command line names
its workspace is left (nothing left, so nothing spinning); a hang-up during start-up never opens
the console; one during the teardown lands there (the demo exits with 129, not 0).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from faults.result import Scale, ScenarioResult, spread
from tests.support.demo_terminal import (
    ALTERNATE_SCREEN,
    BUILDING,
    CONSOLE_UP,
    START_TIMEOUT_S,
    STARTING,
    TEARING_DOWN,
    demo_processes,
    job_shims,
    kill_leftovers,
    start_demo,
)
from tests.support.terminal import MarkerNotSeenError, PtyTerminal
from tests.support.waits import wait_until_blocking

TITLE = "Demo hang-up: the terminal closed at start-up, while running, during teardown"

EXIT_WITHIN_S = 15.0
PHASES = ("building", "jobs starting", "running", "teardown")


@dataclass(frozen=True, slots=True)
class Trial:
    """One hang-up: where, and through what."""

    phase: str
    flags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The phase, and --ssh when it goes through the loopback SSH server."""
        return " ".join((self.phase, *self.flags))


def trials(scale: Scale) -> list[Trial]:
    """Each phase once (the short campaign), three times and over SSH too (the full one)."""
    plain = [Trial(phase) for phase in PHASES]
    if not scale.full:
        return plain
    return plain * 3 + [Trial("jobs starting", ("--ssh",)), Trial("running", ("--ssh",))]


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Hang the demo up at every phase; count what it left and how long it took to end."""
    result = ScenarioResult("demo_hangup", TITLE, seed)
    left: Counter[str] = Counter()
    for index, trial in enumerate(trials(scale)):
        workspace = (workdir / f"demo-{index}").absolute()
        try:
            await asyncio.to_thread(one_trial, trial, workspace, result, left)
        finally:
            kill_leftovers(workspace)
            shutil.rmtree(workspace, ignore_errors=True)
    result.notes.append(
        "processes left after the hang-up, by phase: "
        + ", ".join(
            f"{label} {left[label]}" for label in dict.fromkeys(t.label for t in trials(scale))
        )
    )
    result.notes.append(
        f"exit after the hang-up (p50 / max): {spread(result.detection_s)}; "
        f"every process of the demo gone (p50 / max): {spread(result.recovery_s)}"
    )
    return result


def one_trial(trial: Trial, workspace: Path, result: ScenarioResult, left: Counter[str]) -> None:
    """Start the demo, hang up at the trial's phase, check the end."""
    result.attempted += 1
    terminal = start_demo(workspace, *trial.flags)
    try:
        if not _reach(trial.phase, terminal, workspace, result, trial.label):
            return
        result.faults += 1
        hung_up_at = time.monotonic()
        terminal.hang_up()
        code = terminal.wait_exit(EXIT_WITHIN_S)
        exited_s = time.monotonic() - hung_up_at
        leftovers = demo_processes(workspace)
        gone = wait_until_blocking(lambda: not demo_processes(workspace), EXIT_WITHIN_S)
        left[trial.label] += len(leftovers)
        _judge(trial, terminal, code, leftovers, result)
        result.detection_s.append(exited_s)
        result.notes.append(f"{trial.label}: exited {code} {exited_s:.2f} s after the hang-up")
        if gone:
            result.recovery_s.append(time.monotonic() - hung_up_at)
    finally:
        terminal.close()


def _reach(
    phase: str, terminal: PtyTerminal, workspace: Path, result: ScenarioResult, label: str
) -> bool:
    """Wait until the demo is in `phase` (False, with the reason, if it never got there)."""
    try:
        if phase == "building":
            terminal.wait_for(BUILDING, START_TIMEOUT_S)
        elif phase == "jobs starting":
            terminal.wait_for(STARTING, START_TIMEOUT_S)
            if not wait_until_blocking(lambda: job_shims(workspace), START_TIMEOUT_S):
                raise MarkerNotSeenError("no job of the demo's ever started")
        elif phase == "running":
            terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
        else:
            terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
            sent = len(terminal.output)
            terminal.send(b"q")
            terminal.wait_for(TEARING_DOWN, START_TIMEOUT_S, after=sent)
    except MarkerNotSeenError as exc:
        result.violate(f"{label}: the demo never got there: {str(exc).splitlines()[0]}")
        return False
    return True


def _judge(
    trial: Trial, terminal: PtyTerminal, code: int | None, leftovers: list[str],
    result: ScenarioResult,
) -> None:  # fmt: skip
    label = trial.label
    problems = []
    if code is None:
        problems.append(f"still running {EXIT_WITHIN_S:g} s after the hang-up")
    if leftovers:
        problems.append(f"exited {code}, leaving {len(leftovers)} process(es): {leftovers[:3]}")
    if trial.phase in ("building", "jobs starting") and ALTERNATE_SCREEN in terminal.output:
        problems.append("the console had come up: the hang-up missed the start-up")
    if trial.phase == "teardown" and code == 0:
        problems.append("exited 0: the teardown had ended before the hang-up, so it was not tested")
    if problems:
        result.violate(f"{label}: {'; '.join(problems)}")
    else:
        result.acknowledged += 1
