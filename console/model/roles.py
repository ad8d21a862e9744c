"""The role each state plays on screen: the one map from a status to what it means to a watcher.

A role says how loud a state is (needs a person, going well, nothing to do); the UI's skin
(`console/ui/themes.py`) gives each role its look, as a k9s skin gives each resource state a
colour. Widgets look a state's role up here and never spell a style. Every value of the
protocol's state types has a role (tests/console/test_roles.py fails on one without).
No Textual and no Rich here.
"""

from __future__ import annotations

from typing import Literal

from agent.protocol import DatasetProgress, DatasetStatus, JobState, Severity

Role = Literal[
    "critical", "error", "attention", "warning", "healthy", "passed", "info", "muted", "plain"
]
"""critical: needs a person now; error: broken, told elsewhere too; attention: goes wrong unless
acted on; warning: not going as it should; healthy: doing what it should; passed: left out on
purpose; info: worth a look, nothing wrong; muted: nothing to do; plain: no colour."""

DATASET_ROLES: dict[DatasetStatus, Role] = {
    "pending": "plain", "running": "healthy", "waiting_for_server": "warning",
    "stalled": "warning", "complete": "info", "over_budget": "critical", "idle": "plain",
    "error": "critical",
}  # fmt: skip
JOB_ROLES: dict[JobState, Role] = {
    "starting": "plain", "running": "healthy", "stopping": "warning", "stopped": "muted",
    "exited": "plain", "failed": "critical", "killed": "warning", "lost": "error",
}  # fmt: skip
ALERT_ROLES: dict[Severity, Role] = {"error": "critical", "warning": "warning", "info": "info"}
"""An alert's severity in the alert strip."""
EVENT_ROLES: dict[str, Role] = {"error": "error", "warning": "warning", "info": "plain"}
"""An event's severity (a `Severity`) on the timeline: quieter than a live alert."""
STAGE_ROLES: dict[str, Role] = {
    "pending": "muted", "not started": "muted", "running": "info", "paused": "attention",
    "done": "healthy", "skipped": "passed", "failed": "critical",
}  # fmt: skip
"""A pipeline or autopilot stage: every `StageState`, and the pipeline's own words."""
DEPLOY_ROLES: dict[str, Role] = {
    "changed": "warning", "new": "info", "missing-locally": "error", "unchanged": "muted",
}  # fmt: skip
"""A mapped file's drift (`FilePlan.status`)."""
HEALTH_ROLES: dict[bool, Role] = {True: "healthy", False: "error"}
"""The model server's health word."""


def dataset_role(progress: DatasetProgress, server_up: bool = False) -> Role:
    """A dataset's status role; one waiting for a server that is up again is resuming (info)."""
    if progress.status == "waiting_for_server" and server_up:
        return "info"
    return DATASET_ROLES[progress.status]
