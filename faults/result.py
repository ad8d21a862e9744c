"""What one fault scenario reports: Jepsen-style counts, times, and the invariants it broke."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Scale:
    """How hard to push: the full campaign (`make faults`) or the short one inside `make test`."""

    full: bool

    def pick(self, full: int, quick: int) -> int:
        """`full` trials in the full campaign, `quick` in the short one."""
        return full if self.full else quick


@dataclass(slots=True)
class ScenarioResult:
    """One scenario's figures.

    It passes when nothing was lost, duplicated or corrupt, and no invariant it checks was broken.
    """

    name: str
    title: str
    seed: int
    faults: int = 0
    """Faults injected (kills, drops, cuts, hostile inputs...)."""
    attempted: int = 0
    """Operations attempted (records, requests, deploys, connections...)."""
    acknowledged: int = 0
    """Operations the system said were done (a complete line on disk, an answered request...)."""
    lost: int = 0
    duplicated: int = 0
    corrupt: int = 0
    repaired: int = 0
    """Damage found and repaired by the system itself (torn tails moved aside, leftovers removed)."""
    detection_s: list[float] = field(default_factory=list)
    recovery_s: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    """Each broken invariant, in words, with the trial that broke it."""
    notes: list[str] = field(default_factory=list)
    """Other figures worth reading (torn-tail rate, outcome counts...)."""
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Nothing lost, duplicated or corrupt, and no invariant broken."""
        return not self.violations and self.lost == self.duplicated == self.corrupt == 0

    def violate(self, what: str) -> None:
        """Record one broken invariant."""
        self.violations.append(what)


def spread(values: list[float]) -> str:
    """p50 / max of a list of seconds, or a dash when nothing was timed."""
    if not values:
        return "—"
    return f"{statistics.median(values):.2f} / {max(values):.2f} s"
