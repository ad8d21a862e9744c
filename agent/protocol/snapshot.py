"""The snapshot: everything the dashboard shows, taken at one moment, and its parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.protocol.autopilot import AutopilotStatus
from agent.protocol.budget import generation_done
from agent.protocol.drafter import DrafterEvaluation, ExportSummary
from agent.protocol.jobs import JobInfo
from agent.protocol.operations import OperationInfo
from agent.protocol.server import GpuSample, ServerStats

DatasetStatus = Literal[
    "pending",
    "running",
    "waiting_for_server",
    "stalled",
    "complete",
    "over_budget",
    "idle",
    "error",
]
"""error: its files could not be read this time, so the figures are from the last good read."""

StopConditionKind = Literal["budget", "max_samples", "all_prompts"]
"""What ends the run writing a dataset."""

Severity = Literal["info", "warning", "error"]

RATE_WINDOWS_S = (60.0, 300.0, 900.0, 3600.0)
"""The windows of `DatasetProgress.tokens_per_s_by_window`, in its order: 1, 5, 15, 60 minutes."""


@dataclass(frozen=True, slots=True)
class SnapshotParams:
    """Asks for one snapshot now."""


@dataclass(frozen=True, slots=True)
class ApiUsage:
    """What an OpenAI-compatible backend's runner reports (runner.json): whole-dataset tallies.

    Re-encoded records hold a text answer turned back into ids with the target's tokenizer, and
    can differ from what the model sampled; the rest hold the server's exact ids.
    """

    reencoded_responses: int = 0
    reencode_mismatches: int = 0
    """Re-encoded records whose length differs from the server's completion_tokens."""
    cost_credits: float = 0.0
    """Summed `usage.cost`, in the API's unit (OpenRouter's credits are USD)."""
    rate_limited: int = 0
    """Times a 429 paused the run's dispatch (this run)."""
    paused_until: float | None = None
    """Epoch seconds the live run's dispatch is paused to after a 429; None when not paused."""
    responses: int = 0
    """Records in the dataset when the runner wrote these tallies: the base of the shares."""


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
    status: DatasetStatus = "idle"
    responses_per_s: float | None = None
    mean_tokens_per_response: float | None = None
    stop_condition: StopConditionKind = "all_prompts"
    target_responses: int | None = None
    target_tokens: int | None = None
    eta_low_s: float | None = None
    eta_high_s: float | None = None
    projected_overrun_hours: float | None = None
    """Generation still to come past the budget, in hours (what stopping now saves), on the
    ETA's timeline: never longer than the ETA."""
    in_flight: int = 0
    runner_state: str | None = None
    runner_sha256: str | None = None
    stale_code: bool = False
    last_response_at: float | None = None
    """When its last response came, on the agent's wall clock: its age is measured on the
    monotonic clock and dated from the snapshot's `taken_at`, so a clock step moves it with
    `taken_at`. A time, not an age: a dataset nobody writes is the same from one snapshot to
    the next, and is neither rebuilt nor encoded again (5,000 idle folders, bench_daemon)."""
    writer_active: bool = False
    """True while a run (runner.json or an agent job) is writing this dataset."""
    failed_prompts: int = 0
    """Prompts that failed for good (errors.jsonl) and have no response: no run sends them again."""
    writer: str | None = None
    """Who writes it now, in words (pid, command line, how it was found); None when nobody."""
    writer_pid: int | None = None
    writer_stopped: bool = False
    """Its writer is stopped (SIGSTOP): the dataset is stalled, and nobody else may write it."""
    api_usage: ApiUsage | None = None
    """None unless its runner re-encoded records, paid for answers or met a rate limit."""
    tokens_per_s_by_window: tuple[float | None, ...] = ()
    """Tokens/s over each of RATE_WINDOWS_S, None where the history holds too little; empty from
    an older agent. Plain numbers: 5,000 datasets of rate objects cost a second to decode."""
    truncated_responses: int = 0
    """Responses cut at max_new_tokens (finish reason `length`), among `responses`: the earlier
    runs' too, each id once."""
    max_new_tokens: int | None = None
    """The cap its last run set (runner.json, else its job's argv); None when nobody says."""
    turn_records: int = 0
    """Records of conversation turns (each assistant turn regenerated in order is one)."""
    conversations_done: int = 0
    """Conversations whose last turn is in: each counts once in `responses`, as its prompt does."""

    @property
    def answers(self) -> int:
        """Every answer recorded: plain responses, and each turn of each conversation."""
        return self.responses - self.conversations_done + self.turn_records

    @property
    def prompts_left(self) -> int:
        """Prompts a run would still send: neither answered nor failed for good."""
        return max(0, self.prompts - self.responses - self.failed_prompts)

    def last_response_age_s(self, taken_at: float) -> float | None:
        """Seconds from its last response to `taken_at`, its snapshot's time (None: none yet)."""
        at = self.last_response_at
        return None if at is None else max(0.0, taken_at - at)

    @property
    def truncated_share(self) -> float | None:
        """The share of its answers cut at max_new_tokens; None before the first answer."""
        return self.truncated_responses / self.answers if self.answers else None

    @property
    def generation_done(self) -> bool:
        """Done with its budget, by the one rule the runner, the agent and the console share."""
        return generation_done(self.tokens, self.budget, self.prompts_left)


