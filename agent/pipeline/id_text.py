"""Token ids from their text (`b"5,6,7"`), a block of id lists at a time, at numpy's speed.

The text comes from id lists already checked against JSON's grammar (`response_lines`): digits
and commas, no empty element, no leading zero. numpy's own `fromstring(sep=",")` reads about
50M ids/s; here each id is read as the eight bytes that end at its comma, the bytes before
its first digit cleared, and turned into a number with three multiplications (eight digits
at once, as simdjson does), about twice as fast. An id of more than eight digits (above any
vocabulary) is left to `fromstring`, which reads it as before. numpy is imported inside the
functions: the agent imports this package with the standard library alone.
"""

from __future__ import annotations

import functools
from typing import Any

_PAD = b"0" * 8 + b","
"""Before the first id, so that every id has eight bytes before its end (cleared, not read)."""
_TAIL = b"\0" * 16
"""After the last id, so that the aligned word after any id's word exists."""
_WORD_DIGITS = 8


def parse_ids(text: bytes) -> Any:
    """The ids of a checked id list's text (`b"5,6,7"`, b"" for none) as an int64 numpy array."""
    import numpy as np

    if not text:
        return np.zeros(0, dtype=np.int64)
    padded = _PAD + text + _TAIL
    data = np.frombuffer(padded, dtype=np.uint8, count=len(padded) - len(_TAIL))
    commas = np.flatnonzero(data[_WORD_DIGITS:] == ord(","))  # shifted: an id's end - 8
    starts = np.empty_like(commas)  # where each id's word of eight bytes starts
    starts[:-1], starts[-1] = commas[1:], data.size - _WORD_DIGITS
    lengths = starts - commas - 1
    if int(lengths.max()) > _WORD_DIGITS:
        return np.fromstring(text, dtype=np.int64, sep=",")
    words = _words(padded, starts)
    words &= _keep_masks().take(lengths)
    return _eight_digits(words).view(np.int64)


def _words(padded: bytes, starts: Any) -> Any:
    """The eight bytes from each start, as a little-endian uint64 (`padded` ends in _TAIL).

    Two aligned words, shifted together: a gather from a view of every byte offset would copy
    eight times the text first.
    """
    import numpy as np

    little_endian = np.frombuffer(padded, dtype="<u8", count=len(padded) // 8)
    aligned = little_endian.astype(np.uint64, copy=False)  # a copy on big-endian machines only
    at = starts >> 3
    low, high = aligned.take(at), aligned.take(at + 1)
    shift = starts.view(np.uint64) & np.uint64(7)
    shift <<= np.uint64(3)
    low >>= shift
    high <<= np.subtract(np.uint64(64), shift, out=shift)  # a shift by 64 gives 0
    low |= high
    return low


def _eight_digits(value: Any) -> Any:
    """The numbers eight digits 0-9, one a byte (the first in the lowest), stand for."""
    import numpy as np

    u = np.uint64
    value *= u(2561)  # in place: its digits' bytes hold 0-9 (the ASCII 0x30 cleared)
    value >>= u(8)
    value &= u(0x00FF00FF00FF00FF)
    value *= u(6553601)
    value >>= u(16)
    value &= u(0x0000FFFF0000FFFF)
    value *= u(42949672960001)
    value >>= u(32)
    return value


@functools.cache
def _keep_masks() -> Any:
    """By an id's length: the mask that keeps its digits, the last bytes of its word."""
    import numpy as np

    return np.array(
        [((1 << (8 * n)) - 1) << (8 * (_WORD_DIGITS - n)) for n in range(_WORD_DIGITS + 1)],
        dtype=np.uint64,
    ) & np.uint64(0x0F0F0F0F0F0F0F0F)  # and each digit's low four bits only
