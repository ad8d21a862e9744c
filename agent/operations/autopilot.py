"""The autopilot: the pipeline's remaining stages, moved on by the agent from what it sees.

It listens to the observer's snapshots, asks the current stage what to do (stages.py), and
does it: a job started (with a key made of the run, the stage, the target and the attempt, so
a restarted agent never starts one twice), the server stopped, or on to the next stage. Its
record (`<state>/autopilot.json`) is written before every action. A stage whose job ends badly
is retried once; a second failure, a crash the same argv would repeat (GPU out of memory:
crash_causes.py), a failed gate or a stop on request pauses it with the reason and the command
that resumes it. Every stage's start, end, retry and failure is an
event on the timeline and goes to the webhook.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.errors import AgentError
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.operations.crash_causes import SAME_FAILURE, read_cause
from agent.operations.stages import (
    STAGES,
    Context,
    Decision,
    Done,
    Fail,
    Launch,
    Skip,
    StopJobs,
    Wait,
)
from agent.protocol import (
    AutopilotParams,
    AutopilotStage,
    AutopilotStatus,
    ErrorCode,
    Request,
    Snapshot,
    StageState,
)
from agent.state import read_json, write_json_atomic
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)

FILE_NAME = "autopilot.json"
STAGE_STATES: tuple[StageState, ...] = ("pending", "running", "done", "skipped", "failed")
MAX_ATTEMPTS = 2
"""Starts of one target (a dataset, a stage's job) before its failure pauses the autopilot."""
MAX_QUIET_ATTEMPTS = 5
"""Starts of one target that each ended well yet left it undone: no loop of launches."""
WAIT_CODES = (ErrorCode.GPU_BUSY, ErrorCode.DATASET_BUSY)
"""Refusals that pass by themselves: the stage waits and asks again."""
RESUME = "resume with `eagle-console autopilot HOST resume` or A in the dashboard"


class Autopilot:
    """One autopilot per agent, on or off, and the stage it is at."""

    def __init__(
        self, state_dir: Path, box: Box, announcer: Announcer, tasks: TaskOwner,
        write_failed: Callable[[OSError], None], wake: Callable[[], None],
    ) -> None:  # fmt: skip
        self.path = state_dir / FILE_NAME
        self.box = box
        self.announcer = announcer
        self.tasks = tasks
        """Runs each move: a stop that waits out a grace must not hold up the observer."""
        self.write_failed = write_failed
        self.wake = wake
        """Asks the observer for a snapshot now, so a request is acted on at once."""
        self.record: dict[str, Any] = _loaded(read_json(self.path))
        self._moving: asyncio.Task[None] | None = None
        self._launched: str | None = None
        """The job the last move launched, until a snapshot lists it: one taken before cannot
        show it, and would start the stage's job again."""

    # ------------------------------------------------------------ requests

    async def control(self, request: Request[AutopilotParams], asked_by: str) -> AutopilotStatus:
        """Start, pause or resume; answers where it stands then."""
        action, state = request.params.action, self.record["state"]
        if action == "resume" and state in ("off", "done"):
            raise AgentError(ErrorCode.INVALID_PARAMS, f"the autopilot is {state}: start it")
        if action in ("start", "resume") and state == "paused":
            self._resume(asked_by)
        elif action == "start" and state != "running":
            self.record = _fresh(asked_by)
            self._save()
            self._said("autopilot_started", f"autopilot started by {asked_by}")
        elif action == "pause" and state == "running":
            self._pause(f"paused by {asked_by}; {RESUME}")
        self.wake()
        return self.status(None)

    def _resume(self, asked_by: str) -> None:
        current = _current(self.record)
        if current is not None:
            self._stage(current).update(state="running", detail="")
        rounds = int(self.record.get("round", 0)) + 1  # a resume's starts get keys of their own
        self.record.update(state="running", paused_reason=None, attempts={}, round=rounds)
        self._save()
        self._said("autopilot_resumed", f"autopilot resumed by {asked_by}")

    def status(self, snapshot: Snapshot | None) -> AutopilotStatus:
        """Where it stands (safe from the snapshot's thread)."""
        record = dict(self.record)
        if record["state"] == "off":
            return AutopilotStatus("off")
        stages = record.get("stages", {})
        return AutopilotStatus(
            record["state"],
            tuple(AutopilotStage(name, *_stage_fields(stages.get(name))) for name, _ in STAGES),
            _current(record), record.get("waiting_for", ""),
            _restarts_since(snapshot, record.get("started_at") or 0.0),
            record.get("started_at"), record.get("paused_reason"), record.get("verdict"),
        )  # fmt: skip

    # ------------------------------------------------------------ moving on

    async def heard(self, snapshot: Snapshot) -> None:
        """Move the current stage on from this snapshot (an observer listener; never waits).

        One move at a time: a snapshot that comes while one is under way is passed over (the
        observer scans again as soon as a job changes).
        """
        if self.record["state"] != "running":
            return
        if self._moving is not None and not self._moving.done():
            return
        if self._launched is not None:
            if all(job.id != self._launched for job in snapshot.jobs):
                return  # the launch's job event, or the next idle scan, brings one that does
            self._launched = None
        self._moving = self.tasks.spawn(self._advance(snapshot), "autopilot move")

    async def _advance(self, snapshot: Snapshot) -> None:
        while self.record["state"] == "running":
            index = int(self.record.get("index", 0))
            if index >= len(STAGES):
                self._finish()
                return
            name, stage = STAGES[index]
            decision = stage(self._context(snapshot))
            if not await self._apply(name, decision):
                return

    async def _apply(self, name: str, decision: Decision) -> bool:
        """Act on one decision; True when the next stage may be looked at at once."""
        self._enter(name)
        if isinstance(decision, (Done, Skip)):
            self._settle(name, decision)
            return True
        if isinstance(decision, Wait):
            self._waiting(decision.detail)
        elif isinstance(decision, Fail):
            self._fail(name, decision.reason)
        elif isinstance(decision, Launch):
            await self._launch(name, decision)
        elif isinstance(decision, StopJobs):
            await self._stop(decision)
        return False

    def _enter(self, name: str) -> None:
        stage = self._stage(name)
        if stage.get("state") in (None, "pending"):
            stage.update(state="running", since=time.time())
            self._save()
            self._said("autopilot_stage_started", f"stage {name} started", subject=name)

    def _settle(self, name: str, decision: Done | Skip) -> None:
        done = isinstance(decision, Done)
        self._stage(name).update(state="done" if done else "skipped", detail=decision.detail)
        if isinstance(decision, Done):
            self.record["fresh_after"] = decision.done_at
        self.record["index"] = int(self.record.get("index", 0)) + 1
        self.record["waiting_for"] = ""
        self._save()
        word = "done" if done else "skipped"
        self._said(
            f"autopilot_stage_{word}", f"stage {name} {word}: {decision.detail}", subject=name
        )

    async def _launch(self, name: str, decision: Launch) -> None:
        attempts = self.record.setdefault("attempts", {})
        key = f"{name}/{decision.target}"
        tries = attempts.get(key, 0)
        if decision.failed_before is not None and tries >= MAX_ATTEMPTS:
            self._fail(name, f"{decision.failed_before}; it failed {tries} times")
            return
        if (repeats := await _out_of_memory(decision)) is not None:
            self._fail(name, repeats)  # the same argv fails the same way: no retry
            return
        if tries >= MAX_QUIET_ATTEMPTS:
            self._fail(name, f"{decision.detail}: started {tries} times, and still not done")
            return
        attempts[key] = attempts.get(key, 0) + 1
        self._stage(name)["attempts"] = self._stage(name).get("attempts", 0) + 1
        self._waiting(decision.detail)
        if decision.failed_before is not None:
            self._said("autopilot_retry", f"stage {name}: {decision.failed_before}; trying once "
                       "more", "warning", subject=name)  # fmt: skip
        launch_key = (
            f"autopilot-{self.record['run']}-{self.record.get('round', 0)}-{key}-{attempts[key]}"
        )
        try:
            self._launched = (await self.box.launch(decision.params, launch_key)).id
        except AgentError as exc:
            attempts[key] -= 1  # not started: this try does not count
            if exc.code in WAIT_CODES:
                self._waiting(exc.message)
                return
            self._fail(name, f"{decision.detail} was refused: {exc.message}")

    async def _stop(self, decision: StopJobs) -> None:
        self._waiting(decision.detail)
        for job_id in decision.job_ids:
            try:
                await self.box.stop(job_id)
            except AgentError as exc:
                log.warning("autopilot: stopping %s failed: %s", job_id, exc.message)

    # ------------------------------------------------------------ record

    def _fail(self, name: str, reason: str) -> None:
        self._stage(name).update(state="failed", detail=reason)
        self._pause(f"stage {name} failed: {reason}; {RESUME}")

    def _pause(self, reason: str) -> None:
        self.record.update(state="paused", paused_reason=reason, waiting_for="")
        self._save()
        self._said("autopilot_paused", reason, "error" if "failed" in reason else "warning")

    def _finish(self) -> None:
        stages = self.record.get("stages", {})
        verdict = str(stages.get("evaluate", {}).get("detail") or "every stage is done")
        self.record.update(state="done", verdict=verdict, waiting_for="")
        self._save()
        self._said("autopilot_done", f"autopilot done: {verdict}", "warning")

    def _waiting(self, detail: str) -> None:
        if self.record.get("waiting_for") != detail:
            self.record["waiting_for"] = detail
            self._save()

    def _stage(self, name: str) -> dict[str, Any]:
        stage: dict[str, Any] = self.record.setdefault("stages", {}).setdefault(name, {})
        return stage

    def _context(self, snapshot: Snapshot) -> Context:
        return Context(
            snapshot, self.box.pipeline, float(self.record.get("fresh_after") or 0.0),
            float(self.record.get("started_at") or 0.0),
        )  # fmt: skip

    def _said(self, kind: str, message: str, severity: str = "info", subject: str = "") -> None:
        self.announcer.event(kind, subject or "autopilot", message, severity)

    def _save(self) -> None:
        try:
            write_json_atomic(self.path, self.record)
        except OSError as exc:
            log.warning("autopilot record not written: %s", exc)
            self.write_failed(exc)


def _fresh(asked_by: str) -> dict[str, Any]:
    now = time.time()
    return {
        "state": "running", "run": time.strftime("%Y%m%d-%H%M%S"), "started_at": now,
        "asked_by": asked_by, "index": 0, "stages": {}, "attempts": {}, "fresh_after": 0.0,
        "waiting_for": "", "paused_reason": None, "verdict": None,
    }  # fmt: skip


RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "run": (str,), "started_at": (int, float), "asked_by": (str,), "index": (int,),
    "round": (int,), "stages": (dict,), "attempts": (dict,), "fresh_after": (int, float),
    "waiting_for": (str,), "paused_reason": (str, type(None)), "verdict": (str, type(None)),
}  # fmt: skip
"""What each field of a saved record holds; a record with another is not read."""


