"""What the console tells the agent about its host: datasets, jobs, the tokenizer, and its check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ServerApi = Literal["sglang", "openai-completions", "openai-chat"]
"""How the host's model server is spoken to: SGLang's native /generate, or OpenAI's /v1 routes."""

GuardMode = Literal["alert", "stop"]
"""What the agent does when a dataset reaches its budget: raise an alert, or stop its writer too."""

StopSignal = Literal["SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"]
"""The signals a job may be stopped with; any other name is refused where the config is read."""
RestartPolicy = Literal["no", "on-failure"]
"""Whether the agent starts a job again after it fails (systemd's Restart=)."""


@dataclass(frozen=True, slots=True)
class DatasetsConfig:
    """Where a host keeps its datasets and what each may cost (docs/file-formats.md, docs/config.md)."""

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
    guard: GuardMode = "alert"
    """Default budget guard per dataset: "stop" stops the writer (with its stop signal and grace)."""
    guards: dict[str, GuardMode] = field(default_factory=dict)
    """Per-dataset guards, overriding `guard`."""
    stall_guard_s: float | None = None
    """A writer that appended nothing this long while the server is healthy: an error alert."""
    truncation_alert_share: float = 0.10
    """Warn (truncation_high) when more than this share of a dataset's answers were cut at
    max_new_tokens; 0 turns the warning off."""

    def guard_of(self, dataset: str) -> GuardMode:
        """The budget guard that applies to `dataset`."""
        return self.guards.get(dataset, self.guard)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A configured job: an argv list (never a shell string), where it runs and how it stops.

    argv, cwd and env values may use {python}, {bundle}, {state_dir}, {dataset}, {dataset_dir},
    {budget}, {sglang_url}, {api}, {model} and {tokenizer}; the agent fills them in per launch. An argv element
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
    stop_signal: StopSignal = "SIGTERM"
    grace_s: float = 30.0
    """Seconds between the stop signal and SIGTERM."""
    term_grace_s: float = 10.0
    """Seconds between SIGTERM and SIGKILL."""
    restart: RestartPolicy = "no"
    """on-failure: started again after it fails, crashes or is lost, never after a stop asked
    for or an exit that says a retry cannot help (2 refused, 3 drained on a signal, 4 another
    writer); exit 5 (a write failed) waits for disk space first."""
    max_restarts: int = 5
    """Restarts allowed within `restart_window_s`; past it the agent gives up and alerts."""
    restart_window_s: float = 3600.0
    restart_delay_s: float = 10.0
    """The wait before the first restart; it doubles with each restart in the window, to 5 min."""
    stop_after_peak_evals: int | None = None
    """A training job: stopped (its stop signal) once this many evaluations in a row fell below
    its best; the autopilot takes training as done, and serves the best step's checkpoint."""
    output_quota_bytes: int | None = None
    """A hidden-states job: the most its output folder may hold, all files counted (a project or
    volume quota the filesystem's free space does not show). Planned against and stopped before."""
    nodes: tuple[str, ...] = ()
    """The boxes a job spans, by the console's host names in node-rank order (two or more), or
    none for a job on one box. Only the console starts such a job, on every box at once."""


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    """Where the agent POSTs its alerts and guard actions, as JSON (ntfy- and Slack-style hooks)."""

    url: str
    """May hold a secret: the agent never logs or shows more than its scheme and host."""
    min_severity: Literal["info", "warning", "error"] = "warning"


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The part of a host's config the agent needs; sent at hello, kept by the agent.

    An agent takes the first config a console sends it; after that, only `pipeline.apply`
    replaces it (a hello with another config learns the differences and changes nothing).
    """

    datasets: DatasetsConfig | None = None
    sglang_url: str | None = None
    sglang_log: str | None = None
    sglang_api_key_file: str | None = None
    """A file on the host holding the server's --api-key, for the probes (else SGLANG_API_KEY)."""
    sglang_api: ServerApi | None = None
    """How the server is spoken to; None leaves the probe to tell SGLang from vLLM by its answers."""
    sglang_model: str | None = None
    """The model name an OpenAI-compatible API is sent ({model}); a hosted API's is checked for."""
    jobs: dict[str, JobSpec] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)
    """Processes the agent did not start, found by a regex over their command line, by name."""
    deploy_roots: tuple[str, ...] = ()
    """The only folders file installs may write under."""
    tokenizer: str | None = None
    """The target model's tokenizer folder on the host: {tokenizer} in argv, checked by doctor."""
    trust_remote_code: bool = False
    """Run the code that tokenizer folder ships (Kimi-K2's); an explicit opt-in, never a default."""
    notify: NotifyConfig | None = None
    """A webhook for alerts; None sends nothing."""
    nvidia_smi: str | None = None
    """The nvidia-smi the GPU probe runs; None: `nvidia-smi` on the agent's PATH."""


@dataclass(frozen=True, slots=True)
class PipelineApplyParams:
    """Run `pipeline` from now on: asked for on purpose (`eagle-console apply`), never by a look."""

    pipeline: PipelineConfig


@dataclass(frozen=True, slots=True)
class PipelineApplied:
    """What applying changed, one line each (agent/protocol/config_diff.py); () when nothing."""

    differences: tuple[str, ...]


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
    ships_code: bool = False
    """The folder holds Python files or an `auto_map` (code trust_remote_code would run)."""
