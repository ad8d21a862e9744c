"""What the console says of the agent's operations: each finished step once, and how it ended.

Operations reach the console twice (an `operation` event at each step, and every snapshot),
and again after a reconnect; this keeps what was told per operation, so each step is said once
whatever path it came by. An operation already over when the console first sees its host is
history, not news. No Textual here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agent.protocol import OperationInfo, Severity
from console.model.safe_text import sanitise
from console.model.toasts import Toast

END_SEVERITY: dict[str, Severity] = {"done": "info", "rolled_back": "warning", "failed": "error"}
ALERTS_TOLD_HERE = frozenset({"redeploy_failed", "redeploy_rolled_back"})
"""Alerts that repeat an operation's end: its own toast tells it, the alert strip keeps it."""
ENDED_WORDS = {("generate", "done"): "runs started"}
"""An end said in other words than its state: a generate operation is done once its runs have
started, and "generate done" read as the generation finished."""
STEPS_TOLD = ("redeploy", "sequence")
"""Kinds whose steps are told one by one; the others (a start on 40 datasets) only their end."""


@dataclass
class OperationsSeen:
    """The operations of one host told so far, as they were when told."""

    told: dict[str, OperationInfo] = field(default_factory=dict)
    first_look: bool = True

    def heard(self, host: str, operations: Iterable[OperationInfo]) -> list[Toast]:
        """Toasts for what is new in `operations` since they were last told."""
        toasts: list[Toast] = []
        for info in operations:
            before = self.told.get(info.id)
            self.told[info.id] = info
            if before is None and self.first_look:
                continue  # under way or over before this console looked: not news now
            toasts += _news(host, before, info)
        self.first_look = False
        return toasts


def _news(host: str, before: OperationInfo | None, now: OperationInfo) -> list[Toast]:
    """`gpu: redeploy stop done: inference (B3): SIGINT`, ..., `gpu: redeploy done: ...`."""
    name, subject = f"{sanitise(host)}: {now.kind}", sanitise(now.subject)
    toasts = []
    if now.kind in STEPS_TOLD:
        told = {(s.name, s.state) for s in (before.steps if before else ())}
        for step in now.steps:
            if step.state != "running" and (step.name, step.state) not in told:
                level: Severity = "warning" if step.state == "failed" else "info"
                detail = sanitise(step.detail)
                toasts.append(Toast(f"{name} {step.name} {step.state}: {subject}: {detail}", level))
    if now.ended and not (before is not None and before.ended):
        outcome = sanitise(now.outcome)
        said = outcome if outcome.startswith(subject) else f"{subject}: {outcome}"
        state = ENDED_WORDS.get((now.kind, now.state), now.state.replace("_", " "))
        toasts.append(Toast(f"{name} {state}: {said}", END_SEVERITY[now.state]))
    return toasts


def under_way(operations: Iterable[OperationInfo]) -> list[str]:
    """One line per operation not ended: kind, subject and the step it is at."""
    lines = []
    for info in operations:
        if info.ended:
            continue
        step = info.steps[-1] if info.steps else None
        at = f" · {step.name}: {sanitise(step.detail)}" if step else ""
        lines.append(f"{info.kind} of {sanitise(info.subject)}{at}")
    return lines
