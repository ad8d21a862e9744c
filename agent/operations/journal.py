"""Writing an operation's progress down before anything else hears of it.

Every change to a record goes to its file first (so a restarted agent resumes from it), then to
the consoles, and each finished step and the end to the history's timeline. A state folder that
cannot take the write does not stop the operation: the box goes on and the failure is reported
as the state folder's health, as everywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from agent.operations.announce import Announcer
from agent.operations.records import OperationRecord, OperationStore
from agent.protocol import OperationState, StepState

log = logging.getLogger(__name__)

STEP_SEVERITY = {"failed": "warning"}
END_SEVERITY = {"done": "info", "rolled_back": "warning", "failed": "error"}


class Journal:
    """Saves, pushes and records the progress of operations."""

    def __init__(
        self, store: OperationStore, announcer: Announcer, write_failed: Callable[[OSError], None]
    ) -> None:
        self.store = store
        self.announcer = announcer
        self.write_failed = write_failed

    def save(self, record: OperationRecord) -> None:
        """Write the record, then push it to the consoles."""
        try:
            self.store.save(record)
        except OSError as exc:
            log.warning("operation %s: its record could not be written: %s", record.id, exc)
            self.write_failed(exc)
        self.announcer.operation(record.info())

    def step(
        self, record: OperationRecord, name: str, state: StepState, detail: str, save: bool = True
    ) -> None:
        """Set a step, save, and put a finished step on the timeline.

        `save=False` where the caller saves the record now and then itself (a generate's starts).
        """
        record.step(name, state, detail)
        if save:
            self.save(record)
        if state != "running":
            self.announcer.event(
                f"{record.kind}_step", record.subject, f"{record.kind} {name}: {state}: {detail}",
                STEP_SEVERITY.get(state, "info"), operation=record.id,
            )  # fmt: skip

    def phase(self, record: OperationRecord, phase: str) -> None:
        """Move to the next phase (written before it runs)."""
        record.phase = phase
        self.save(record)

    def end(self, record: OperationRecord, state: OperationState, outcome: str) -> None:
        """End the operation, saying how it ended on the timeline and to the webhook."""
        record.end(state, outcome)
        self.save(record)
        self.announcer.event(
            f"{record.kind}_{state}", record.subject, f"{record.kind} {state}: {outcome}",
            END_SEVERITY[state], operation=record.id, asked_by=record.asked_by,
        )  # fmt: skip
