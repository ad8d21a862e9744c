"""The wire contract between the console and the agent: every message, and how it is encoded.

Newline-delimited JSON, one message per line, UTF-8 (DESIGN §2). Requests go console → agent,
responses and events agent → console. Every message body is a frozen dataclass whose field names
carry their units (`tokens_per_s`, `eta_s`, `taken_at` in epoch seconds).

This module is the only part of `agent` the console may import, so it must stay standard-library
only and free of I/O: it turns lines into values and values into lines, nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import types
import typing
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

PROTOCOL_VERSION = 1
"""Bumped whenever a message changes in a way an older peer cannot read."""

AGENT_VERSION = "0.1.0"
"""The version of the agent code shipped with this console."""

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest line either side accepts; a longer one is discarded whole and answered with an error."""


class ErrorCode:
    """The `code` values an error response can carry."""

    MALFORMED = "malformed"
    OVERSIZED = "oversized"
    UNKNOWN_METHOD = "unknown_method"
    INVALID_PARAMS = "invalid_params"
    UNSUPPORTED_VERSION = "unsupported_version"
    HELLO_REQUIRED = "hello_required"
    NOT_FOUND = "not_found"
    UNREADABLE = "unreadable"
    READ_ONLY = "read_only"
    GPU_BUSY = "gpu_busy"
    DATASET_BUSY = "dataset_busy"
    """The dataset already has a writer; the message names it."""
    STORAGE = "storage"
    """The agent could not write its own files (full disk...); the message names the path."""
    KEY_REUSED = "key_reused"
    INTERNAL = "internal"


class ProtocolError(Exception):
    """A line that is not a valid message; carries what to answer with."""

    def __init__(self, code: str, message: str, request_id: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


# ---------------------------------------------------------------- message bodies


@dataclass(frozen=True, slots=True)
class DatasetsConfig:
    """Where a host keeps its datasets and what each may cost (DESIGN §3, §9)."""

    root: str
    prompts_file: str = "prompts.jsonl"
    responses_file: str = "raw_responses.jsonl"
    budget: int | None = None
    """Default token budget per dataset; None means unlimited."""
    budgets: dict[str, int] = field(default_factory=dict)
    """Per-dataset budgets in tokens, overriding `budget`."""
    stall_after_s: float = 600.0
    """A running dataset with no new response for this long is stalled."""
    overrun_alert_share: float = 0.02
    """Alert when the projected overrun passes this share of the budget."""
    low_disk_floor_bytes: int = 1 << 30
    """Warn (low_disk) when a filesystem being written has less free than this, however slow."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A configured job: an argv list (never a shell string), where it runs and how it stops.

    argv, cwd and env values may use {python}, {bundle}, {state_dir}, {dataset}, {dataset_dir},
    {budget}, {sglang_url} and {tokenizer}; the agent fills them in per launch. An argv element
    that is exactly {trust_remote_code} becomes --trust-remote-code, or disappears when the host
    does not trust its tokenizer's code.
    """

    argv: tuple[str, ...]
    kind: str = "command"
    """inference, server, vocab, hidden_states, train or command."""
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpu: bool = False
    per_dataset: bool = False
    stop_signal: str = "SIGTERM"
    grace_s: float = 30.0
    """Seconds between the stop signal and SIGTERM."""
    term_grace_s: float = 10.0
    """Seconds between SIGTERM and SIGKILL."""


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The part of a host's config the agent needs; sent at hello and kept by the agent."""

    datasets: DatasetsConfig | None = None
    sglang_url: str | None = None
    sglang_log: str | None = None
    sglang_api_key_file: str | None = None
    """A file on the host holding the server's --api-key, for the probes (else SGLANG_API_KEY)."""
    jobs: dict[str, JobSpec] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)
    """Processes the agent did not start, found by a regex over their command line, by name."""
    deploy_roots: tuple[str, ...] = ()
    """The only folders file installs may write under."""
    tokenizer: str | None = None
    """The target model's tokenizer folder on the host: {tokenizer} in argv, checked by doctor."""
    trust_remote_code: bool = False
    """Run the code that tokenizer folder ships (Kimi-K2's); an explicit opt-in, never a default."""


