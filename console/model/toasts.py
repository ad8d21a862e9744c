"""The toasts a snapshot's new alerts make: one each, or one per kind when many come at once.

When a batch of runs finishes together, a toast per run would bury the screen; they are told
in one toast that names the first few. No Textual here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.protocol import Alert, Severity
from console.model.safe_text import sanitise

GROUP_FROM = 3
"""This many new alerts of one kind in one snapshot become one toast."""
NAMED = 3
"""How many of a group's messages its toast spells out."""


@dataclass(frozen=True, slots=True)
class Toast:
    """One notification: its text and how loud it is."""

    message: str
    severity: Severity


def alert_toasts(host: str, alerts: Sequence[Alert]) -> list[Toast]:
    """One toast per alert, or one per kind for a kind with GROUP_FROM or more, in arrival order."""
    kinds: dict[str, list[Alert]] = {}
    for alert in alerts:
        kinds.setdefault(alert.kind, []).append(alert)
    name = sanitise(host)
    toasts = []
    for kind, group in kinds.items():
        if len(group) < GROUP_FROM:
            toasts += [Toast(f"{name}: {a.message}", a.severity) for a in group]
            continue
        named = "; ".join(a.message for a in group[:NAMED])
        more = f"; and {len(group) - NAMED} more" if len(group) > NAMED else ""
        worst = min((a.severity for a in group), key=("error", "warning", "info").index)
        toasts.append(
            Toast(f"{name}: {len(group)} × {kind.replace('_', ' ')}: {named}{more}", worst)
        )
    return toasts