@dataclass(frozen=True, slots=True)
class Alert:
    """Something the user should look at."""

    kind: str
    severity: Severity
    message: str
    subject: str = ""
    raised_at: float = 0.0


@dataclass(frozen=True, slots=True)
class TrainingEval:
    """A run's latest evaluation, kept apart from its training figures.

    On held-out data: what says which checkpoint to keep.
    """

    step: int | None
    loss: float | None = None
    accuracy: float | None = None
    """The trainer's own overall figure (SpecForge's eval/avg_acc: position 0)."""
    acceptance_length: float | None = None
    acceptance_rate: float | None = None
    loss_history: tuple[float, ...] = ()
    acceptance_history: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class TrainingProgress:
    """A training or hidden-states job, as its log and its configuration tell it.

    `loss`, `acceptance_rate`, `acceptance_length` and the histories are the training figures;
    the evaluation's are in `eval`, and `best_eval_*` come from the evaluations only.
    """

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
    epochs: int | None = None
    """How many epochs the run has, when its log or configuration says; `step` and
    `total_steps` are overall."""
    accuracy: float | None = None
    """The trainer's overall training accuracy (SpecForge's `acc`), when it logs one."""
    eval: TrainingEval | None = None
    total_note: str = ""
    """Where `total_steps` came from (the run's config, its data, the log), or why it is unknown."""
    seconds_per_step: float | None = None
    """The rate the ETA is worked out from."""
    loss_not_finite: bool = False
    """The latest training record logged a NaN or infinite loss: the run has diverged."""
    zero_records: int = 0
    """Training records in a row, the latest among them, whose loss or accuracy was exactly 0."""
    evals_since_best: int = 0
    """Evaluations since the best (`best_eval_step`), none better: the peak may have passed."""
    best_checkpoint: str | None = None
    """The folder the trainer wrote for the best evaluation: the one to serve."""
    best_checkpoint_note: str = ""
    """Why no folder is named, when a best evaluation exists (none saved at its step...)."""


@dataclass(frozen=True, slots=True)
class HiddenStatesPlan:
    """What the hidden-states job will write, against the room where it writes.

    `bytes_needed` is the exported records' tokens (each cut at the trainer's max length) times
    the bytes each token's captured layers take; `fits` is None when a figure is unknown, and
    `note` says which, or how the figures were found.
    """

    job: str
    trainer: str
    tokens: int | None
    bytes_per_token: int | None
    bytes_needed: int | None
    output: str
    bytes_free: int | None
    margin_bytes: int
    fits: bool | None
    note: str
    hidden_size: int | None = None
    dtype: str = ""
    records: int | None = None
    """The records exported: the samples the capture should write."""
    bytes_written: int | None = None
    """The sample files already in the output folder (any run's: a run again skips them);
    None before the folder exists, or when it holds too many entries to count."""
    files_written: int | None = None
    quota_bytes: int | None = None
    """The job's `output_quota_bytes`: then `bytes_free` is the least of the filesystem's free
    space and what the quota leaves (every file in the folder counted)."""
    room_by_quota: bool = False
    """True when the quota, not the filesystem, leaves the least room."""
    bytes_per_s: float | None = None
    """The rate the job writes at: measured while it runs, else an earlier run's, else None."""
    rate_is_current: bool = False
    """True: measured on the running job; False with a rate: an earlier run's, as an estimate."""
    eta_s: float | None = None
    """Seconds until the rest is written, at `bytes_per_s`."""


@dataclass(frozen=True, slots=True)
class HiddenStatesCheck:
    """The check of a finished capture's files (agent.pipeline.hidden_states_check)."""

    job_id: str
    ok: bool | None
    """None: not checked (the note says why), or still being checked."""
    files: int = 0
    expected: int | None = None
    checked: int = 0
    problems: tuple[str, ...] = ()
    """`file: field: problem`, the first of them."""
    note: str = ""


@dataclass(frozen=True, slots=True)
class DrafterField:
    """One field of a drafter checkpoint, compared with what its target, data and server expect."""

    name: str
    ok: bool | None
    """None: a note (worth a look, not a refusal), or a value that could not be read."""
    found: str
    """The checkpoint's value and where it was read (`32000 (config.json draft_vocab_size)`)."""
    expected: str = ""
    """What it should be and where that was read."""
    fix: str = ""


@dataclass(frozen=True, slots=True)
class DrafterCheckParams:
    """Check a drafter checkpoint now: `path` on the box, else the one the drafter server would serve."""

    path: str | None = None


@dataclass(frozen=True, slots=True)
class DrafterCheck:
    """The check of the checkpoint a drafter server is (to be) started on (agent.pipeline.drafter_check)."""

    checkpoint: str
    ok: bool | None
    """None: not checked yet, or it could not be (the note says why)."""
    fields: tuple[DrafterField, ...] = ()
    layout: str = ""
    """Whose save code wrote it: specforge or speculators."""
    server: str = ""
    """What it is checked to be served on: sglang or vllm."""
    note: str = ""
    checked_at: float = 0.0


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
    hidden_states_plan: HiddenStatesPlan | None = None
    hidden_states_check: HiddenStatesCheck | None = None
    drafter_check: DrafterCheck | None = None
    """The check of the checkpoint the drafter server is started on, or would be now."""
    operations: tuple[OperationInfo, ...] = ()
    """Operations under way, and those that ended in the last hour."""
    autopilot: AutopilotStatus | None = None
