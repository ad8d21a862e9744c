"""The screen on display in a Pilot test: what it shows now (a table's cell, the host header),
and waiting for what it will show: a screen draws a frame or two after what it shows has arrived,
later on a loaded machine, so a fixed pause before an assertion is a guess."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from console.ui.app import ConsoleApp
from console.ui.widgets.host_header import HostHeader
from tests.support.waits import wait_until


async def wait_for(
    pilot: Pilot[Any], predicate: Callable[[], bool], timeout_s: float = 30.0
) -> None:
    """Until `predicate` holds and the screen on display has composed its widgets.

    A pushed screen is `app.screen` before its widgets are mounted: a query right after a wait
    for the screen alone would race its compose.
    """
    shown = await wait_until(
        lambda: predicate() and pilot.app.screen.is_mounted, timeout_s, 0.05, pilot.pause
    )
    assert shown, f"the screen never showed it; {describe(pilot.app)}"


def describe(app: object) -> str:
    """What the app showed when a wait gave up, for the failure message."""
    if not isinstance(app, ConsoleApp):
        return f"screen {type(getattr(app, 'screen', None)).__name__}"
    view = app.views[app.current]
    snapshot = view.snapshot
    jobs = [(j.name, j.state) for j in snapshot.jobs] if snapshot else []
    alerts = [a.kind for a in snapshot.alerts] if snapshot else []
    return f"screen {type(app.screen).__name__}, link {view.state.status} ({view.state.detail}), jobs {jobs}, alerts {alerts}"


def holds(condition: bool, shown: object = "") -> None:
    """Assert `condition` (for a lambda given to `eventually`), showing `shown` when it fails."""
    assert condition, shown


async def eventually(pilot: Pilot[Any], check: Callable[[], None], timeout_s: float = 20) -> None:
    """Until `check` passes (its assertions, as they are), or its last failure after `timeout_s`:
    a screen draws a frame or two after what it shows has arrived, later on a loaded machine."""
    if not await wait_until(lambda: _passes(check), timeout_s, 0.05, pilot.pause):
        check()


def _passes(check: Callable[[], None]) -> bool:
    try:
        check()
    except AssertionError:
        return False
    return True


def cell(app: ConsoleApp, table_id: str, row: str, column: str) -> str:
    tables = app.screen.query(f"#{table_id}")
    if not tables:
        return ""
    table: DataTable[object] = tables.first(DataTable)
    try:
        return str(table.get_cell(row, column))
    except CellDoesNotExist:
        return ""


def header(app: ConsoleApp) -> str:
    found = app.screen.query(HostHeader)
    return str(found.first().render()) if found else ""
