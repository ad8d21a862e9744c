"""An operation's record: what was asked, the phase it is in, each step, kept on disk.

`<state>/operations/<id>.json`, rewritten atomically before each step and after it, is the
truth about an operation: a restarted agent reads it and goes on from its phase (each phase is
safe to run again), and every snapshot shows it. A file that does not read as a record (torn,
edited, hostile) is skipped with a log line, never trusted. At most KEEP records are kept.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from agent.protocol import (
    OperationInfo,
    OperationKind,
    OperationState,
    OperationStep,
    StepState,
)
from agent.state import read_json, write_json_atomic

log = logging.getLogger(__name__)

FOLDER = "operations"
KEEP = 200
"""Ended records beyond this many, oldest first, are removed."""
MAX_STEPS = 100
"""Steps a record keeps, the latest; its outcome counts them all."""
KINDS: tuple[OperationKind, ...] = get_args(OperationKind)
STATES: tuple[OperationState, ...] = get_args(OperationState)
STEP_STATES: tuple[StepState, ...] = get_args(StepState)


@dataclass
class OperationRecord:
    """One operation as it stands; `phase` names the step to run next ("end" when none)."""

    id: str
    kind: OperationKind
    subject: str
    params: dict[str, Any]
    started_at: float
    asked_by: str | None = None
    phase: str = "begin"
    state: OperationState = "running"
    steps: list[OperationStep] = field(default_factory=list)
    ended_at: float | None = None
    outcome: str = ""
    job_id: str | None = None
    new_job_id: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    """What a phase must remember for the phases after it (files swapped in, their backups)."""

    def info(self) -> OperationInfo:
        """What consoles see of it."""
        return OperationInfo(
            self.id, self.kind, self.subject, self.state, tuple(self.steps), self.started_at,
            self.ended_at, self.asked_by, self.outcome, self.job_id, self.new_job_id,
        )  # fmt: skip

    def step(self, name: str, state: StepState, detail: str) -> None:
        """Set the latest step called `name` (a new one if the last step has another name).

        At most MAX_STEPS are kept, the latest: a generate over 3,000 datasets made each record
        0.64 MB, written again at every step (2 GB in all), and each snapshot carried them.
        """
        now = OperationStep(name, state, detail, time.time())
        if self.steps and self.steps[-1].name == name:
            self.steps[-1] = now
        else:
            self.steps.append(now)
        del self.steps[:-MAX_STEPS]

    def end(self, state: OperationState, outcome: str) -> None:
        """Take no further step."""
        self.phase, self.state, self.outcome, self.ended_at = "end", state, outcome, time.time()

    def to_json(self) -> dict[str, Any]:
        """The record as its file holds it."""
        return {
            "id": self.id, "kind": self.kind, "subject": self.subject, "params": self.params,
            "started_at": self.started_at, "asked_by": self.asked_by, "phase": self.phase,
            "state": self.state, "ended_at": self.ended_at, "outcome": self.outcome,
            "job_id": self.job_id, "new_job_id": self.new_job_id, "notes": self.notes,
            "steps": [[s.name, s.state, s.detail, s.at] for s in self.steps],
        }  # fmt: skip


def new_id(kind: str) -> str:
    """A fresh, sortable id: kind, time, and a random tail."""
    return f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def from_json(value: object) -> OperationRecord:
    """A record from its file's JSON, or ValueError saying what is wrong with it."""
    if not isinstance(value, dict):
        raise ValueError("not an object")
    kind, state = value.get("kind"), value.get("state")
    if kind not in KINDS or state not in STATES:
        raise ValueError(f"kind {kind!r} or state {state!r} is not one the agent writes")
    record = OperationRecord(
        _text(value, "id"), kind, _text(value, "subject"), _object(value, "params"),
        _number(value, "started_at"), _optional_text(value, "asked_by"), _text(value, "phase"),
        state, [_step(item) for item in _list(value, "steps")], _optional_number(value, "ended_at"),
        _text(value, "outcome"), _optional_text(value, "job_id"),
        _optional_text(value, "new_job_id"), _object(value, "notes"),
    )  # fmt: skip
    return record


class OperationStore:
    """The records in `<state>/operations/`."""

    def __init__(self, state_dir: Path) -> None:
        self.folder = state_dir / FOLDER
        self.folder.mkdir(mode=0o700, exist_ok=True)

    def save(self, record: OperationRecord) -> None:
        """Write one record atomically (raises OSError when the state folder cannot take it)."""
        write_json_atomic(self.folder / f"{record.id}.json", record.to_json())

    def load(self) -> list[OperationRecord]:
        """Every record that reads as one, oldest first."""
        records = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                record = from_json(read_json(path))
            except (ValueError, TypeError) as exc:
                log.warning("operation record %s skipped: %s", path.name, exc)
                continue
            if record.id == path.stem:
                records.append(record)
        return records

    def prune(self, records: list[OperationRecord]) -> list[OperationRecord]:
        """Remove the oldest ended records past KEEP; returns those kept."""
        ended = sorted((r for r in records if r.phase == "end"), key=lambda r: r.started_at)
        drop = {r.id for r in ended[: max(0, len(ended) - KEEP)]}
        for record_id in drop:
            (self.folder / f"{record_id}.json").unlink(missing_ok=True)
        return [r for r in records if r.id not in drop]


def _step(item: object) -> OperationStep:
    if not isinstance(item, list) or len(item) != 4 or item[1] not in STEP_STATES:
        raise ValueError(f"step {item!r} is not [name, state, detail, at]")
    name, state, detail, at = item
    if not isinstance(name, str) or not isinstance(detail, str) or not _is_number(at):
        raise ValueError(f"step {item!r} is not [name, state, detail, at]")
    return OperationStep(name, state, detail, float(at))


def _text(value: dict[str, Any], key: str) -> str:
    found = value.get(key)
    if not isinstance(found, str):
        raise ValueError(f"{key} is not text")
    return found


def _optional_text(value: dict[str, Any], key: str) -> str | None:
    found = value.get(key)
    return found if isinstance(found, str) else None


def _number(value: dict[str, Any], key: str) -> float:
    found = _optional_number(value, key)
    if found is None:
        raise ValueError(f"{key} is not a number")
    return found


def _optional_number(value: dict[str, Any], key: str) -> float | None:
    found = value.get(key)
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else None


def _object(value: dict[str, Any], key: str) -> dict[str, Any]:
    found = value.get(key, {})
    if not isinstance(found, dict):
        raise ValueError(f"{key} is not an object")
    return found


def _list(value: dict[str, Any], key: str) -> list[Any]:
    found = value.get(key, [])
    if not isinstance(found, list):
        raise ValueError(f"{key} is not a list")
    return found


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
