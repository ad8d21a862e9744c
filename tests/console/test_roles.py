"""Every state a table shows has a role, every role a look, and no widget spells a style itself.

A status added to the protocol (a `DatasetStatus`, a `JobState`…) fails here until it has a role
in console/model/roles.py: a dataset in `error` once had no colour at all.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from agent import protocol
from console.link.deploy import FilePlan
from console.model import roles
from console.model.operations_view import END_SEVERITY
from console.ui.themes import SKIN

UI = Path(__file__).resolve().parents[2] / "console" / "ui"
STYLE_WORDS = {"bold", "dim", "italic", "red", "green", "yellow", "cyan", "blue", "magenta"}


def test_every_protocol_state_has_a_role() -> None:
    assert set(get_args(protocol.DatasetStatus)) == set(roles.DATASET_ROLES)
    assert set(get_args(protocol.JobState)) == set(roles.JOB_ROLES)
    assert set(get_args(protocol.Severity)) == set(roles.ALERT_ROLES) == set(roles.EVENT_ROLES)
    assert set(get_args(protocol.StageState)) | {"not started", "paused"} == set(roles.STAGE_ROLES)


def test_every_drift_of_a_file_has_a_role() -> None:
    plans = [FilePlan(None, "/r", None, "a"), FilePlan(Path("l"), "/r", "a", None),
             FilePlan(Path("l"), "/r", "a", "a"), FilePlan(Path("l"), "/r", "a", "b")]  # fmt: skip
    assert {plan.status for plan in plans} == set(roles.DEPLOY_ROLES)


def test_every_ended_operation_is_told_at_a_severity() -> None:
    """Operations reach the screen as toasts: the toast's severity is their role."""
    assert set(get_args(protocol.OperationState)) - {"running"} == set(END_SEVERITY)


def test_every_role_has_a_look_and_error_is_loud() -> None:
    assert set(get_args(roles.Role)) == set(SKIN)
    errored = protocol.DatasetProgress("B1", 10, 3, 30, 100, status="error")
    assert SKIN[roles.dataset_role(errored)] == "bold red"


def test_a_run_waiting_for_a_server_that_is_back_is_resuming() -> None:
    waiting = protocol.DatasetProgress("B1", 10, 3, 30, 100, status="waiting_for_server")
    assert roles.dataset_role(waiting) == "warning"
    assert roles.dataset_role(waiting, server_up=True) == "info"


def test_no_widget_spells_a_colour_outside_the_skin() -> None:
    spelt = [
        f"{path.relative_to(UI)}:{node.lineno}: {node.value!r}"
        for path in UI.rglob("*.py") if path.name != "themes.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _colour(node.value)
    ]  # fmt: skip
    assert not spelt


def _colour(text: str) -> bool:
    """A Rich style with a colour or dim in it (bold alone is a title's, not a state's)."""
    words = set(text.split())
    return words <= STYLE_WORDS and bool(words - {"bold", "italic"})
