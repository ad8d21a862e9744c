"""Jobs: what the agent runs or finds running, launching them, and how a stop went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

JobState = Literal[
    "starting", "running", "stopping", "stopped", "exited", "failed", "killed", "lost"
]
"""A job's life: stopped is by the user; lost means its process can no longer be told apart."""

LIVE_JOB_STATES: tuple[JobState, ...] = ("starting", "running", "stopping")
"""The states in which a job's processes may still be running (and hold GPUs, write datasets)."""

FAILED_JOB_STATES: tuple[JobState, ...] = ("failed", "killed", "lost")
"""The ends nobody asked for: what a restart policy acts on (exited and stopped are not failures)."""

StopOutcome = Literal["stopped", "already_exited", "lost"]
"""How a stop ended: lost means its pid belongs to another process now, so it was never signalled."""

MAX_EXIT_REASON_CHARS = 200
"""The most a job's exit reason holds: one line, cut with "…" (the agent cuts it, the console
cuts what it shows again, whoever wrote the record)."""


@dataclass(frozen=True, slots=True)
class NodePart:
    """One box's part of a job that spans several boxes: its node rank among them.

    The console starts every part with the same rendezvous id; the agent fills {node_rank},
    {nnodes} and {rdzv_id} from it, and torchrun's c10d rendezvous joins the parts.
    """

    rank: int
    nnodes: int
    rdzv_id: str
    hosts: tuple[str, ...] = ()
    """The console's names of the boxes, in node-rank order (for showing every box's part)."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job, started by the agent or found running (external)."""

    id: str
    name: str
    kind: str
    state: JobState
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
    restart_of: str | None = None
    """The job this one was started again in place of, under its restart policy."""
    restarts: int = 0
    """Restarts in its line within the policy's window, this one's own included."""
    restart_note: str | None = None
    """What the restart policy decided once it ended: restarting in 20 s, gave up, waits for
    disk space, not restarted because exit 2 means refused."""
    exit_reason: str | None = None
    """Why a failed job ended, in its own words: the last line it wrote before exiting with a
    code other than 0 (the runner's one-line reason, a traceback's last line), cut to
    MAX_EXIT_REASON_CHARS. None for a job that has not failed, or that wrote nothing."""
    node: NodePart | None = None
    """This box's part of a job that spans boxes; None for a job on one box."""


@dataclass(frozen=True, slots=True)
class LaunchParams:
    """Start configured job `job` (for `dataset` when it runs per dataset)."""

    job: str
    dataset: str | None = None
    argv: tuple[str, ...] | None = None
    """An edited argv for this launch only (still a list: never a shell string)."""
    force: bool = False
    """Start a hidden-states job even though its plan does not fit (refused with `no_room`)."""
    node: NodePart | None = None
    """For a job whose config names several boxes (`nodes`): this box's part, which only the
    console, which reaches every box, can give; such a job is refused without it."""


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
    outcome: StopOutcome
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