@dataclass(frozen=True, slots=True)
class HelloParams:
    """The console's half of the first exchange."""

    protocol_version: int
    client_version: str
    pipeline: PipelineConfig | None = None


@dataclass(frozen=True, slots=True)
class HelloResult:
    """The agent's half of the first exchange."""

    protocol_version: int
    agent_version: str
    bundle_sha256: str
    capabilities: tuple[str, ...]
    pid: int
    host_name: str
    started_at: float


@dataclass(frozen=True, slots=True)
class WatchParams:
    """Push a snapshot event every `interval_s`, and at once when a job changes."""

    interval_s: float = 1.0


@dataclass(frozen=True, slots=True)
class PingParams:
    """Asks the agent for its clock, to measure latency and skew."""


@dataclass(frozen=True, slots=True)
class PingResult:
    """The agent's clock when it answered a ping."""

    agent_time: float


@dataclass(frozen=True, slots=True)
class SnapshotParams:
    """Asks for one snapshot now."""


@dataclass(frozen=True, slots=True)
class DatasetProgress:
    """One dataset's state, as the agent sees it on disk."""

    name: str
    prompts: int
    responses: int
    tokens: int
    budget: int | None
    corrupt_lines: int = 0
    torn_tail_bytes: int = 0
    tokens_per_s: float | None = None
    eta_s: float | None = None
    projected_tokens: int | None = None
    projected_overrun_tokens: int | None = None
    status: str = "idle"
    """pending, running, waiting_for_server, stalled, complete, over_budget, idle, or error (its
    files could not be read this time: the figures are from the last good read)."""
    responses_per_s: float | None = None
    mean_tokens_per_response: float | None = None
    stop_condition: str = "all_prompts"
    """What ends the run writing it: budget, max_samples or all_prompts."""
    target_responses: int | None = None
    target_tokens: int | None = None
    eta_low_s: float | None = None
    eta_high_s: float | None = None
    projected_overrun_hours: float | None = None
    in_flight: int = 0
    runner_state: str | None = None
    runner_sha256: str | None = None
    stale_code: bool = False
    last_response_age_s: float | None = None
    writer_active: bool = False
    """True while a run (runner.json or an agent job) is writing this dataset."""
    failed_prompts: int = 0
    """Prompts that failed for good (errors.jsonl) and have no response: no run sends them again."""
    writer: str | None = None
    """Who writes it now, in words (pid, command line, how it was found); None when nobody."""
    writer_pid: int | None = None
    writer_stopped: bool = False
    """Its writer is stopped (SIGSTOP): the dataset is stalled, and nobody else may write it."""

    @property
    def prompts_left(self) -> int:
        """Prompts a run would still send: neither answered nor failed for good."""
        return max(0, self.prompts - self.responses - self.failed_prompts)

    @property
    def generation_done(self) -> bool:
        """Done with its budget, by the one rule the runner, the agent and the console share."""
        return generation_done(self.tokens, self.budget, self.prompts_left)


