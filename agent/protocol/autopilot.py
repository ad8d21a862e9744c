"""The autopilot: the pipeline's remaining stages run in order by the agent, with nobody watching.

generate → export (its round trip a gate) → vocab → free the GPUs → hidden states → train →
serve with the drafter (and the baseline) → evaluate → the verdict. The agent moves it on from
what it observes; any console may start, pause and resume it, and all see where it stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AutopilotState = Literal["off", "running", "paused", "done"]
StageState = Literal["pending", "running", "done", "skipped", "failed"]
AutopilotAction = Literal["start", "pause", "resume"]
STAGE_NAMES = (
    "generate", "export", "vocab", "free gpus", "hidden states", "train", "export drafter", "serve",
    "evaluate",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class AutopilotStage:
    """One stage and where it stands."""

    name: str
    state: StageState
    detail: str = ""
    attempts: int = 0
    """Times the autopilot started this stage's job (a retry after a failure is the second)."""


@dataclass(frozen=True, slots=True)
class AutopilotStatus:
    """Where the autopilot stands."""

    state: AutopilotState
    stages: tuple[AutopilotStage, ...] = ()
    stage: str | None = None
    """The stage under way (or paused at); None when off or done."""
    waiting_for: str = ""
    """What the current stage waits for, in words."""
    restarts: int = 0
    """Job restarts (under their restart policy) since the autopilot started."""
    started_at: float | None = None
    paused_reason: str | None = None
    """Why it paused, with the command that resumes it."""
    verdict: str | None = None

    @property
    def next_stage(self) -> str | None:
        """The first stage after the current one that is still to do."""
        names = [s.name for s in self.stages]
        if self.stage not in names:
            return None
        later = self.stages[names.index(self.stage) + 1 :]
        return next((s.name for s in later if s.state == "pending"), None)


@dataclass(frozen=True, slots=True)
class AutopilotParams:
    """Start, pause or resume the autopilot."""

    action: AutopilotAction


@dataclass(frozen=True, slots=True)
class AutopilotStatusParams:
    """Where the autopilot stands."""


AutostartAction = Literal["install", "remove"]


@dataclass(frozen=True, slots=True)
class AutostartParams:
    """Install or remove the entry that starts the agent when the box boots."""

    action: AutostartAction


@dataclass(frozen=True, slots=True)
class AutostartStatusParams:
    """Whether the agent starts when the box boots."""


@dataclass(frozen=True, slots=True)
class AutostartStatus:
    """The boot entry: whether it is installed, and the lines that start the agent."""

    installed: bool
    cron_line: str
    """The crontab line (@reboot ...) that starts the agent at boot."""
    command: str
    """The same command for a container's entrypoint or an init script."""
    cron_available: bool
    detail: str
    """One line: what is set up, or what to do."""
