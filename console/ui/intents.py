"""What the user asked for: messages a screen posts and the app acts on, one handler each.

Each carries the host it was asked on, captured when the key was pressed, and whatever the
screen had selected then: by the time the app acts (after a confirm, say), the screen may show
another host or another row, and the action must not follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from agent.protocol import DatasetProgress, JobInfo


@dataclass
class HostIntent(Message):
    """Something asked of one host."""

    host: str


@dataclass
class GenerateRequested(HostIntent):
    """g: start generation on the dataset under the cursor (None: nothing selected)."""

    dataset: DatasetProgress | None


@dataclass
class GenerateAllRequested(HostIntent):
    """G: start generation on every dataset still to do."""


@dataclass
class LogsRequested(HostIntent):
    """l: follow the selected job's log (None: the SGLang log, else the agent's)."""

    job_id: str | None


@dataclass
class StopRequested(HostIntent):
    """k: stop the selected job (None: nothing selected)."""

    job: JobInfo | None


@dataclass
class RedeployRequested(HostIntent):
    """R: kill, deploy and restart the selected job (None: nothing selected)."""

    job: JobInfo | None


@dataclass
class DeployRequested(HostIntent):
    """d: the drift of every mapped file."""


@dataclass
class LaunchRequested(HostIntent):
    """v, t, s, x: start the configured job of a kind."""

    kind: str


@dataclass
class ExportReportRequested(HostIntent):
    """X: the latest export's quality report."""


@dataclass
class EvaluateRequested(HostIntent):
    """B: serve the drafter and measure it."""


@dataclass
class PipelineRequested(HostIntent):
    """p: the pipeline's stages."""


@dataclass
class AutopilotRequested(HostIntent):
    """A: start, pause or resume the autopilot, as its state calls for."""


@dataclass
class DatasetDetailRequested(HostIntent):
    """Enter on a dataset: its detail."""

    dataset: str


@dataclass
class DiffRequested(HostIntent):
    """Enter on the deploy screen: one file's diff."""

    remote: str


@dataclass
class DeployAllRequested(HostIntent):
    """D on the deploy screen: deploy every changed file."""


@dataclass
class RollbackRequested(HostIntent):
    """b on the deploy screen: put back one file's previous version."""

    remote: str


@dataclass
class PendingDiffRequested(Message):
    """ctrl+d in the redeploy modal: the diff of every file the redeploy would deploy."""
