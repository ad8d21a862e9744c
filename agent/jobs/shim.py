"""`python -m agent shim --job-dir DIR`: run one job and record how it ended.

The daemon starts the shim in a new session, so the shim leads the job's process group and the
job stays in it. The shim ignores the stop signals sent to the group (it must outlive the job to
record its end) but the job gets default handlers, because Python handlers do not survive exec.
The exit code or signal is written atomically to `exit.json`; a SIGKILL to the group takes the
shim too, and then whoever sent it records the end. The shim is a child subreaper: a worker the
job double-forks or that leaves the group with setsid stays below it, where a stop finds it, and
whatever the job leaves running when its main process ends is ended before the end is recorded.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent.host.procfs import boot_id, descendants, group_members, start_ticks
from agent.host.signals import kill_process
from agent.jobs.exit_reason import exit_reason
from agent.jobs.registry import CHILD_FILE, EXIT_FILE, JOB_FILE, MARK_ENV, JobFiles
from agent.logs import reason_text

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2)  # fmt: skip
"""Every stop signal a job may configure but SIGKILL: the shim outlives them to record the end."""
LEFTOVER_GRACE_S = 5.0
"""How long the processes a job left running get after SIGTERM, before SIGKILL."""
LEFTOVER_POLL_S = 0.05
EXIT_UNRECORDED = 75
"""The job's pid or end could not be recorded (a full state folder); a job not yet ended was
killed at once, so none runs that the agent cannot find."""


def _become_subreaper() -> None:
    """Orphans of the job re-parent to the shim, not to init, so a stop still finds them."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_shim(job_dir: Path) -> int:
    """Run the job described in `job_dir/job.json` to its end."""
    files = JobFiles(job_dir)
    job = files.read(JOB_FILE)
    if job is None:
        print(f"shim: no {JOB_FILE} in {job_dir}", file=sys.stderr)  # noqa: T201
        return 2
    for signum in STOP_SIGNALS:  # a handler, not SIG_IGN: exec gives the job the defaults back
        signal.signal(signum, lambda *_: None)
    _become_subreaper()
    try:
        child = subprocess.Popen(
            job["argv"], cwd=job.get("cwd") or None, env=_job_env(job),
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except OSError as exc:
        reason = f"cannot start {job['argv'][0]!r}: {exc.strerror}"
        print(f"shim: {reason}", file=sys.stderr, flush=True)  # noqa: T201
        files.write(EXIT_FILE, {"exit_code": 127, "exit_signal": None, "ended_at": time.time(),
                                "reason": reason_text(reason)})  # fmt: skip
        return 127
    try:
        files.write(
            CHILD_FILE,
            {"pid": child.pid, "start_ticks": start_ticks(child.pid), "boot_id": boot_id()},
        )
    except OSError as exc:
        return _stop_unrecorded(child, exc)
    code = child.wait()
    signal_name = signal.Signals(-code).name if code < 0 else None
    ended: dict[str, object] = {
        "exit_code": code if code >= 0 else None,
        "exit_signal": signal_name,
    }
    if code > 0:  # its last words, before anything the shim says about leftovers
        ended["reason"] = exit_reason(files.log)
    left = end_leftovers()
    if left:
        ended["leftovers_ended"] = left
        _say(f"shim: the job's main process ended; ended {left} process(es) it left running")
    try:
        files.write(EXIT_FILE, {**ended, "ended_at": time.time()})
    except OSError as exc:
        _say(f"shim: the job ended ({ended}) but {exc.filename} cannot be written: {exc.strerror}")
        return EXIT_UNRECORDED
    return 0


def _mark(job: dict[str, object]) -> str | None:
    mark = job.get("mark")
    return mark if isinstance(mark, str) and mark else None


def _job_env(job: dict[str, Any]) -> dict[str, str]:
    """The job's environment: ours, its configured env, and the mark its processes inherit."""
    mark = _mark(job)
    return {**os.environ, **job.get("env", {}), **({MARK_ENV: mark} if mark else {})}


def end_leftovers() -> int:
    """End what the job left running once its main process ended; returns how many there were.

    A worker that stayed in the job's group, or left it with setsid and so re-parented to the
    shim, would otherwise outlive the job unseen: once the shim records the end, no stop can
    prove such a process is the job's. They get SIGTERM, LEFTOVER_GRACE_S, then SIGKILL.
    """
    left = _leftovers()
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            kill_process(pid, signal.SIGTERM)
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while _leftovers() and time.monotonic() < deadline:
        _reap_orphans()
        time.sleep(LEFTOVER_POLL_S)
    for pid in _leftovers():
        with contextlib.suppress(ProcessLookupError):
            kill_process(pid, signal.SIGKILL)
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while _leftovers() and time.monotonic() < deadline:  # SIGKILL ends a process at once
        _reap_orphans()
        time.sleep(LEFTOVER_POLL_S)
    _reap_orphans()
    return len(left)


def _leftovers() -> list[int]:
    """Live processes of the job's group but the shim, and everything re-parented below it.

    The shim is alive here and a child subreaper: nothing the job started can be elsewhere, so
    the job's mark (for a stop after the shim is gone) need not be read.
    """
    me = os.getpid()
    below = {info.pid for info in descendants(me)}
    in_group = {info.pid for info in group_members(os.getpgid(0))}
    return sorted((below | in_group) - {me})


def _reap_orphans() -> None:
    """Wait for the shim's ended children (orphans re-parented to it), so none stays a zombie."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _stop_unrecorded(child: subprocess.Popen[bytes], error: OSError) -> int:
    """A job the agent could not find again is not left running: kill it and all below, say why."""
    for process in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            kill_process(process.pid, signal.SIGKILL)
    child.wait()
    _say(
        f"shim: stopped the job at once: cannot record its pid in {error.filename}: "
        f"{error.strerror}; free space in the agent's state folder and launch it again"
    )
    return EXIT_UNRECORDED


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # the log may sit on the same full disk
        print(line, file=sys.stderr, flush=True)  # noqa: T201
