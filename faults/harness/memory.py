"""How much memory a process holds, read from /proc: what a scenario checks stays bounded."""

from __future__ import annotations

import contextlib
import resource
import subprocess
import threading
import time
from pathlib import Path


def resident_mb(pid: int | None, field: str = "VmRSS") -> float:
    """A process's resident memory in MB, or its peak with `field` "VmHWM" (0 when unread)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def own_peak_mb() -> float:
    """This process's peak resident memory in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def watch_peak_mb(process: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Wait for `process` to end (killed past `timeout_s`); its peak resident memory in MB.

    VmHWM is read from /proc as it runs: the peak, so a late read loses nothing.
    """
    peak = 0.0
    status_file = Path(f"/proc/{process.pid}/status")
    deadline = time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        try:
            line = next(x for x in status_file.read_text().splitlines() if x.startswith("VmHWM"))
            peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, StopIteration, ValueError):
            pass
        threading.Event().wait(0.02)
    if process.poll() is None:
        process.kill()
        process.wait()
    return peak