@dataclass(frozen=True, slots=True)
class Alert:
    """Something the user should look at."""

    kind: str
    severity: str
    """One of info, warning, error."""
    message: str
    subject: str = ""
    raised_at: float = 0.0


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job, started by the agent or found running (external)."""

    id: str
    name: str
    kind: str
    state: str
    """starting, running, stopping, stopped (by the user), exited, failed, killed or lost."""
    argv: tuple[str, ...]
    pid: int | None = None
    pgid: int | None = None
    dataset: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    exit_signal: str | None = None
    gpu: bool = False
    external: bool = False
    log_path: str | None = None
    code_sha256: str | None = None
    """sha256 of the script in its argv when it started (None when there is no script file)."""
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class LaunchParams:
    """Start configured job `job` (for `dataset` when it runs per dataset)."""

    job: str
    dataset: str | None = None
    argv: tuple[str, ...] | None = None
    """An edited argv for this launch only (still a list: never a shell string)."""


@dataclass(frozen=True, slots=True)
class StopParams:
    """Stop job `job_id` safely: its stop signal, the grace, SIGTERM, SIGKILL."""

    job_id: str


@dataclass(frozen=True, slots=True)
class StopStep:
    """One step of a stop, as it happened."""

    action: str
    """The signal sent, or "exited" when the group was found empty."""
    at: float
    pids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class StopResult:
    """How a stop went."""

    job: JobInfo
    outcome: str
    """stopped, already_exited or lost (its pid belongs to another process now: never signalled)."""
    steps: tuple[StopStep, ...] = ()


@dataclass(frozen=True, slots=True)
class JobsParams:
    """List every job."""


@dataclass(frozen=True, slots=True)
class JobsList:
    """Every job the agent knows, its own and external ones."""

    jobs: tuple[JobInfo, ...]


@dataclass(frozen=True, slots=True)
class JobEvent:
    """A job changed: launched, a stop step, exited."""

    job: JobInfo
    message: str


@dataclass(frozen=True, slots=True)
class LogInfo:
    """A log the agent serves."""

    name: str
    """sglang, agent, or job:<job id>."""
    path: str
    size_bytes: int | None


@dataclass(frozen=True, slots=True)
class LogsParams:
    """List the named logs."""


@dataclass(frozen=True, slots=True)
class LogsList:
    """Every named log."""

    logs: tuple[LogInfo, ...]


@dataclass(frozen=True, slots=True)
class LogReadParams:
    """Read whole lines of log `name` after byte `offset` (negative: that many bytes from the end)."""

    name: str
    offset: int = 0
    inode: int | None = None
    """The inode the console last read; a different one means the file was replaced."""
    max_bytes: int = 512 * 1024


@dataclass(frozen=True, slots=True)
class LogSubscribeParams:
    """Push new lines of log `name` as "log" events, starting after byte `offset`."""

    name: str
    offset: int = 0
    inode: int | None = None


@dataclass(frozen=True, slots=True)
class LogUnsubscribeParams:
    """Stop pushing log `name`."""

    name: str


@dataclass(frozen=True, slots=True)
class Done:
    """A request that returns nothing but its success."""


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Whole lines of a log from byte `start_offset` to `end_offset` (exclusive)."""

    name: str
    start_offset: int
    end_offset: int
    text: str
    size_bytes: int
    inode: int | None
    reset: bool = False
    """The file was cut shorter or replaced since the offset asked for: read from its start."""
    missing: bool = False


@dataclass(frozen=True, slots=True)
class ServerPart:
    """One DP rank of a server, or one worker behind an sglang-router."""

    name: str
    """DP0, DP1, ... or the worker's URL."""
    healthy: bool | None = None
    load: int | None = None
    """The router's count of requests it has in flight on this worker."""
    running_requests: int | None = None
    queued_requests: int | None = None
    gen_throughput_tokens_per_s: float | None = None
    token_usage: float | None = None


