"""A peer's value taken only if it is what the field holds: a server's JSON is never trusted.

A NaN (json.loads reads one), an infinity, a bool, a string, a list or a negative number where
a count belongs is a missing figure, never an exception at every refresh.
"""

from __future__ import annotations

import math

MAX_COUNT = 1 << 53
"""Past this no count of requests, workers or tokens is real (and a float holds it exactly)."""
MAX_TEXT_CHARS = 4096
"""A model path or a reason this long is not one: it would ride in every snapshot."""
MAX_DIGITS = 18
"""Digits enough for any count; int() refuses 4,300 digits and more."""


def is_small_number(text: str) -> bool:
    """Whether `text` is ASCII digits int() reads as a count.

    "²" and "٣" are digits to str.isdigit, and "²" is an error to int(): a file, a peer or a
    command's output that held one stopped every snapshot.
    """
    return text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS


def count(value: object, default: int | None = None) -> int | None:
    """A finite number from 0 to MAX_COUNT as an int, else `default`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value) if math.isfinite(value) and 0 <= value <= MAX_COUNT else default


def figure(value: object) -> float | None:
    """A finite number as a float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def text(value: object) -> str | None:
    """A non-empty string of at most MAX_TEXT_CHARS, else None."""
    return value if isinstance(value, str) and 0 < len(value) <= MAX_TEXT_CHARS else None
