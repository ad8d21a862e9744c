"""The wire contract between the console and the agent: every message, and how it is encoded.

Newline-delimited JSON, one message per line, UTF-8 (DESIGN §2). Requests go console → agent,
responses and events agent → console. Every message body is a frozen dataclass whose field names
carry their units (`tokens_per_s`, `eta_s`, `taken_at` in epoch seconds).

This module is the only part of `agent` the console may import, so it must stay standard-library
only and free of I/O: it turns lines into values and values into lines, nothing else.
"""

from __future__ import annotations

from agent.protocol.audit import AuditEntry, AuditParams, AuditResult
from agent.protocol.budget import generation_done
from agent.protocol.codec import WireTypeError, decode, encode, from_wire, parse_result, to_wire
from agent.protocol.config import (
    DatasetsConfig,
    GuardMode,
    JobSpec,
    NotifyConfig,
    PipelineConfig,
    TokenizerCheck,
    TokenizerCheckParams,
)
from agent.protocol.datasets import DatasetDetail, DetailParams, ErrorSummary, ResponseSummary
from agent.protocol.drafter import DrafterEvaluation, EvalLevel, ExportDatasetQuality, ExportSummary
from agent.protocol.envelopes import ErrorResponse, Event, Message, Request, Response
from agent.protocol.errors import ErrorCode, ErrorInfo, ProtocolError
from agent.protocol.files import (
    FilesHashParams,
    FilesHashResult,
    FileState,
    InstallParams,
    InstallResult,
    RollbackParams,
)
from agent.protocol.framing import MAX_LINE_BYTES, ByteReader, ByteWriter, LineFramer, OversizedLine
from agent.protocol.handshake import (
    Done,
    HelloParams,
    HelloResult,
    PingParams,
    PingResult,
    WatchParams,
)
from agent.protocol.identity import bundle_digest
from agent.protocol.jobs import (
    LIVE_JOB_STATES,
    JobEvent,
    JobInfo,
    JobsList,
    JobsParams,
    JobState,
    LaunchParams,
    StopOutcome,
    StopParams,
    StopResult,
    StopStep,
)
from agent.protocol.logs import (
    LogChunk,
    LogInfo,
    LogLagged,
    LogReadParams,
    LogsList,
    LogsParams,
    LogSubscribeParams,
    LogUnsubscribeParams,
)
from agent.protocol.methods import EVENTS, METHODS, MethodSpec
from agent.protocol.server import GpuSample, ServerPart, ServerStats
from agent.protocol.snapshot import (
    Alert,
    DatasetProgress,
    DatasetStatus,
    Severity,
    Snapshot,
    SnapshotParams,
    StopConditionKind,
    TrainingProgress,
)
from agent.protocol.timeline import EventsList, EventsParams, TimelineEvent
from agent.protocol.version import AGENT_VERSION, PROTOCOL_VERSION

__all__ = [
    "EventsList",
    "EventsParams",
    "TimelineEvent",
    "LIVE_JOB_STATES",
    "JobState",
    "StopOutcome",
    "DatasetStatus",
    "Severity",
    "StopConditionKind",
    "AGENT_VERSION",
    "Alert",
    "AuditEntry",
    "AuditParams",
    "AuditResult",
    "ByteReader",
    "ByteWriter",
    "DatasetDetail",
    "DatasetProgress",
    "DatasetsConfig",
    "GuardMode",
    "DetailParams",
    "Done",
    "DrafterEvaluation",
    "EVENTS",
    "ErrorCode",
    "ErrorInfo",
    "ErrorResponse",
    "ErrorSummary",
    "EvalLevel",
    "Event",
    "ExportDatasetQuality",
    "ExportSummary",
    "FileState",
    "FilesHashParams",
    "FilesHashResult",
    "GpuSample",
    "HelloParams",
    "HelloResult",
    "InstallParams",
    "InstallResult",
    "JobEvent",
    "JobInfo",
    "JobSpec",
    "JobsList",
    "JobsParams",
    "LaunchParams",
    "LineFramer",
    "LogChunk",
    "LogInfo",
    "LogLagged",
    "LogReadParams",
    "LogSubscribeParams",
    "LogUnsubscribeParams",
    "LogsList",
    "LogsParams",
    "MAX_LINE_BYTES",
    "METHODS",
    "Message",
    "MethodSpec",
    "OversizedLine",
    "PROTOCOL_VERSION",
    "PingParams",
    "PingResult",
    "NotifyConfig",
    "PipelineConfig",
    "ProtocolError",
    "Request",
    "Response",
    "ResponseSummary",
    "RollbackParams",
    "ServerPart",
    "ServerStats",
    "Snapshot",
    "SnapshotParams",
    "StopParams",
    "StopResult",
    "StopStep",
    "TokenizerCheck",
    "TokenizerCheckParams",
    "TrainingProgress",
    "WatchParams",
    "WireTypeError",
    "bundle_digest",
    "decode",
    "encode",
    "from_wire",
    "generation_done",
    "parse_result",
    "to_wire",
]
