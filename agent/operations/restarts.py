"""Restart policies: a job that fails is started again, within limits, with nobody watching.

In the spirit of systemd's `Restart=on-failure` with `StartLimitBurst` and supervisord's
`autorestart` (reference/restart-and-recovery-anchors.md): the latest job of each line (a job
name and its dataset) that failed, was killed or was lost (a reboot, a dead shim) is started
again with the request that started it, after a back-off that doubles with each restart in the
window; past `max_restarts` in `restart_window_s` the policy gives up with one alert. Never
restarted: a stop that was asked for (by a person, the budget guard or a redeploy), a job that
exited 0, the exits that say a retry cannot help, and a crash its log shows the same argv would
repeat (GPU out of memory, the same error at the same place twice: crash_causes.py). Exit 5 (a
write failed) waits for disk space first. Every decision is written to the job's `restart.json`
before it is acted on, so a restarted agent neither repeats a restart nor forgets one it had
scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.datasets.disk_space import free_bytes, size_text
from agent.errors import AgentError
from agent.host.procfs import boot_id
from agent.jobs.lines import latest_per_line
from agent.jobs.registry import JOB_FILE, RESTART_FILE, STOP_FILE, Registry
from agent.jobs.supervisor import launch_params
from agent.logs import last_lines
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.operations.crash_causes import SAME_FAILURE, is_deterministic, read_cause
from agent.pipeline.exit_codes import EXIT_LOCKED, EXIT_SIGNAL, EXIT_USAGE, EXIT_WRITE_FAILED
from agent.probes.values import figure
from agent.protocol import FAILED_JOB_STATES, Alert, ErrorCode, JobInfo, JobSpec, Snapshot
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)

FINAL = ("no", "gave_up", "restarted")
MAX_DELAY_S = 300.0
RETRY_S = 30.0
"""The longest a restart that waits (for the GPUs, for disk space) goes without looking again;
it looks at every snapshot the observer takes, too."""
NO_RETRY = {
    EXIT_USAGE: "exit 2 means refused (its arguments, or the server refused every request)",
    EXIT_SIGNAL: "exit 3 means it drained after a stop signal someone sent",
    EXIT_LOCKED: "exit 4 means another process writes its dataset",
}
TAIL_LINES = 3
POLICY_NOW_NO = "not restarted: its restart policy was set to no while it waited"


class Restarts:
    """Decides, for each line's latest job that ended badly, whether and when it starts again."""

    def __init__(
        self, registry: Registry, box: Box, announcer: Announcer, tasks: TaskOwner,
        handled_elsewhere: Callable[[str], bool],
    ) -> None:  # fmt: skip
        self.registry = registry
        self.box = box
        self.announcer = announcer
        self.tasks = tasks
        self.handled_elsewhere = handled_elsewhere
        """True for a job whose end an operation deals with (a redeploy's new run)."""
        self._final: set[str] = set()
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._launching: set[str] = set()
        """Pending restarts past their wait, in their launch: never cancelled from outside."""
        self._scanned = asyncio.Event()
        """Set (and replaced) at every snapshot: what a waiting restart looks again at."""

    async def heard(self, snapshot: Snapshot) -> None:
        """Take up every line whose latest job ended badly (an observer listener; never waits).

        A restart still pending is dropped first where a person (or anyone) has overruled it since.
        """
        self._scanned.set()
        self._scanned = asyncio.Event()
        await self._drop_overruled(snapshot)
        runs = {job.id: job for job in snapshot.jobs}
        for job in latest_per_line(snapshot.jobs):
            decided = job.id in self._final or job.id in self._pending
            if job.state not in FAILED_JOB_STATES or decided:
                continue
            if self.handled_elsewhere(job.id):
                continue
            decision = await asyncio.to_thread(self._decision, job.id)
            if decision.get("decision") in FINAL:
                self._final.add(job.id)
                continue
            earlier_run = runs.get(job.restart_of) if job.restart_of else None
            self._pending[job.id] = self.tasks.spawn(
                self._follow_up(job, decision, earlier_run), f"restart policy {job.id}"
            )
            self._pending[job.id].add_done_callback(self._settled)

    async def _drop_overruled(self, snapshot: Snapshot) -> None:
        """Cancel each pending restart that a stop, a newer run or the config now overrules."""
        latest = {(job.name, job.dataset): job for job in latest_per_line(snapshot.jobs)}
        waiting = [
            j for j in snapshot.jobs if j.id in self._pending and j.id not in self._launching
        ]
        for job in waiting:
            why = await asyncio.to_thread(self._overruled, job, latest.get((job.name, job.dataset)))
            if why is None or job.id in self._launching:  # one that launches: the lock decides
                continue
            task = self._pending.pop(job.id, None)  # None: it settled while the files were read
            if task is not None:
                task.cancel()
                await self._decide(job, "no", why)

    def _overruled(self, job: JobInfo, latest: JobInfo | None) -> str | None:
        """Why a pending restart of `job` no longer stands (blocking: reads its files), or None."""
        if latest is not None and job.id not in (latest.id, latest.restart_of):  # not its own
            return f"not restarted: {latest.id} was started since"
        files = self.registry.get(job.id)
        if files is not None and files.read(STOP_FILE) is not None:
            return "not restarted: a stop was asked for it while it waited to restart"
        return _policy_now(self.box.pipeline.jobs.get(job.name))

    def _settled(self, task: asyncio.Task[None]) -> None:
        for job_id, pending in list(self._pending.items()):
            if pending is task:
                del self._pending[job_id]
                self._launching.discard(job_id)

    def alerts(self, snapshot: Snapshot) -> list[Alert]:
        """One error per line given up, or left alone as it would fail the same way (thread-safe)."""
        kinds = (("gave up", "crash_loop"), (SAME_FAILURE, "same_failure"))
        return [
            Alert(
                kind,
                "error",
                f"{_named(job)}: {job.restart_note}",
                job.id,
                job.ended_at or snapshot.taken_at,
            )  # fmt: skip
            for job in latest_per_line(snapshot.jobs)
            for prefix, kind in kinds
            if job.restart_note and job.restart_note.startswith(prefix)
        ]

    # ------------------------------------------------------------ one job

    async def _follow_up(
        self, job: JobInfo, decision: dict[str, Any], earlier_run: JobInfo | None
    ) -> None:
        spec = self.box.pipeline.jobs.get(job.name)
        fresh = spec is not None and job.exit_code not in NO_RETRY and not decision
        if fresh and await self._fails_the_same_way(job, earlier_run):
            return  # said whatever its policy: the autopilot reads it too, and does not retry
        why_not = _why_not(job, spec)
        if why_not is not None or spec is None:
            await self._decide(job, "no", why_not or None)
            return
        if job.exit_code == EXIT_WRITE_FAILED:
            await self._wait_for_disk(job)
        earlier = await asyncio.to_thread(self._earlier_restarts, job, spec.restart_window_s)
        if len(earlier) >= spec.max_restarts:
            await self._give_up(job, spec, len(earlier))
            return
        wait_s = scheduled_wait_s(decision) if decision.get("decision") == "scheduled" else None
        if wait_s is None:
            wait_s = min(MAX_DELAY_S, spec.restart_delay_s * 2 ** len(earlier))
            due = time.time() + wait_s
            note = (
                f"restarting at {time.strftime('%H:%M:%S', time.localtime(due))} (restart "
                f"{len(earlier) + 1} of {spec.max_restarts} within {_span(spec.restart_window_s)})"
            )
            when = {"at": due, "at_monotonic": time.monotonic() + wait_s, "boot_id": boot_id()}
            await self._decide(job, "scheduled", note, **when)
        await asyncio.sleep(wait_s)
        await self._restart(job, earlier)

    async def _fails_the_same_way(self, job: JobInfo, earlier_run: JobInfo | None) -> bool:
        """True (decided, said) when the job's log shows a crash the same argv would repeat."""
        if job.state != "failed":  # a signal, a reboot: nothing in the log to go by
            return False
        cause = await asyncio.to_thread(read_cause, job.log_path)
        if cause is None:
            return False
        before = None
        if cause.kind == "python_error" and earlier_run is not None:
            before = await asyncio.to_thread(read_cause, earlier_run.log_path)
        if not is_deterministic(cause, before):
            return False
        note = cause.note()
        await self._decide(job, "no", note)
        self.announcer.event("restart_not_useful", job.id, f"{_named(job)}: {note}", "error")
        return True

    async def _restart(self, job: JobInfo, earlier: list[float]) -> None:
        """Start the job again, unless the config or a person overruled it while it waited.

        The launch itself refuses a restart of a job that was stopped, or whose line has a newer
        run, under the lock every launch takes: a start by hand can never run beside it.
        """
        files = self.registry.get(job.id)
        if files is None:
            return
        spec = self.box.pipeline.jobs.get(job.name)
        if (why_not := _policy_now(spec)) is not None or spec is None:
            await self._decide(job, "no", why_not)
            return
        lineage = {"restart_of": job.id, "restarts": [*earlier, time.time()]}
        self._launching.add(job.id)  # past its wait: only the launch's own check stops it now
        while True:
            try:
                new = await self.box.launch(launch_params(files), f"restart-{job.id}", lineage)
            except AgentError as exc:
                if exc.code != ErrorCode.GPU_BUSY:
                    await self._decide(job, "no", f"not restarted: {exc.message}")
                    self.announcer.event("restart_refused", job.id, f"{_named(job)} was not "
                                         f"restarted: {exc.message}", "warning")  # fmt: skip
                    return
                await self._decide(job, "scheduled", f"waiting for the GPUs: {exc.message}")
                await self._next_look()
                continue
            break
        await self._decide(job, "restarted", f"restarted as {new.id}", new_job=new.id)
        tail = await asyncio.to_thread(last_lines, Path(job.log_path or ""), TAIL_LINES)
        said = f"; its last output: {' | '.join(tail)}" if tail else ""
        self.announcer.event(
            "job_restarted", job.id,
            f"{_named(job)} restarted as {new.id} after it {_ending(job)} (restart "
            f"{len(earlier) + 1} of {spec.max_restarts} within {_span(spec.restart_window_s)}){said}",
            "warning", exit_code=job.exit_code, new_job=new.id, last_lines=tail,
        )  # fmt: skip

    async def _give_up(self, job: JobInfo, spec: JobSpec, count: int) -> None:
        note = (
            f"gave up: {count} restarts within {_span(spec.restart_window_s)}, and it "
            f"{_ending(job)} again; fix it, then start it (it restarts again after that)"
        )
        await self._decide(job, "gave_up", note)
        self.announcer.event("restart_gave_up", job.id, f"{_named(job)}: {note}", "error")

    async def _wait_for_disk(self, job: JobInfo) -> None:
        """Until the job's folder has the free space the datasets' low-disk floor asks for."""
        folder, said = self._dataset_folder(job), False
        while (await asyncio.to_thread(free_bytes, folder) or 0) < (floor := self._disk_floor()):
            if not said:
                note = f"waiting for {size_text(floor)} free in {folder} (exit 5: a write failed)"
                await self._decide(job, "waiting", note)
                self.announcer.event("restart_waits", job.id, f"{_named(job)} {note}", "warning")
                said = True
            await self._next_look()

    async def _next_look(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._scanned.wait(), RETRY_S)

    def _disk_floor(self) -> int:
        datasets = self.box.pipeline.datasets
        return datasets.low_disk_floor_bytes if datasets is not None else 0

    # ------------------------------------------------------------ records

    async def _decide(self, job: JobInfo, decision: str, note: str | None, **more: Any) -> None:
        record = {"decision": decision, "note": note, "at_time": time.time(), **more}
        files = self.registry.get(job.id)
        if files is not None:
            try:
                await asyncio.to_thread(files.write, RESTART_FILE, record)
            except OSError as exc:
                log.warning("restart decision for %s not written: %s", job.id, exc)
        if decision in FINAL:
            self._final.add(job.id)

    def _decision(self, job_id: str) -> dict[str, Any]:
        files = self.registry.get(job_id)
        return (files.read(RESTART_FILE) if files else None) or {}

    def _earlier_restarts(self, job: JobInfo, window_s: float) -> list[float]:
        files = self.registry.get(job.id)
        found = ((files.read(JOB_FILE) if files else None) or {}).get("restarts")
        times = [t for t in found if isinstance(t, (int, float))] if isinstance(found, list) else []
        return [t for t in times if time.time() - t < window_s]

    def _dataset_folder(self, job: JobInfo) -> Path:
        datasets = self.box.pipeline.datasets
        if datasets is not None and job.dataset:
            return Path(datasets.root) / job.dataset
        return Path(job.cwd or "/")


