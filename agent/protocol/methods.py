"""Every method and event the protocol knows, each method paired with its params and result types.

As lsprotocol does, a method is a typed constant (`JOBS_STOP: Method[StopParams, StopResult]`),
so a caller writes `link.call(JOBS_STOP, StopParams(job_id))` and mypy knows it gets a
`StopResult`; nobody names a method by string or casts its answer. `METHODS` is built from the
constants, so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agent.protocol.audit import AuditParams, AuditResult
from agent.protocol.autopilot import (
    AutopilotParams,
    AutopilotStatus,
    AutopilotStatusParams,
    AutostartParams,
    AutostartStatus,
    AutostartStatusParams,
)
from agent.protocol.config import (
    PipelineApplied,
    PipelineApplyParams,
    TokenizerCheck,
    TokenizerCheckParams,
)
from agent.protocol.datasets import DatasetDetail, DetailParams
from agent.protocol.files import (
    FilesHashParams,
    FilesHashResult,
    InstallParams,
    InstallResult,
    RollbackParams,
)
from agent.protocol.handshake import (
    Done,
    HelloParams,
    HelloResult,
    PingParams,
    PingResult,
    WatchParams,
)
from agent.protocol.jobs import (
    JobEvent,
    JobInfo,
    JobsList,
    JobsParams,
    LaunchParams,
    StopParams,
    StopResult,
)
from agent.protocol.logs import (
    LogChunk,
    LogLagged,
    LogReadParams,
    LogsList,
    LogsParams,
    LogSubscribeParams,
    LogUnsubscribeParams,
)
from agent.protocol.operations import (
    GenerateParams,
    OperationInfo,
    OperationsList,
    OperationsParams,
    RedeployParams,
    SequenceParams,
    SweepParams,
)
from agent.protocol.snapshot import DrafterCheck, DrafterCheckParams, Snapshot, SnapshotParams
from agent.protocol.timeline import EventsList, EventsParams
from agent.protocol.webhook import NotifyStatus, NotifyStatusParams

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Method(Generic[P, R]):
    """One method: its wire name, what it takes and returns, and whether it changes anything."""

    name: str
    params: type[P]
    result: type[R]
    mutating: bool = False
    """Mutating requests need an idempotency key and are written to the audit log."""


HELLO = Method("hello", HelloParams, HelloResult)
PING = Method("ping", PingParams, PingResult)
SNAPSHOT = Method("snapshot", SnapshotParams, Snapshot)
SNAPSHOT_WATCH = Method("snapshot.watch", WatchParams, Done)
JOBS_LIST = Method("jobs.list", JobsParams, JobsList)
JOBS_LAUNCH = Method("jobs.launch", LaunchParams, JobInfo, mutating=True)
JOBS_STOP = Method("jobs.stop", StopParams, StopResult, mutating=True)
LOGS_LIST = Method("logs.list", LogsParams, LogsList)
LOGS_READ = Method("logs.read", LogReadParams, LogChunk)
LOGS_SUBSCRIBE = Method("logs.subscribe", LogSubscribeParams, Done)
LOGS_UNSUBSCRIBE = Method("logs.unsubscribe", LogUnsubscribeParams, Done)
FILES_HASH = Method("files.hash", FilesHashParams, FilesHashResult)
FILES_INSTALL = Method("files.install", InstallParams, InstallResult, mutating=True)
FILES_ROLLBACK = Method("files.rollback", RollbackParams, InstallResult, mutating=True)
AUDIT_READ = Method("audit.read", AuditParams, AuditResult)
DATASETS_DETAIL = Method("datasets.detail", DetailParams, DatasetDetail)
TOKENIZER_CHECK = Method("tokenizer.check", TokenizerCheckParams, TokenizerCheck)
DRAFTER_CHECK = Method("drafter.check", DrafterCheckParams, DrafterCheck)
EVENTS_LIST = Method("events.list", EventsParams, EventsList)
NOTIFY_STATUS = Method("notify.status", NotifyStatusParams, NotifyStatus)
OPERATIONS_REDEPLOY = Method("operations.redeploy", RedeployParams, OperationInfo, mutating=True)
OPERATIONS_GENERATE = Method("operations.generate", GenerateParams, OperationInfo, mutating=True)
OPERATIONS_SEQUENCE = Method("operations.sequence", SequenceParams, OperationInfo, mutating=True)
OPERATIONS_SWEEP = Method("operations.sweep", SweepParams, OperationInfo, mutating=True)
OPERATIONS_LIST = Method("operations.list", OperationsParams, OperationsList)
AUTOPILOT_STATUS = Method("autopilot.status", AutopilotStatusParams, AutopilotStatus)
AUTOPILOT_CONTROL = Method("autopilot.control", AutopilotParams, AutopilotStatus, mutating=True)
AUTOSTART_STATUS = Method("autostart.status", AutostartStatusParams, AutostartStatus)
AUTOSTART_SET = Method("autostart.set", AutostartParams, AutostartStatus, mutating=True)
PIPELINE_APPLY = Method("pipeline.apply", PipelineApplyParams, PipelineApplied, mutating=True)

AnyMethod = Method[Any, Any]
"""A method whose types are not known statically: what the decoder finds by a name on the wire."""

METHODS: dict[str, AnyMethod] = {
    method.name: method
    for method in (
        HELLO,
        PING,
        SNAPSHOT,
        SNAPSHOT_WATCH,
        JOBS_LIST,
        JOBS_LAUNCH,
        JOBS_STOP,
        LOGS_LIST,
        LOGS_READ,
        LOGS_SUBSCRIBE,
        LOGS_UNSUBSCRIBE,
        FILES_HASH,
        FILES_INSTALL,
        FILES_ROLLBACK,
        AUDIT_READ,
        DATASETS_DETAIL,
        TOKENIZER_CHECK,
        DRAFTER_CHECK,
        EVENTS_LIST,
        NOTIFY_STATUS,
        OPERATIONS_REDEPLOY,
        OPERATIONS_GENERATE,
        OPERATIONS_SEQUENCE,
        OPERATIONS_SWEEP,
        OPERATIONS_LIST,
        AUTOPILOT_STATUS,
        AUTOPILOT_CONTROL,
        AUTOSTART_STATUS,
        AUTOSTART_SET,
        PIPELINE_APPLY,
    )
}
"""Every method the protocol knows, by wire name; an agent may implement a subset."""


EventData = Snapshot | JobEvent | LogChunk | LogLagged | OperationInfo
"""What an event can carry; a receiver tells them apart with isinstance. Alerts travel inside
snapshots, so an agent that restarts or a console that attaches late still sees them."""

EVENTS: dict[str, type[EventData]] = {
    "snapshot": Snapshot,
    "job": JobEvent,
    "log": LogChunk,
    "log_lagged": LogLagged,
    "operation": OperationInfo,
}
"""Every event the protocol knows, with the type of its data."""