@dataclass(frozen=True, slots=True)
class LogLagged:
    """The agent stopped pushing log `name` to a console that read too slowly.

    Nothing was skipped: subscribing again from `resume_offset` (with `inode`) goes on exactly
    where it stopped.
    """

    name: str
    resume_offset: int
    inode: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class ServerStats:
    """The SGLang server: health, model and load, from HTTP probes and its log.

    Figures are whole-server: summed over DP ranks (and over workers behind a router), or
    averaged for ratios such as token_usage; `parts` has them per rank or per worker.
    """

    url: str | None
    healthy: bool | None
    """None when it could not be asked."""
    detail: str = ""
    model_path: str | None = None
    speculative_algorithm: str | None = None
    max_running_requests: int | None = None
    running_requests: int | None = None
    queued_requests: int | None = None
    token_usage: float | None = None
    gen_throughput_tokens_per_s: float | None = None
    cache_hit_rate: float | None = None
    accept_length: float | None = None
    log_stats: dict[str, str] = field(default_factory=dict)
    """The fields of the last Decode batch line of the server log, summed over DP ranks."""
    probed_at: float = 0.0
    is_router: bool = False
    """The URL is an sglang-router; `parts` are its workers."""
    healthy_workers: int | None = None
    total_workers: int | None = None
    parts: tuple[ServerPart, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU as nvidia-smi reports it, and the pids holding memory on it."""

    index: int
    name: str
    utilization_pct: float | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    temperature_c: float | None
    power_w: float | None
    pids: tuple[int, ...] = ()
    job_ids: tuple[str, ...] = ()
    """The agent's jobs among the holders."""


@dataclass(frozen=True, slots=True)
class FilesHashParams:
    """sha256 of files under the deploy roots."""

    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as it is on the host."""

    path: str
    sha256: str | None
    """None when the file does not exist."""
    size_bytes: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class FilesHashResult:
    """The files asked for, in order."""

    files: tuple[FileState, ...]


@dataclass(frozen=True, slots=True)
class InstallParams:
    """Swap the uploaded `staged` file in for `target`, if its sha256 is `sha256`."""

    target: str
    staged: str
    sha256: str
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class RollbackParams:
    """Put back the version of `target` the last install replaced."""

    target: str


@dataclass(frozen=True, slots=True)
class InstallResult:
    """What an install or rollback did."""

    target: str
    sha256: str
    previous_sha256: str | None
    backup: str | None
    removed_leftovers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DetailParams:
    """A closer look at dataset `name`: its `recent` latest responses and errors."""

    name: str
    recent: int = 20


@dataclass(frozen=True, slots=True)
class ResponseSummary:
    """One response, without its token ids."""

    id: str
    completion_tokens: int
    finish_reason: str
    latency_s: float | None


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """One prompt that failed."""

    id: str
    reason: str
    permanent: bool


@dataclass(frozen=True, slots=True)
class DatasetDetail:
    """The latest responses of a dataset, their finish reasons and lengths, and its errors."""

    name: str
    window_responses: int
    """How many recent responses the figures describe."""
    recent: tuple[ResponseSummary, ...]
    finish_reasons: dict[str, int]
    length_edges: tuple[int, ...]
    length_counts: tuple[int, ...]
    errors: tuple[ErrorSummary, ...]


@dataclass(frozen=True, slots=True)
class AuditParams:
    """The last `limit` entries of the audit log."""

    limit: int = 100


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One mutating request: who, what, when, and how it ended."""

    ts: float
    client: str
    method: str
    params: dict[str, Any]
    idempotency_key: str | None
    outcome: str


@dataclass(frozen=True, slots=True)
class AuditResult:
    """Audit entries, oldest first."""

    entries: tuple[AuditEntry, ...]


@dataclass(frozen=True, slots=True)
class TrainingProgress:
    """A training or hidden-states job, as its log tells it."""

    job_id: str
    step: int | None
    total_steps: int | None
    epoch: int | None
    loss: float | None
    learning_rate: float | None
    acceptance_rate: float | None
    acceptance_length: float | None
    best_eval_acceptance: float | None
    best_eval_step: int | None
    eta_s: float | None
    loss_history: tuple[float, ...] = ()
    acceptance_history: tuple[float, ...] = ()


# ---------------------------------------------------------------- the drafter's data and speed


@dataclass(frozen=True, slots=True)
class ExportDatasetQuality:
    """One dataset of the latest training-data export, as its quality report counts it."""

    name: str
    answers: int
    tokens: int
    truncated: int
    empty: int
    looping: int
    reasoning_closed: int
    reasoning_unclosed: int
    duplicates_skipped: int
    unanswered_prompts: int
    no_prompt: int
    prompt_mismatch: int
    corrupt_lines: int
    dropped_answers: int
    ids_lines: int
    conversation_lines: int
    roundtrip_checked: int
    roundtrip_matched: int
    roundtrip_flagged: bool
    first_mismatch: str = ""
    """Where the first conversation that does not reproduce its tokens differs, in words."""
    finish_reasons: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    length_edges: tuple[int, ...] = ()
    length_counts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """The latest export job's report (its OUT/export_report.json), as the agent read it."""

    job_id: str
    out_dir: str
    finished_at: float
    roundtrip_share: float | None
    roundtrip_threshold: float
    roundtrip_flagged: bool
    tokens: int
    tokens_per_s: float
    datasets: tuple[ExportDatasetQuality, ...] = ()


@dataclass(frozen=True, slots=True)
class EvalLevel:
    """One concurrency level of a drafter evaluation (a row of OUT/eval.json)."""

    concurrency: int
    tokens_per_s: float
    baseline_tokens_per_s: float | None
    speedup: float | None
    accept_length: float | None
    latency_p50_s: float
    latency_p95_s: float


@dataclass(frozen=True, slots=True)
class DrafterEvaluation:
    """The latest evaluate job's OUT/eval.json: the levels and the verdict in words."""

    job_id: str
    out_dir: str
    finished_at: float
    verdict: str
    slower: bool
    """Slower than no drafter at some level."""
    levels: tuple[EvalLevel, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the dashboard shows, taken at one moment."""

    taken_at: float
    host_name: str
    datasets_root: str | None
    datasets: tuple[DatasetProgress, ...]
    alerts: tuple[Alert, ...] = ()
    jobs: tuple[JobInfo, ...] = ()
    server: ServerStats | None = None
    gpus: tuple[GpuSample, ...] = ()
    gpu_note: str = ""
    training: tuple[TrainingProgress, ...] = ()
    export: ExportSummary | None = None
    evaluation: DrafterEvaluation | None = None


@dataclass(frozen=True, slots=True)
class TokenizerCheckParams:
    """Load the host's configured tokenizer, with its trust setting, in a process of its own."""

    timeout_s: float = 60.0
    """The load is abandoned (its process killed) after this long."""


@dataclass(frozen=True, slots=True)
class TokenizerCheck:
    """How the configured tokenizer loaded on the host, or the one line why it did not."""

    path: str | None
    trust_remote_code: bool
    ok: bool
    detail: str
    class_name: str | None = None
    vocab_size: int | None = None
    has_chat_template: bool = False
    think_marker: str | None = None
    """The marker the chat template opens the assistant turn with (<think>), if any."""
    load_s: float | None = None


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a request failed, and what to do about it."""

    code: str
    message: str


# ---------------------------------------------------------------- envelopes


@dataclass(frozen=True, slots=True)
class Request:
    """Console → agent: call `method` with `params`."""

    id: int
    method: str
    params: Any
    idempotency_key: str | None = None
    """Required on mutating methods, so a retry after a reconnect is not done twice."""


@dataclass(frozen=True, slots=True)
class Response:
    """Agent → console: the result of request `id` (decode it with `parse_result`)."""

    id: int
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """Agent → console: request `id` failed (`id` is None when the line had no readable id)."""

    id: int | None
    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class Event:
    """Agent → console, unprompted: a snapshot, a log chunk, an alert or a job change."""

    event: str
    data: Any


Message = Request | Response | ErrorResponse | Event


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


# ---------------------------------------------------------------- encode


def encode(message: Message) -> bytes:
    """One message as one wire line, newline included."""
    return (json.dumps(_envelope(message), separators=(",", ":")) + "\n").encode()


def _envelope(message: Message) -> dict[str, Any]:
    if isinstance(message, Request):
        line = {"id": message.id, "method": message.method, "params": to_wire(message.params)}
        if message.idempotency_key is not None:
            line["idempotency_key"] = message.idempotency_key
        return line
    if isinstance(message, Response):
        return {"id": message.id, "result": to_wire(message.result)}
    if isinstance(message, ErrorResponse):
        return {"id": message.id, "error": to_wire(message.error)}
    return {"event": message.event, "data": to_wire(message.data)}


def to_wire(value: Any) -> Any:
    """A dataclass (or anything nested in one) as plain JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_wire(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_wire(item) for key, item in value.items()}
    return value


# ---------------------------------------------------------------- decode


def decode(line: bytes | str) -> Message:
    """Parse one wire line; raises ProtocolError saying what is wrong with it."""
    obj = _parse_object(line)
    if "method" in obj:
        return _decode_request(obj)
    if "event" in obj:
        return _decode_event(obj)
    if "result" in obj or "error" in obj:
        return _decode_response(obj)
    raise ProtocolError(ErrorCode.MALFORMED, "line has none of method, event, result or error")


def _parse_object(line: bytes | str) -> dict[str, Any]:
    size = len(line.encode() if isinstance(line, str) else line)
    if size > MAX_LINE_BYTES:
        raise ProtocolError(
            ErrorCode.OVERSIZED, f"line of {size} bytes exceeds the {MAX_LINE_BYTES}-byte limit"
        )
    try:
        obj = json.loads(line.decode() if isinstance(line, bytes) else line)
    except UnicodeDecodeError as exc:
        raise ProtocolError(ErrorCode.MALFORMED, f"line is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            ErrorCode.MALFORMED, f"line is not JSON: {exc.msg} at column {exc.colno}"
        ) from None
    except ValueError as exc:  # json's own limits, such as an integer of over 4300 digits
        raise ProtocolError(ErrorCode.MALFORMED, f"line is not usable JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError(ErrorCode.MALFORMED, "line is JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.MALFORMED, f"line is JSON {type(obj).__name__}, not object")
    return obj


def _decode_request(obj: dict[str, Any]) -> Request:
    request_id = obj.get("id")
    if not isinstance(request_id, int) or isinstance(request_id, bool):
        raise ProtocolError(ErrorCode.MALFORMED, "request has no integer id")
    method = obj["method"]
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None:
        raise ProtocolError(ErrorCode.UNKNOWN_METHOD, f"unknown method {method!r}", request_id)
    key = obj.get("idempotency_key")
    if spec.mutating and not (isinstance(key, str) and key):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"{method} changes state and needs an idempotency_key",
            request_id,
        )
    params = _from_wire_or_error(spec.params, obj.get("params", {}), request_id)
    return Request(request_id, method, params, key if isinstance(key, str) else None)


def _decode_response(obj: dict[str, Any]) -> Response | ErrorResponse:
    request_id = obj.get("id")
    if request_id is not None and (not isinstance(request_id, int) or isinstance(request_id, bool)):
        raise ProtocolError(ErrorCode.MALFORMED, "response id is not an integer")
    if "error" in obj:
        return ErrorResponse(request_id, _from_wire_or_error(ErrorInfo, obj["error"], request_id))
    result = obj["result"]
    if request_id is None or not isinstance(result, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "response needs an integer id and object result")
    return Response(request_id, result)


def _decode_event(obj: dict[str, Any]) -> Event:
    name = obj["event"]
    data_type = EVENTS.get(name) if isinstance(name, str) else None
    if data_type is None:
        raise ProtocolError(ErrorCode.MALFORMED, f"unknown event {name!r}")
    return Event(name, _from_wire_or_error(data_type, obj.get("data"), None))


def parse_result(method: str, response: Response) -> Any:
    """The typed result of `method` from its response; raises ProtocolError if it does not fit."""
    return _from_wire_or_error(METHODS[method].result, response.result, response.id)


def _from_wire_or_error(cls: type, data: Any, request_id: int | None) -> Any:
    try:
        return from_wire(cls, data)
    except WireTypeError as exc:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, str(exc), request_id) from None


