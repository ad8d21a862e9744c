"""Every method and event the protocol knows, with the types of their bodies."""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol.audit import AuditParams, AuditResult
from agent.protocol.config import TokenizerCheck, TokenizerCheckParams
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
from agent.protocol.snapshot import Alert, Snapshot, SnapshotParams
from agent.protocol.timeline import EventsList, EventsParams


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """What one method takes and returns, and whether it changes anything."""

    params: type
    result: type
    mutating: bool = False


METHODS: dict[str, MethodSpec] = {
    "hello": MethodSpec(HelloParams, HelloResult),
    "ping": MethodSpec(PingParams, PingResult),
    "snapshot": MethodSpec(SnapshotParams, Snapshot),
    "snapshot.watch": MethodSpec(WatchParams, Done),
    "jobs.list": MethodSpec(JobsParams, JobsList),
    "jobs.launch": MethodSpec(LaunchParams, JobInfo, mutating=True),
    "jobs.stop": MethodSpec(StopParams, StopResult, mutating=True),
    "logs.list": MethodSpec(LogsParams, LogsList),
    "logs.read": MethodSpec(LogReadParams, LogChunk),
    "logs.subscribe": MethodSpec(LogSubscribeParams, Done),
    "logs.unsubscribe": MethodSpec(LogUnsubscribeParams, Done),
    "files.hash": MethodSpec(FilesHashParams, FilesHashResult),
    "files.install": MethodSpec(InstallParams, InstallResult, mutating=True),
    "files.rollback": MethodSpec(RollbackParams, InstallResult, mutating=True),
    "audit.read": MethodSpec(AuditParams, AuditResult),
    "datasets.detail": MethodSpec(DetailParams, DatasetDetail),
    "tokenizer.check": MethodSpec(TokenizerCheckParams, TokenizerCheck),
    "events.list": MethodSpec(EventsParams, EventsList),
}
"""Every method the protocol knows; an agent may implement a subset (see its capabilities)."""


EVENTS: dict[str, type] = {
    "snapshot": Snapshot,
    "alert": Alert,
    "job": JobEvent,
    "log": LogChunk,
    "log_lagged": LogLagged,
}
"""Every event the protocol knows, with the type of its data."""
