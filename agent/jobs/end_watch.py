"""Knowing the moment a job ends, not at the next scan: a pidfd on each job's shim.

The observer scans every few seconds when nobody watches; a restart policy or the autopilot
acting on a job's end should not wait for that. Each live job's shim (which records the end and
then exits) gets a pidfd in the event loop: readable when the shim is gone, which wakes the
observer at once. The pidfd is opened before the start time is checked, so it can only ever
name the recorded process. Where pidfd_open is missing, nothing is watched and the scans do it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterable

from agent.host.procfs import is_same_process, start_ticks
from agent.protocol import LIVE_JOB_STATES, JobInfo, Snapshot


class EndWatch:
    """Calls `wake` when the shim of any job it watches exits."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self._fds: dict[str, int] = {}

    async def heard(self, snapshot: Snapshot) -> None:
        """Watch every live job of the agent's own (an observer listener)."""
        self.watch(snapshot.jobs)

    def watch(self, jobs: Iterable[JobInfo]) -> None:
        """Watch these jobs' shims, each once."""
        for job in jobs:
            if job.external or job.state not in LIVE_JOB_STATES or job.pgid is None:
                continue
            if job.id not in self._fds:
                self._open(job.id, job.pgid)

    def _open(self, job_id: str, shim_pid: int) -> None:
        ticks = start_ticks(shim_pid)
        try:
            fd = os.pidfd_open(shim_pid)
        except (AttributeError, OSError):  # gone already, or no pidfd here: the scan sees it
            return
        if ticks is None or not is_same_process(shim_pid, ticks):
            os.close(fd)
            return
        self._fds[job_id] = fd
        asyncio.get_running_loop().add_reader(fd, self._ended, job_id)

    def _ended(self, job_id: str) -> None:
        fd = self._fds.pop(job_id, None)
        if fd is not None:
            asyncio.get_running_loop().remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.wake()

    def close(self) -> None:
        """Stop watching (the daemon is stopping)."""
        for job_id in list(self._fds):
            fd = self._fds.pop(job_id)
            with contextlib.suppress(OSError, RuntimeError):
                asyncio.get_running_loop().remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
