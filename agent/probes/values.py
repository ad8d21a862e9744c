"""A peer's value taken only if it is what the field holds: a server's JSON is never trusted.

A NaN (json.loads reads one), an infinity, a bool, a string or a list where a count belongs is
a missing figure, never an exception at every refresh (#28).
"""

from __future__ import annotations

import math


def count(value: object, default: int | None = None) -> int | None:
    """A finite number as an int, else `default`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value) if math.isfinite(value) else default


def figure(value: object) -> float | None:
    """A finite number as a float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def text(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None
