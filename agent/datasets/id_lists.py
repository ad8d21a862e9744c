"""The compact id lists (`[5,6,7]`) of a block of lines, checked against JSON's grammar in place.

A runner line is ~25 KB, nearly all of it the id list. The checks JSON makes of it (only digits and
commas, no empty element, no leading zero, no number longer than JSON reads) are done without a
copy of the line: one strspn from the list's start finds its `]` and checks its bytes at once, and
the two needles that break the grammar inside a run of digits and commas (",," and a "0" that
leads a number) are searched once for the whole block with strstr, not once a line. What this
accepts JSON reads as a list of non-negative integers, element for element; anything else
(a space, a sign, a fraction, a long number) is left to the full check, never guessed at.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat

from agent.datasets.byte_scan import CBytes

MAX_TOKEN_ID_DIGITS = 4300
"""The longest integer JSON reads (Python's limit); whether an id is below the vocabulary size
is for the job that knows the vocabulary (vocab refuses an id outside it)."""
ID_BYTES = b"0123456789,"
_COMMA, _ZERO, _CLOSE = ord(","), ord("0"), ord("]")
_HALF_RUN = (MAX_TOKEN_ID_DIGITS + 1) // 2
"""Every run of more digits than JSON reads holds a whole window of this many, aligned anywhere."""


class IdLists:
    """The id lists of one block of bytes, each asked for by where it starts."""

    __slots__ = ("_bytes", "_comma_free", "_faults", "_span", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._bytes = CBytes(data)
        self._span = self._bytes.span
        self._faults: list[int] | None = None
        """Where ",," or a leading "0" sits in the block (anywhere, lists or not), found once."""
        self._comma_free: list[int] | None = None
        """Where the block's windows of _HALF_RUN bytes without a comma start, found once."""

    def end_of(self, start: int) -> int:
        """Where the compact id list that starts at `start` closes (its `]`), else -1.

        -1 means the bytes from `start` are not a list of non-negative integers as JSON writes
        them compactly: a space, any other byte, or a fault of the grammar comes first.
        """
        data = self.data
        close = start + self._span(start, ID_BYTES)
        if close >= len(data) or data[close] != _CLOSE:
            return -1
        if close == start:
            return close
        if _COMMA in (data[start], data[close - 1]):
            return -1  # an empty first or last element
        if data[start] == _ZERO and close > start + 1 and data[start + 1] != _COMMA:
            return -1  # a leading zero in the first
        faults = self._find_faults() if self._faults is None else self._faults
        at = bisect_left(faults, start)
        if at < len(faults) and faults[at] < close:
            return -1  # an empty element or a leading zero inside
        if close - start > MAX_TOKEN_ID_DIGITS and self._long_number(start, close):
            return -1
        return close

    def _long_number(self, start: int, close: int) -> bool:
        """A run of digits in data[start:close] longer than JSON reads.

        Such a run holds a whole window of `_HALF_RUN` bytes, aligned anywhere: the block's
        windows are searched for a comma once (each search answered within a few bytes), and
        only a list that meets a window without one has its runs measured.
        """
        if self._comma_free is None:
            self._comma_free = _comma_free_windows(self.data)
        if not self._comma_free:
            return False
        first = bisect_left(self._comma_free, start - _HALF_RUN + 1)
        last = bisect_left(self._comma_free, close, first)
        return first < last and _long_run(self.data, start, close, self._comma_free[first:last])

    def _find_faults(self) -> list[int]:
        faults = self._all(b",,")
        faults += [at for at in self._all(b",0") if self.data[at + 2 : at + 3].isdigit()]
        self._faults = sorted(faults)
        return self._faults

    def _all(self, needle: bytes) -> list[int]:
        found, at = [], self._bytes.find(needle)
        while at >= 0:
            found.append(at)
            at = self._bytes.find(needle, at + 1)
        return found


def _comma_free_windows(data: bytes) -> list[int]:
    """The starts of the windows of `_HALF_RUN` bytes (aligned on 0) that hold no comma."""
    starts = range(0, len(data) - _HALF_RUN + 1, _HALF_RUN)
    found = map(data.find, repeat(b","), starts, range(_HALF_RUN, len(data) + 1, _HALF_RUN))
    if min(found, default=0) >= 0:
        return []
    return [start for start in starts if data.find(b",", start, start + _HALF_RUN) < 0]


def _long_run(data: bytes, start: int, close: int, windows: list[int]) -> bool:
    """A run of digits longer than JSON reads, through one of the comma-free `windows`.

    data[start:close] holds digits and commas only.
    """
    for window in windows:
        inside = max(window, start)
        before = data.rfind(b",", start, inside) + 1 or start
        after = data.find(b",", inside, close)
        if (close if after < 0 else after) - before > MAX_TOKEN_ID_DIGITS:
            return True
    return False
