"""Cleanup for jobs a test left running: tests and fault scenarios share it."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

from agent.host.procfs import is_same_process
from agent.host.signals import kill_group


def kill_leftover_jobs(state_dir: Path) -> None:
    """SIGKILL the process group of every job a test left running (checked by start time).

    A shim record cut short or gone, or a group that ended meanwhile, is passed over: cleanup
    goes on whatever a fault left behind.
    """
    for shim_file in state_dir.glob("jobs/*/shim.json"):
        with contextlib.suppress(ValueError, KeyError, TypeError, OSError):
            record = json.loads(shim_file.read_text())
            if is_same_process(int(record["pid"]), int(record["start_ticks"])):
                kill_group(int(record["pid"]), signal.SIGKILL)
