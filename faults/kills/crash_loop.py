"""A crash loop: jobs that die at once under `restart = "on-failure"` with a small cap.

Each job fails the moment it starts, a different way: it exits 1, it SIGKILLs itself, or it
cannot import what it needs (exit 1 with a traceback). The restart policy starts each again
after a short back-off that doubles, and past its cap (`max_restarts` in the window) gives up;
the import error, raised at the same place twice, is one the same argv repeats: its line ends
after one restart with a `same_failure` alert instead.

Checks: each line is launched exactly 1 + its cap times (the import's at most twice), each
restart naming the run before it and started no sooner than its back-off after that run ended
(a lower bound, which load cannot break); one `job_restarted` event per restart, exactly one
`restart_gave_up` event and one `crash_loop` alert per line that gave up (naming its last run),
one `same_failure` alert per import line; nothing more happens over further observer scans; and
no busy loop: the daemon's CPU time (utime + stime from /proc) stays under BUSY_SHARE of the wall
time while it loops and gives up, and under IDLE_SHARE once it gave up. detection_s is the first
launch to the line's end, per line.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agent.operations.crash_causes import SAME_FAILURE
from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT_WATCH,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    WatchParams,
)
from agent.state import read_json
from console.link.agent_link import AgentLink
from faults.harness.agents import local_agent
from faults.harness.box_runs import line_of
from faults.result import Scale, ScenarioResult
from tests.support.operations import alerts_of, events_of, jobs_now, jobs_where, observer_scans

TITLE = "A crash loop: jobs that die at once stop after their cap, one alert, no busy loop"

CRASHES = {
    "exit": "import sys; print('exiting 1', flush=True); sys.exit(1)",
    "signal": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "import": "import a_module_this_box_lacks",
}
DELAY_S = 0.05
BUSY_SHARE = 0.8
"""Most the daemon may use of one core while the jobs crash and restart (a busy loop is ~1)."""
IDLE_SHARE = 0.1
"""Most it may use once every line gave up: its observer's scans and a console's snapshots."""
CLOCK_SLACK_S = 0.005
"""How much shorter than its back-off a restart may seem, for rounding in the recorded times."""
IDLE_WINDOW_S = 3.0
GIVE_UP_TIMEOUT_S = 90.0


@dataclass(frozen=True, slots=True)
class Looper:
    """One crashing job: how it dies and its cap."""

    how: str
    cap: int

    @property
    def name(self) -> str:
        """The job's name in the config."""
        return f"crash-{self.how}-{self.cap}"

    @property
    def repeats_itself(self) -> bool:
        """The same error at the same place each run: the policy stops at the second."""
        return self.how == "import"

    @property
    def launches(self) -> int:
        """How many times the line runs: 1 + its cap, or twice for an error that repeats."""
        return min(1 + self.cap, 2) if self.repeats_itself else 1 + self.cap

    @property
    def ending(self) -> str:
        """How its last run's restart note begins."""
        return SAME_FAILURE if self.repeats_itself else "gave up"

    def spec(self) -> JobSpec:
        """The job, restarted on failure at most `cap` times in 10 minutes."""
        return JobSpec(
            (sys.executable, "-c", CRASHES[self.how]), restart="on-failure",
            max_restarts=self.cap, restart_window_s=600.0, restart_delay_s=DELAY_S,
        )  # fmt: skip


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Three ways to crash, each with caps 1 to 5 (one of each way in the short campaign)."""
    result = ScenarioResult("crash_loop", TITLE, seed)
    loopers = [Looper(how, cap) for cap in (1, 2, 3, 4, 5) for how in CRASHES]
    if not scale.full:
        loopers = [Looper("exit", 2), Looper("signal", 3), Looper("import", 1)]
    config = PipelineConfig(jobs={looper.name: looper.spec() for looper in loopers})
    async with local_agent(workdir / "state", config) as link:
        daemon = int(read_json(workdir / "state" / "daemon.json")["pid"])
        await _loop_and_give_up(link, daemon, loopers, result)
        await _check_lines(link, loopers, result)
        await _idle(link, daemon, loopers, result)
    return result


async def _loop_and_give_up(
    link: AgentLink, daemon: int, loopers: list[Looper], result: ScenarioResult
) -> None:
    """Launch every job at once; wait until each line gave up; the daemon's CPU meanwhile."""
    cpu, started = cpu_seconds(daemon), time.monotonic()
    for looper in loopers:
        await link.call(JOBS_LAUNCH, LaunchParams(looper.name), idempotency_key=looper.name)
    jobs = await jobs_where(link, lambda js: _all_gave_up(js, loopers), GIVE_UP_TIMEOUT_S)
    wall, used = time.monotonic() - started, cpu_seconds(daemon) - cpu
    for looper in loopers:
        line = line_of(jobs, looper.name)
        result.detection_s.append((line[-1].ended_at or 0.0) - (line[0].started_at or 0.0))
    if used > BUSY_SHARE * wall:
        result.violate(f"the daemon used {used:.2f} s of CPU in {wall:.2f} s of crash loops")
    launches = sum(len(line_of(jobs, looper.name)) for looper in loopers)
    result.notes.append(
        f"while {len(loopers)} jobs crashed and were restarted until they gave up: the daemon "
        f"used {used:.2f} s of CPU in {wall:.2f} s ({used / wall:.0%} of one core; limit "
        f"{BUSY_SHARE:.0%}), {1000 * used / max(launches, 1):.0f} ms per launch; restart "
        f"delay {DELAY_S:g} s doubling"
    )


