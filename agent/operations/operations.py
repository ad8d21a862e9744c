"""The operations under way and lately ended: asked for by consoles, run to their end here.

A request is checked before anything is recorded (nothing stops for a redeploy whose uploads
cannot be installed), then its record is written and its run spawned on the daemon's own task
owner, so the console that asked may leave at any moment. A daemon that starts finds the
records still running and resumes each from its phase.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from agent.errors import AgentError
from agent.files import FileError, Roots
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.operations.generate import Generate
from agent.operations.journal import Journal
from agent.operations.records import OperationRecord, OperationStore, new_id
from agent.operations.redeploy import Redeploy
from agent.operations.sequence import Sequence
from agent.operations.staged_files import check_uploads
from agent.operations.sweep import Sweep
from agent.plans.draft_settings import setting_argv, setting_name
from agent.probes.pipeline_reports import out_dir
from agent.protocol import (
    LIVE_JOB_STATES,
    Alert,
    ErrorCode,
    GenerateParams,
    JobInfo,
    OperationInfo,
    OperationsList,
    OperationsParams,
    RedeployParams,
    Request,
    SequenceParams,
    SweepParams,
    to_wire,
)
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)

RECENT_S = 3600.0
"""Ended operations stay in snapshots (and their failures in alerts) this long."""
KEY_NOTE = "idempotency_key"
"""The note an operation's record keeps its request's key in."""
SHOWN_IN_SNAPSHOT = 50
"""The most operations a snapshot carries: those under way, then the latest ended (700 made
every snapshot line 263 KB); `operations.list` still answers with every recent one."""


class Operations:
    """Every operation record of this agent, and the tasks running those not ended."""

    def __init__(
        self, state_dir: Path, box: Box, announcer: Announcer, tasks: TaskOwner,
        write_failed: Callable[[OSError], None],
    ) -> None:  # fmt: skip
        self.box = box
        self.tasks = tasks
        self.store = OperationStore(state_dir)
        self.journal = Journal(self.store, announcer, write_failed)
        self._records: dict[str, OperationRecord] = {}

    def resume(self) -> None:
        """Load the records and run on those a previous daemon left under way."""
        for record in self.store.prune(self.store.load()):
            self._records[record.id] = record
            if record.phase != "end":
                log.info("resuming operation %s at phase %s", record.id, record.phase)
                self._spawn(record)

    # ------------------------------------------------------------ requests

    async def redeploy(self, request: Request[RedeployParams], asked_by: str) -> OperationInfo:
        """Check the job and the uploads, record the redeploy and run it."""
        if (known := self._asked_before(request, "redeploy")) is not None:
            return known
        params = request.params
        job = await self.box.own_job(params.job_id)
        if job is None or job.external:
            raise AgentError(ErrorCode.NOT_FOUND, f"no job {params.job_id!r} of the agent's own")
        if job.node is not None:
            raise AgentError(ErrorCode.INVALID_PARAMS, (
                f"{job.name} is node {job.node.rank} of a job across {job.node.nnodes} boxes: a "
                "redeploy would start this box's part alone, into a rendezvous the others have "
                "left; deploy the code, then stop it and start it again from the console"
            ))  # fmt: skip
        self._refuse_if_busy(job)
        try:
            await asyncio.to_thread(check_uploads, self._roots(), params.files)
        except FileError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, f"{exc}; nothing was stopped") from None
        record = OperationRecord(
            new_id("redeploy"), "redeploy", _subject(job), to_wire(params), time.time(), asked_by,
            job_id=job.id,
            notes={"was_running": job.state in LIVE_JOB_STATES, "argv": list(job.argv)},
        )  # fmt: skip
        return self._begin(record, request.idempotency_key)

    async def generate(self, request: Request[GenerateParams], asked_by: str) -> OperationInfo:
        """Record a start of `job` on many datasets and run it."""
        if (known := self._asked_before(request, "generate")) is not None:
            return known
        params = request.params
        if params.job not in self.box.pipeline.jobs:
            raise AgentError(ErrorCode.NOT_FOUND, f"no job {params.job!r} in the host config")
        if not params.datasets:
            raise AgentError(ErrorCode.INVALID_PARAMS, "no dataset to start it on")
        subject = f"{params.job} on {len(params.datasets)} dataset(s)"
        record = OperationRecord(
            new_id("generate"), "generate", subject, to_wire(params), time.time(), asked_by
        )
        return self._begin(record, request.idempotency_key)

    async def sequence(self, request: Request[SequenceParams], asked_by: str) -> OperationInfo:
        """Record steps to take in order (a GPU hand-over, B) and run them."""
        if (known := self._asked_before(request, "sequence")) is not None:
            return known
        params = request.params
        for step in params.steps:
            if step.action == "start" and step.job not in self.box.pipeline.jobs:
                raise AgentError(ErrorCode.NOT_FOUND, f"no job {step.job!r} in the host config")
            if step.action == "stop" and not step.job_id:
                raise AgentError(ErrorCode.INVALID_PARAMS, "a stop step needs the job's id")
        record = OperationRecord(
            new_id("sequence"), "sequence", params.subject[:200], to_wire(params), time.time(),
            asked_by,
        )  # fmt: skip
        return self._begin(record, request.idempotency_key)

    async def sweep(self, request: Request[SweepParams], asked_by: str) -> OperationInfo:
        """Check the jobs and every setting, record the sweep and run it."""
        if (known := self._asked_before(request, "sweep")) is not None:
            return known
        params = request.params
        jobs = self.box.pipeline.jobs
        for name, kind in (
            (params.server_job, "drafter_server"),
            (params.evaluate_job, "evaluate"),
        ):
            if name not in jobs or jobs[name].kind != kind:
                raise AgentError(ErrorCode.NOT_FOUND, f"no {kind} job {name!r} in the host config")
        if out_dir(jobs[params.evaluate_job].argv) is None:
            raise AgentError(ErrorCode.INVALID_PARAMS, (
                f"the evaluate job {params.evaluate_job} has no --out: the sweep measures each "
                "setting into a folder under it"
            ))  # fmt: skip
        for setting in params.settings:
            try:
                setting_argv(jobs[params.server_job].argv, setting)
            except ValueError as exc:
                raise AgentError(
                    ErrorCode.INVALID_PARAMS, f"{setting_name(setting)}: {exc}"
                ) from None
        running = [j for j in (await self.box.fresh_snapshot()).jobs if j.name == params.server_job
                   and j.state in LIVE_JOB_STATES]  # fmt: skip
        if running:
            raise AgentError(ErrorCode.OPERATION_BUSY, (
                f"{params.server_job} runs ({running[0].id}): stop it first, the sweep starts it "
                "at each setting itself"
            ))  # fmt: skip
        subject = f"{params.server_job} at {len(params.settings)} draft setting(s)"
        record = OperationRecord(new_id("sweep"), "sweep", subject, to_wire(params), time.time(),
                                 asked_by)  # fmt: skip
        return self._begin(record, request.idempotency_key)

    async def listing(self, request: Request[OperationsParams]) -> OperationsList:
        """One operation, or every one recorded lately."""
        wanted = request.params.operation_id
        if wanted is None:
            return OperationsList(self.recent(time.time()))
        record = self._records.get(wanted)
        if record is None:
            raise AgentError(ErrorCode.NOT_FOUND, f"no operation {wanted!r}")
        return OperationsList((record.info(),))

    # ------------------------------------------------------------ what others ask

    def recent(self, now: float, limit: int | None = None) -> tuple[OperationInfo, ...]:
        """Operations under way and those ended within RECENT_S (safe from any thread).

        With a `limit`, at most that many: those under way, then the latest ended.
        """
        kept = [
            record
            for record in list(self._records.values())
            if record.ended_at is None or now - record.ended_at < RECENT_S
        ]
        if limit is not None and len(kept) > limit:
            first = sorted(kept, key=lambda r: (r.ended_at is None, r.started_at), reverse=True)
            chosen = {record.id for record in first[:limit]}
            kept = [record for record in kept if record.id in chosen]
        return tuple(record.info() for record in kept)

    def alerts(self, now: float) -> list[Alert]:
        """A redeploy that left its run stopped is an error; one rolled back, a warning."""
        alerts = []
        for info in self.recent(now):
            if info.state == "failed" and info.kind == "redeploy":
                alerts.append(Alert("redeploy_failed", "error", info.outcome, info.subject,
                                    info.ended_at or now))  # fmt: skip
            elif info.state == "rolled_back":
                alerts.append(Alert("redeploy_rolled_back", "warning", info.outcome,
                                    info.subject, info.ended_at or now))  # fmt: skip
        return alerts

    def staged_paths(self) -> set[str]:
        """Uploads that operations under way will still swap in: not stale, whatever their age."""
        staged: set[str] = set()
        for record in list(self._records.values()):
            if record.kind == "redeploy" and record.phase != "end":
                staged.update(_staged_paths(record.params.get("files")))
        return staged

    def handles_end_of(self, job_id: str) -> bool:
        """True when a redeploy decides what follows this job's end (not its restart policy)."""
        return any(
            record.new_job_id == job_id and (record.phase != "end" or record.state != "done")
            for record in list(self._records.values())
        )

    # ------------------------------------------------------------ running

    def _refuse_if_busy(self, job: JobInfo) -> None:
        for record in self._records.values():
            if record.phase != "end" and job.id in (record.job_id, record.new_job_id):
                raise AgentError(
                    ErrorCode.OPERATION_BUSY,
                    f"{record.kind} {record.id} is under way on {job.id}; wait for it to end",
                )

    def _asked_before(self, request: Request[object], kind: str) -> OperationInfo | None:
        """The operation a retried key already began, though its answer was never kept.

        The agent killed between an operation's record and the kept answer to its request left
        the retry free to begin a second one (2 of 2 trials): the key is in the record.
        """
        key = request.idempotency_key
        for record in list(self._records.values()) if key else ():
            if record.kind == kind and record.notes.get(KEY_NOTE) == key:
                return record.info()
        return None

    def _begin(self, record: OperationRecord, key: str | None = None) -> OperationInfo:
        """Write the record down first, then run it: an operation not kept is not run."""
        if key:
            record.notes[KEY_NOTE] = key
        try:
            self.store.save(record)
        except OSError as exc:
            raise AgentError(
                ErrorCode.STORAGE,
                f"cannot record the {record.kind} in {self.store.folder}: {exc.strerror}; "
                "nothing was done (an operation whose steps cannot be kept is not run). Free "
                "space there and retry",
            ) from None
        self._records[record.id] = record
        self._records = {kept.id: kept for kept in self.store.prune(list(self._records.values()))}
        self._spawn(record)
        return record.info()

    def _spawn(self, record: OperationRecord) -> None:
        _ = self.tasks.spawn(self._run(record), f"operation {record.id}")

    async def _run(self, record: OperationRecord) -> None:
        try:
            steps = self._steps(record)
        except (ValueError, TypeError) as exc:  # the wire decoder raises a ValueError
            self.journal.end(record, "failed", (
                f"its record ({self.store.folder / record.id}.json) holds what this agent does not "
                f"read ({exc}): it was written by another version or edited. Nothing was done; "
                "check the job and ask again"
            ))  # fmt: skip
            return
        try:
            await steps.run()
        except asyncio.CancelledError:
            raise  # the daemon is stopping: the record stays where it is, and is resumed
        except Exception as exc:
            log.exception("operation %s failed inside the agent", record.id)
            self.journal.end(record, "failed", f"failed inside the agent: {exc!r}; see agent.log")

    def _steps(self, record: OperationRecord) -> Redeploy | Generate | Sequence | Sweep:
        """The steps of a record; raises when its params are not of this agent's shape.

        Raised outside the run, a record of an older shape left its task dead and the record
        "running" forever, refusing every redeploy of its job (operation_busy).
        """
        if record.kind == "redeploy":
            return Redeploy(record, self.box, self.journal, self._roots)
        if record.kind == "sequence":
            return Sequence(record, self.box, self.journal)
        if record.kind == "sweep":
            return Sweep(record, self.box, self.journal)
        return Generate(record, self.box, self.journal)

    def _roots(self) -> Roots:
        return Roots.of(self.box.pipeline.deploy_roots)


def _staged_paths(files: object) -> list[str]:
    """The staged paths a redeploy record's files name; nothing from a list of another shape."""
    items = files if isinstance(files, list) else []
    return [str(item["staged"]) for item in items if isinstance(item, dict) and "staged" in item]


def _subject(job: JobInfo) -> str:
    return f"{job.name} ({job.dataset})" if job.dataset else job.name