def _loaded(value: object) -> dict[str, Any]:
    """The saved record when it reads as one; off otherwise (a hostile file starts nothing).

    Every field is checked, inside the stages and attempts too: one wrong-typed field once made
    both resume and start fail until the file was deleted by hand. Off, `start` works.
    """
    if not isinstance(value, dict) or value.get("state") not in ("running", "paused", "done"):
        return {"state": "off"}
    fields_fit = all(
        name not in value or (type(value[name]) is not bool and isinstance(value[name], kinds))
        for name, kinds in RECORD_FIELDS.items()
    )
    if not fields_fit or not 0 <= value.get("index", 0) <= len(STAGES):
        return {"state": "off"}
    stages, attempts = value.get("stages", {}), value.get("attempts", {})
    if not all(_stage_reads(stage) for stage in stages.values()):
        return {"state": "off"}
    return value if all(_count(count) for count in attempts.values()) else {"state": "off"}


def _stage_reads(stage: object) -> bool:
    """A saved stage: a known state, a text detail and a count of attempts, where it has them."""
    return (
        isinstance(stage, dict)
        and _count(stage.get("attempts", 0))
        and stage.get("state", "pending") in STAGE_STATES
        and isinstance(stage.get("detail", ""), (str, type(None)))
    )


def _count(value: object) -> bool:
    return type(value) is int and 0 <= value <= 1_000_000