def _all_gave_up(jobs: tuple[JobInfo, ...], loopers: list[Looper]) -> bool:
    lines = [(line_of(jobs, looper.name), looper.ending) for looper in loopers]
    return all(line and (line[-1].restart_note or "").startswith(end) for line, end in lines)


async def _check_lines(link: AgentLink, loopers: list[Looper], result: ScenarioResult) -> None:
    """After more scans: 1 + cap launches each, chained; one event and one alert per line."""
    await observer_scans(link, 5)
    jobs = await jobs_now(link)
    for looper in loopers:
        line = line_of(jobs, looper.name)
        result.faults += len(line)
        result.attempted += looper.launches
        result.acknowledged += len(line)
        if len(line) != looper.launches:
            result.violate(f"{looper.name}: launched {len(line)} times, cap {looper.cap}")
        _check_chain(looper, line, result)
    restarted = await events_of(link, "job_restarted")
    gave_up = await events_of(link, "restart_gave_up")
    restarts = sum(looper.launches - 1 for looper in loopers)
    if len(restarted) != restarts:
        result.violate(f"{len(restarted)} job_restarted events for {restarts} restarts")
    looping = [looper for looper in loopers if not looper.repeats_itself]
    if len(gave_up) != len(looping):
        result.violate(f"{len(gave_up)} restart_gave_up events for {len(looping)} crash loops")
    for kind, which in (("crash_loop", looping),
                        ("same_failure", [x for x in loopers if x.repeats_itself])):  # fmt: skip
        alerts = await alerts_of(link, kind)
        last_runs = sorted(line_of(jobs, looper.name)[-1].id for looper in which)
        if sorted(alerts) != last_runs:
            result.violate(f"{kind} alerts name {sorted(alerts)}, not the last runs {last_runs}")


def _check_chain(looper: Looper, line: list[JobInfo], result: ScenarioResult) -> None:
    """Each restart names the run before it and waited out its back-off (DELAY_S doubling)."""
    for number, (before, after) in enumerate(zip(line, line[1:], strict=False)):
        if after.restart_of != before.id:
            result.violate(f"{looper.name}: {after.id} restarts {after.restart_of}")
        waited = (after.started_at or 0.0) - (before.ended_at or float("inf"))
        if waited < DELAY_S * 2**number - CLOCK_SLACK_S:
            result.violate(
                f"{looper.name}: restart {number + 1} came {waited:.3f} s after the end, "
                f"its back-off is {DELAY_S * 2**number:g} s"
            )


async def _idle(
    link: AgentLink, daemon: int, loopers: list[Looper], result: ScenarioResult
) -> None:
    """Given up, the daemon rests: little CPU over a window, and no new launch."""
    await link.call(SNAPSHOT_WATCH, WatchParams(1.0))  # as a console's link watches
    before, cpu = await jobs_now(link), cpu_seconds(daemon)
    await asyncio.sleep(IDLE_WINDOW_S)  # a measuring window, not a wait for something
    used = cpu_seconds(daemon) - cpu
    after = await jobs_now(link)
    if len(after) != len(before):
        result.violate(f"{len(after) - len(before)} launches after every line gave up")
    if used > IDLE_SHARE * IDLE_WINDOW_S:
        result.violate(
            f"given up, the daemon still used {used:.2f} s of CPU in {IDLE_WINDOW_S:g} s"
        )
    caps = ", ".join(f"{looper.name} {looper.launches}" for looper in loopers)
    result.notes += [
        f"given up, with a console watching at 1 Hz: {used:.2f} s of CPU in {IDLE_WINDOW_S:g} s "
        f"(limit {IDLE_SHARE:.0%} of one core)",
        f"launches per line (1 + cap; an error that repeats itself, twice): {caps}",
        "detection_s: a line's first launch to the end of its last run (the give-up)",
    ]


def cpu_seconds(pid: int) -> float:
    """The CPU time a process used (user + system), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