T = TypeVar("T")


class WireTypeError(ValueError):
    """A wire value does not have the type its dataclass field declares."""


def from_wire(cls: type[T], data: Any, where: str = "") -> T:
    """Build dataclass `cls` from plain JSON values, checking every field's type."""
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise WireTypeError(f"{where}: expected an object, got {_json_type(data)}")
    hints = _field_types(typing.cast(Hashable, cls))
    unknown = sorted(set(data) - hints.keys())
    if unknown:
        raise WireTypeError(f"{where}: unknown field {unknown[0]!r}")
    values = {name: _convert(hints[name], value, f"{where}.{name}") for name, value in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise WireTypeError(f"{where}: {exc}") from None


@functools.cache
def _field_types(cls: Any) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {name: hint for name, hint in typing.get_type_hints(cls).items() if name in names}


def _convert(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        return _convert_union(typing.get_args(hint), value, where)
    if origin is tuple:
        return tuple(
            _convert(typing.get_args(hint)[0], v, f"{where}[]") for v in _list(value, where)
        )
    if origin is dict:
        value_hint = typing.get_args(hint)[1]
        return {
            str(k): _convert(value_hint, v, f"{where}.{k}") for k, v in _dict(value, where).items()
        }
    if dataclasses.is_dataclass(hint):
        return from_wire(typing.cast(type, hint), value, where)
    return _scalar(hint, value, where)


def _convert_union(options: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in options:
        return None
    real = [option for option in options if option is not type(None)]
    return _convert(real[0], value, where)


def _scalar(hint: Any, value: Any, where: str) -> Any:
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
        return value
    raise WireTypeError(f"{where}: expected {hint.__name__}, got {_json_type(value)}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireTypeError(f"{where}: expected a list, got {_json_type(value)}")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireTypeError(f"{where}: expected an object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- framing


class ByteReader(typing.Protocol):
    """The read half of a channel: asyncio's or asyncssh's stream reader."""

    async def read(self, n: int = -1) -> bytes: ...  # noqa: D102


class ByteWriter(typing.Protocol):
    """The write half of a channel: asyncio's or asyncssh's stream writer."""

    def write(self, data: bytes) -> None: ...  # noqa: D102

    async def drain(self) -> None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """Stands in for a line that was longer than the limit; its bytes were dropped."""

    size_bytes: int


class LineFramer:
    """Splits a byte stream into lines, dropping (and reporting) any line over `max_bytes`.

    Memory stays bounded by `max_bytes` however long a line grows, and the stream stays usable
    after an oversized line: framing resumes at the next newline.
    """

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._buffer = bytearray()
        self._dropped = 0
        """Bytes of the current oversized line dropped so far (0 while not dropping)."""

    def feed(self, chunk: bytes) -> list[bytes | OversizedLine]:
        """The complete lines (newline stripped) that `chunk` finishes, in order."""
        lines: list[bytes | OversizedLine] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            lines.append(self._finish(chunk[start:end]))
            start = end + 1
        self._keep(chunk[start:])
        return lines

    def _finish(self, tail: bytes) -> bytes | OversizedLine:
        size = self._dropped + len(self._buffer) + len(tail)
        line = bytes(self._buffer) + tail
        self._buffer.clear()
        self._dropped = 0
        return OversizedLine(size) if size > self._max_bytes else line

    def _keep(self, rest: bytes) -> None:
        if self._dropped or len(self._buffer) + len(rest) > self._max_bytes:
            self._dropped += len(self._buffer) + len(rest)
            self._buffer.clear()
        else:
            self._buffer += rest

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line held or dropped so far."""
        return self._dropped + len(self._buffer)


# ---------------------------------------------------------------- the budget rule


def generation_done(tokens: int, budget: int | None, prompts_left: int) -> bool:
    """The one rule for "done with its budget": its tokens reach the budget, or no prompt is left.

    The runner ends a run by it, the agent calls a dataset complete by it, and the console's
    pipeline view and g/G start generation by it; a run that stops under its budget with prompts
    left is not done, so the next one must make progress.
    """
    return prompts_left <= 0 or (budget is not None and tokens >= budget)


# ---------------------------------------------------------------- bundle identity


def bundle_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 that names an agent bundle: over its files' relative paths and contents."""
    digest = hashlib.sha256()
    for path, content in sorted(files):
        digest.update(path.encode() + b"\0" + str(len(content)).encode() + b"\0" + content)
    return digest.hexdigest()