def _current(record: dict[str, Any]) -> str | None:
    index = int(record.get("index", 0))
    if record["state"] in ("off", "done") or index >= len(STAGES):
        return None
    return STAGES[index][0]


def _stage_fields(stage: object) -> tuple[StageState, str, int]:
    if not isinstance(stage, dict):
        return "pending", "", 0
    state = stage.get("state")
    known: dict[Any, StageState] = {s: s for s in STAGE_STATES}
    attempts = stage.get("attempts")
    return (
        known.get(state, "pending"),
        str(stage.get("detail") or ""),
        attempts if isinstance(attempts, int) else 0,
    )


def _restarts_since(snapshot: Snapshot | None, since: float) -> int:
    if snapshot is None:
        return 0
    return sum(1 for job in snapshot.jobs if job.restart_of and (job.started_at or 0) >= since)


async def _out_of_memory(decision: Launch) -> str | None:
    """Why the last try's GPU ran out of memory, which the same argv repeats; else None."""
    failed = decision.failed_before
    if failed is None:
        return None
    if SAME_FAILURE in failed:  # the restart policy read its log first
        return failed
    cause = await asyncio.to_thread(read_cause, decision.failed_log)
    return f"{failed}; {cause.note()}" if cause and cause.kind == "out_of_memory" else None
