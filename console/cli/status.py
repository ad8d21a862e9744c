"""`eagle-console status`: one snapshot per host, as a table for people or JSON for scripts.

The tables hold host text (dataset names, alerts): every cell is a sanitised `Text`, never markup.
JSON escapes every control character itself.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.protocol import SNAPSHOT, Snapshot, SnapshotParams, to_wire
from console.config import HostConfig
from console.link.agent_link import LinkError
from console.link.host_link import open_host_link
from console.model.autopilot_view import autopilot_line
from console.model.config_drift import drift_text
from console.model.operations_view import under_way
from console.model.pipeline_view import stages
from console.model.safe_text import literal, sanitise


@dataclass(frozen=True, slots=True)
class HostStatus:
    """What one host said, or why it could not be asked."""

    host: str
    snapshot: Snapshot | None
    agent_version: str | None = None
    error: str | None = None
    config_differences: tuple[str, ...] = ()
    """How this console's config differs from the one the host runs (and keeps)."""

    @property
    def failed(self) -> bool:
        """True when the host could not be reached or reports an error a script must notice."""
        if self.snapshot is None:
            return True
        return any(alert.kind == "datasets_root" for alert in self.snapshot.alerts)

    def to_json(self) -> dict[str, Any]:
        """The object `status --json` prints for this host: a contract scripts rely on."""
        if self.snapshot is None:
            return {"host": self.host, "link": "down", "error": self.error}
        head = {
            "host": self.host, "link": "up", "agent_version": self.agent_version,
            "config_differences": list(self.config_differences),
        }  # fmt: skip
        body: dict[str, Any] = to_wire(self.snapshot)
        return head | body


async def fetch_status(host: HostConfig) -> HostStatus:
    """Connect to one host and take one snapshot."""
    try:
        link = await open_host_link(host)
    except LinkError as exc:
        return HostStatus(host.name, None, error=str(exc))
    try:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        version = link.hello_result.agent_version if link.hello_result else None
        return HostStatus(host.name, snapshot, version, config_differences=link.config_differences)
    except LinkError as exc:
        return HostStatus(host.name, None, error=str(exc))
    finally:
        await link.close()


async def fetch_all(hosts: list[HostConfig]) -> list[HostStatus]:
    """Every host's status, asked in parallel so one slow host does not hold up the rest."""
    return list(await asyncio.gather(*(fetch_status(host) for host in hosts)))


def print_json(statuses: list[HostStatus], console: Console) -> None:
    """One JSON object per host, one per line."""
    for status in statuses:
        console.file.write(json.dumps(status.to_json()) + "\n")


def print_tables(statuses: list[HostStatus], console: Console) -> None:
    """A table of datasets per host that answered, and its alerts."""
    for status in statuses:
        if status.failed or status.snapshot is None:
            continue  # its one line goes to stderr
        console.print(datasets_table(status.host, status.snapshot))
        if status.config_differences:
            drift = drift_text(status.host, status.config_differences)
            console.print(Text.assemble("  ", literal(drift, "yellow")))
        for line in box_lines(status.snapshot):
            console.print(literal(f"  {line}"))
        for alert in status.snapshot.alerts:
            console.print(
                Text.assemble(
                    "  ",
                    literal(alert.severity, _colour(alert.severity)),
                    ": ",
                    literal(alert.message),
                )  # fmt: skip
            )


def box_lines(snapshot: Snapshot) -> list[str]:
    """What the box is doing by itself: the autopilot, operations under way, the capture.

    The capture: the hidden-states plan, or what the job has written against it, where one is
    configured.
    """
    line = autopilot_line(snapshot.autopilot)
    return ([line] if line else []) + under_way(snapshot.operations) + _hidden_states(snapshot)


def _hidden_states(snapshot: Snapshot) -> list[str]:
    if snapshot.hidden_states_plan is None:
        return []
    stage = next((s for s in stages(snapshot) if s.name == "hidden states"), None)
    return [] if stage is None else [f"hidden states ({stage.state}): {stage.detail}"]


def datasets_table(host: str, snapshot: Snapshot) -> Table:
    """The datasets of one snapshot as a Rich table."""
    table = Table(
        title=Text(sanitise(f"{host} — {snapshot.datasets_root or 'no datasets root configured'}"))
    )
    for column in ("dataset", "responses", "prompts", "tokens", "budget", "status"):
        table.add_column(column, justify="left" if column in ("dataset", "status") else "right")
    for item in snapshot.datasets:
        budget = f"{item.budget:,}" if item.budget is not None else "—"
        table.add_row(
            literal(item.name), f"{item.responses:,}", f"{item.prompts:,}", f"{item.tokens:,}",
            budget, literal(item.status),
        )  # fmt: skip
    return table


def _colour(severity: str) -> str:
    return {"error": "red", "warning": "yellow"}.get(severity, "cyan")
