"""The autopilot in words: one line for the dashboard, and its stages for the pipeline screen.

No Textual here: the dashboard, the pipeline screen and `eagle-console autopilot` share it.
"""

from __future__ import annotations

from agent.protocol import STAGE_NAMES, AutopilotStatus
from console.model.safe_text import sanitise

STATE_WORDS = {"off": "off", "running": "running", "paused": "PAUSED", "done": "done"}


def autopilot_line(status: AutopilotStatus | None) -> str:
    """One line: `autopilot running · train: train running · next serve · 1 restart`.

    Empty while the autopilot is off.
    """
    if status is None or status.state == "off":
        return ""
    parts = [f"autopilot {STATE_WORDS[status.state]}"]
    if status.state == "done":
        parts.append(sanitise(status.verdict or "every stage is done"))
    elif status.stage:
        waiting = f": {sanitise(status.waiting_for)}" if status.waiting_for else ""
        parts.append(f"{status.stage}{waiting}")
        if status.next_stage:
            parts.append(f"next {status.next_stage}")
    if status.restarts:
        parts.append(f"{status.restarts} restart{'s' if status.restarts != 1 else ''}")
    if status.state == "paused" and status.paused_reason:
        parts.append(sanitise(status.paused_reason))
    return " · ".join(parts)


def stage_rows(status: AutopilotStatus) -> list[tuple[str, str, str, str]]:
    """(stage, state, tries, detail) for every stage, in pipeline order."""
    known = {stage.name: stage for stage in status.stages}
    rows: list[tuple[str, str, str, str]] = []
    for name in STAGE_NAMES:
        stage = known.get(name)
        state: str = stage.state if stage else "pending"
        if status.state == "paused" and name == status.stage:
            state = "paused" if state != "failed" else "failed"
        tries = str(stage.attempts) if stage and stage.attempts else ""
        rows.append((name, state, tries, sanitise(stage.detail) if stage else ""))
    return rows


def plan_text(status: AutopilotStatus) -> str:
    """What starting the autopilot does, for its confirm (and the headless start)."""
    return (
        "The agent runs the remaining stages in order, with no console needed: generate every "
        "dataset to its budget → export (its round trip is a gate) → vocab → free the GPUs "
        "(stop the server) → hidden states → train → serve with the drafter and the baseline → "
        "evaluate → the verdict. Stages already done on current data are taken as done; a stage "
        "with no job configured is skipped. A stage that fails twice pauses it with the reason."
        + ("" if status.state == "off" else f" It is {status.state} now.")
    )