def scheduled_wait_s(decision: dict[str, Any]) -> float | None:
    """How long a restart recorded as scheduled still waits, whatever the wall clock did.

    On the boot it was scheduled in, by the monotonic clock; else (a reboot, an older record) by
    its wall time. Never past MAX_DELAY_S: a clock stepped back an hour once kept a restart
    away for that hour, or for good.
    """
    monotonic, at, boot = (
        figure(decision.get("at_monotonic")),
        figure(decision.get("at")),
        decision.get("boot_id"),
    )
    if monotonic is not None and isinstance(boot, str) and boot and boot == boot_id():
        left = monotonic - time.monotonic()
    elif at is not None:
        left = at - time.time()
    else:
        return None
    return min(max(0.0, left), MAX_DELAY_S)


def _why_not(job: JobInfo, spec: JobSpec | None) -> str | None:
    """Why the policy does not restart this job ("" when its policy is no), or None when it does."""
    if spec is None:
        return f"not restarted: no job {job.name!r} in the host config any more"
    if spec.restart != "on-failure":
        return ""
    if job.node is not None:
        return (
            "not restarted: one box's part of a job across boxes (torchrun restarts its own "
            "workers; the console starts every part again)"
        )
    if job.exit_code in NO_RETRY:
        return f"not restarted: {NO_RETRY[job.exit_code]}; a retry cannot help"
    ended = job.ended_at
    if job.state != "lost" and ended is not None and time.time() - ended > spec.restart_window_s:
        return "not restarted: it ended before the agent could see it, too long ago"
    return None


def _policy_now(spec: JobSpec | None) -> str | None:
    """Why a restart that waited no longer stands by the config of now, or None.

    Only the policy itself is looked at again: a wait for disk space or the GPUs may outlast the
    restart window, and that was never a reason to drop it.
    """
    if spec is None:
        return "not restarted: its job is no longer in the host config"
    return None if spec.restart == "on-failure" else POLICY_NOW_NO


def _named(job: JobInfo) -> str:
    return f"job {job.name}" + (f" ({job.dataset})" if job.dataset else "")


def _ending(job: JobInfo) -> str:
    if job.state == "lost":
        return "was lost (its processes are gone: a reboot, or a killed shim)"
    if job.exit_signal:
        return f"was killed by {job.exit_signal}"
    return f"exited with code {job.exit_code}"


def _span(seconds: float) -> str:
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    return f"{seconds / 60:g} min" if seconds % 60 == 0 else f"{seconds:g} s"
