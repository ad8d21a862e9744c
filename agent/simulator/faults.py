"""Faults the simulator injects on demand: errors, latency spikes, hangs, outages and a crash.

Set at start from flags, and changed while running through `POST /admin/faults` (the simulator's
own endpoint; a real SGLang has none).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Faults:
    """What goes wrong, and how often."""

    error_rate: float = 0.0
    """Share of /generate requests answered with HTTP 500."""
    spike_rate: float = 0.0
    """Share of requests delayed by `spike_s` (simulated seconds) before they start."""
    spike_s: float = 5.0
    hang_rate: float = 0.0
    """Share of requests that never answer."""
    die_after_requests: int = 0
    """Exit the process after this many /generate requests (0: never)."""
    refuse_for_s: float = 0.0
    """Refuse connections for this many simulated seconds, starting now (admin endpoint only)."""

    def updated(self, changes: dict[str, Any]) -> Faults:
        """A copy with `changes` applied; unknown names or wrong types raise ValueError."""
        known = {f.name for f in fields(self)}
        for name, value in changes.items():
            if name not in known:
                raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(known))}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"fault {name} must be a non-negative number, got {value!r}")
        return replace(self, **changes)


class FaultDice:
    """Seeded draws, so a faulty run is as repeatable as a clean one."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed ^ 0x5EED)

    def hits(self, rate: float) -> bool:
        """True with probability `rate`."""
        return rate > 0 and self._rng.random() < rate
