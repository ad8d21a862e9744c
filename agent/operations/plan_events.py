"""The hidden-states plan said on the timeline and to the webhook, as the snapshots show it."""

from __future__ import annotations

from agent.datasets.disk_space import size_text
from agent.operations.announce import Announcer
from agent.plans.hidden_states import captured
from agent.protocol import Snapshot


class PlanEvents:
    """The hidden-states plan on the timeline and to the webhook.

    Said once per export it is worked out for, and again whenever whether it fits changes (space
    freed, a larger export).
    """

    def __init__(self, announcer: Announcer) -> None:
        self.announcer = announcer
        self._said: tuple[str, str, bool | None] | None = None

    async def heard(self, snapshot: Snapshot) -> None:
        """Say the plan when it is new or its verdict changed (an observer listener)."""
        plan, export = snapshot.hidden_states_plan, snapshot.export
        if plan is None or plan.fits is None or captured(plan, snapshot.jobs):
            return
        key = (plan.job, export.job_id if export is not None else "", plan.fits)
        if key == self._said:
            return
        self._said = key
        needed, free = size_text(plan.bytes_needed or 0), size_text(plan.bytes_free or 0)
        verdict = "fits" if plan.fits else "does NOT fit: the autopilot will not start it"
        self.announcer.event(
            "hidden_states_plan", plan.job,
            f"hidden states of {plan.job}: {needed} ({plan.note}) to {plan.output}, {free} free: "
            f"{verdict}", "info" if plan.fits else "error",
            bytes_needed=plan.bytes_needed, bytes_free=plan.bytes_free, fits=plan.fits,
        )  # fmt: skip
