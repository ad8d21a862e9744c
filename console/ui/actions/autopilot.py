"""A: the autopilot, started, paused or resumed on the host on display after a confirm.

The agent runs it; this only asks. What it says while it runs comes back in every snapshot
(the datasets panel's line, the pipeline screen) and its stages as events.
"""

from __future__ import annotations

import secrets

from agent.protocol import AUTOPILOT_CONTROL, AutopilotAction, AutopilotParams, AutopilotStatus
from console.link.agent_link import LinkError
from console.model.autopilot_view import autopilot_line, plan_text
from console.ui.actions.base import HostActions
from console.ui.intents import AutopilotRequested
from console.ui.screens.confirm import ConfirmScreen

CONFIRMS: dict[str, tuple[AutopilotAction, str, str]] = {
    "off": ("start", "Start the autopilot?", "Start"),
    "done": ("start", "Run the autopilot again?", "Start"),
    "running": ("pause", "Pause the autopilot?", "Pause"),
    "paused": ("resume", "Resume the autopilot?", "Resume"),
}
"""For each state the autopilot is in: what A asks to do, the confirm's title and button."""


class AutopilotActions(HostActions):
    """Start, pause and resume the agent's autopilot."""

    def toggle(self, intent: AutopilotRequested) -> None:
        """Confirm, then ask the agent: start when off or done, pause it running, resume it paused."""
        host = intent.host
        if self.mutable_link(host) is None:
            return
        snapshot = self.snapshot(host)
        status = snapshot.autopilot if snapshot and snapshot.autopilot else AutopilotStatus("off")
        action, title, button = CONFIRMS[status.state]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(self._ask(host, action), f"the autopilot's {action}")

        _ = self.app.push_screen(ConfirmScreen(title, _text(action, status), button), confirmed)

    async def _ask(self, host: str, action: AutopilotAction) -> None:
        link = self.mutable_link(host)
        if link is None:
            return
        key = f"autopilot-{action}-{secrets.token_hex(6)}"
        try:
            status = await link.call(
                AUTOPILOT_CONTROL, AutopilotParams(action), idempotency_key=key
            )
        except LinkError as exc:
            self.app.notify(str(exc), severity="error")
            return
        self.app.notify(f"{host}: {autopilot_line(status)}")


def _text(action: AutopilotAction, status: AutopilotStatus) -> str:
    if action == "start":
        return plan_text(status)
    if action == "pause":
        return (
            f"{autopilot_line(status)}\nPausing starts nothing more; jobs running now keep "
            "running. Resume with A (or `eagle-console autopilot HOST resume`)."
        )
    return f"{autopilot_line(status)}\nResuming goes on from the stage it paused at."
