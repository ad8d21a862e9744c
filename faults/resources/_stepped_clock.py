"""`python -m faults.resources._stepped_clock OFFSET_FILE -m MODULE ARGS...`: run MODULE with a steppable wall clock.

`time.time()` (and `time.time_ns()`) return the real time plus the number of seconds written in
OFFSET_FILE, read again at most every READ_EVERY_S; the monotonic clock is left alone. Several
processes given the same file see the same steps, as processes on one host do when NTP or a VM
resume steps its clock. Only the clock_steps scenario uses it; nothing in the agent knows of it.
"""

from __future__ import annotations

import contextlib
import runpy
import sys
import time
from pathlib import Path

READ_EVERY_S = 0.05


class SteppedWallClock:
    """The real wall clock plus an offset read from a file."""

    def __init__(self, offset_file: Path) -> None:
        self.offset_file = offset_file
        self.real_time, self.real_time_ns, self.monotonic = time.time, time.time_ns, time.monotonic
        self.offset_s, self.read_at = 0.0, -1.0

    def time(self) -> float:
        """Real time plus the offset."""
        now = self.monotonic()
        if now - self.read_at >= READ_EVERY_S:
            self.read_at = now
            with contextlib.suppress(OSError, ValueError):
                self.offset_s = float(self.offset_file.read_text() or 0)
        return self.real_time() + self.offset_s

    def time_ns(self) -> int:
        """time() in nanoseconds."""
        return int(self.time() * 1e9)


def main() -> None:
    """Patch the clock, then run the module as `python -m` would."""
    offset_file, dash_m, module, *args = sys.argv[1:]
    assert dash_m == "-m", (
        "usage: python -m faults.resources._stepped_clock OFFSET_FILE -m MODULE ARGS..."
    )
    clock = SteppedWallClock(Path(offset_file))
    time.time, time.time_ns = clock.time, clock.time_ns
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
