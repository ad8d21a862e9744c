"""The Textual app: wiring only. It owns the host links; screens get frozen data and say what they want.

One HostConnection per host runs as a worker for the app's whole life, so a link never depends on
which screen is showing. Messages from the links update the HostView of their host; the screen
on display renders it. Every toast is sanitised and never read as markup: most of them carry
names and reasons from a host.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.markup import escape
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import DataTable
from textual.worker import Worker, WorkerState

from agent.protocol import (
    DatasetDetail,
    DetailParams,
    Event,
    JobEvent,
    LogChunk,
    Snapshot,
)
from console.config import HostConfig
from console.link.agent_link import LinkError
from console.link.deploy import FilePlan
from console.link.host_connection import BACKOFF_S, HostConnection, LinkState, Opener
from console.link.host_keys import OfferedKey
from console.model.host_view import HostView, headline, new_alerts
from console.model.safe_text import sanitise
from console.ui.actions.deploy import DeployActions
from console.ui.actions.evaluate import EvaluateActions
from console.ui.actions.generate import GenerateActions
from console.ui.actions.jobs import JobActions
from console.ui.commands import COMMANDS
from console.ui.log_file import attach_log_file, detach_log_file
from console.ui.messages import AgentEventReceived, LinkChanged, SnapshotReceived
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.events import EventsScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.logs import LogScreen
from console.ui.screens.pipeline import PipelineScreen
from console.ui.screens.trust import TrustScreen
from console.ui.themes import themes_dir

Pinner = Callable[[OfferedKey], Path]
LINK_WORKER = "link "
"""The name of a host's link worker is this and the host's name."""

log = logging.getLogger(__name__)


class ConsoleApp(GenerateActions, JobActions, DeployActions, EvaluateActions):
    """eagle-console: one dashboard over every configured host."""

    CSS_PATH = [themes_dir() / "base.tcss", themes_dir() / "dashboard.tcss"]
    TITLE = "eagle-console"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(c.key, c.action, c.description, show=c.show) for c in COMMANDS),
        Binding("colon", "command_palette", "Palette", show=False),
        # Any binding to command_palette stops Textual adding its own ctrl+p one: keep it here.
        Binding(
            App.COMMAND_PALETTE_BINDING, "command_palette", "Palette", show=False, priority=True
        ),
    ]

    def __init__(
        self,
        openers: dict[str, Opener],
        read_only: frozenset[str] = frozenset(),
        pinners: Mapping[str, Pinner] | None = None,
        clock: Callable[[], float] = time.time,
        theme: str = "textual-dark",
        monotonic: Callable[[], float] = time.monotonic,
        host_configs: Mapping[str, HostConfig] | None = None,
        log_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.log_path = log_path
        self._log_handler: logging.Handler | None = None
        self._link_failures: dict[str, int] = {}
        self.host_configs = dict(host_configs or {})
        self.plans: list[FilePlan] = []
        self.clock = clock
        self.initial_theme = theme
        self.read_only = read_only
        self.pinners = pinners or {}
        self.views = {
            name: HostView(name, LinkState(name, "connecting"), monotonic=monotonic)
            for name in openers
        }
        self.connections = {
            name: HostConnection(name, opener, self._state_changed, self._event_arrived)
            for name, opener in openers.items()
        }
        self.current = next(iter(openers))

    async def on_mount(self) -> None:
        """Start every link, show the dashboard, refresh ages once a second."""
        self.theme = self.initial_theme
        if self.log_path is not None:
            self._log_handler = attach_log_file(self.log_path)
        _ = self.push_screen(DashboardScreen())
        for name in self.connections:
            await self._start_link(name)
        self.set_interval(1.0, self._render_current)

    async def _start_link(self, host: str) -> None:
        connection = self.connections[host]
        await connection.close()  # a link left open by a worker that failed
        self.run_worker(
            connection.run(), name=LINK_WORKER + host, group="links", exit_on_error=False
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that failed is heard: its traceback logged, its link restarted or its error shown."""
        worker, error = event.worker, event.worker.error
        if event.state != WorkerState.ERROR or error is None:
            return
        log.error("worker %r failed", worker.name, exc_info=error)
        reason = f"{type(error).__name__}: {error}"
        if worker.group == "links":
            self._restart_link(worker.name.removeprefix(LINK_WORKER), reason)
            return
        where = f"; the traceback is in {self.log_path}" if self.log_path else ""
        self.notify(f"{worker.name} failed: {reason}{where}", severity="error", timeout=30)

    def _restart_link(self, host: str, reason: str) -> None:
        failures = self._link_failures[host] = self._link_failures.get(host, 0) + 1
        delay = BACKOFF_S[min(failures, len(BACKOFF_S)) - 1]
        detail = f"the link failed unexpectedly ({reason}); restarting in {delay:g} s"
        self.post_message(
            LinkChanged(LinkState(host, "down", detail, retry_at=time.time() + delay))
        )
        self.set_timer(delay, functools.partial(self._start_link, host))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast of plain text, whoever asks for it (a widget's markup=True included)."""
        super().notify(
            sanitise(message), title=sanitise(title), severity=severity, timeout=timeout,
            markup=False,
        )  # fmt: skip

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The command table in the palette, with every host to jump to."""
        yield from super().get_system_commands(screen)
        for command in COMMANDS:
            key = command.key.replace("question_mark", "?")
            yield SystemCommand(
                command.description,
                f"key {key}",
                functools.partial(self.run_action, command.action),
            )
        for name in self.views:
            shown = escape(sanitise(name))  # the palette reads titles as markup
            yield SystemCommand(
                f"Host {shown}", f"show {shown}", functools.partial(self.show_host, name)
            )

    def show_host(self, name: str) -> None:
        """Put host `name` on screen."""
        self.current = name
        self._render_current()

    async def on_unmount(self) -> None:
        """Close every link so no agent bridge is left behind."""
        for connection in self.connections.values():
            await connection.close()
        if self._log_handler is not None:
            detach_log_file(self._log_handler)

    # ------------------------------------------------------------ from the links

    def _state_changed(self, state: LinkState) -> None:
        self.post_message(LinkChanged(state))

    def _event_arrived(self, host: str, event: Event) -> None:
        if event.event == "snapshot" and isinstance(event.data, Snapshot):
            self.post_message(SnapshotReceived(host, event.data))
        else:
            self.post_message(AgentEventReceived(host, event))

    def on_snapshot_received(self, message: SnapshotReceived) -> None:
        """Keep the snapshot, toast alerts that are new, render it if its host is on screen."""
        view = self.views[message.host]
        for alert in new_alerts(view.snapshot, message.snapshot):
            self.notify(
                f"{message.host}: {alert.message}",
                severity="error" if alert.severity == "error" else "warning",
                timeout=10,
            )
            self.offer_evaluation(message.host, alert, message.snapshot.jobs)
        view.record_snapshot(message.snapshot)
        if message.host == self.current:
            self._render_current()

    def on_link_changed(self, message: LinkChanged) -> None:
        """Keep the state, and say so when a link is lost, refused or restored."""
        view = self.views[message.state.host]
        before, view.state = view.state.status, message.state
        after = message.state.status
        if after == "up":
            self._link_failures.pop(view.name, None)
        if before == "up" and after == "down":
            self.notify(
                f"{view.name}: link lost ({message.state.detail}); reconnecting", severity="warning"
            )
        elif before in ("down", "refused") and after == "up":
            self.notify(f"{view.name}: link restored")
        elif after == "refused" and before != "refused":
            self.notify(message.state.detail, severity="error", timeout=30)
            self._offer_trust(message.state)
        self._render_current()

    def on_agent_event_received(self, message: AgentEventReceived) -> None:
        """Log chunks go to an open log screen; job events become toasts."""
        event = message.event
        if isinstance(event.data, LogChunk):
            for screen in self.screen_stack:
                if isinstance(screen, LogScreen) and (screen.host, screen.log_name) == (
                    message.host,
                    event.data.name,
                ):
                    screen.append_chunk(event.data)
        elif isinstance(event.data, JobEvent):
            self.notify(f"{message.host}: {event.data.message}")

    def _offer_trust(self, state: LinkState) -> None:
        pinner = self.pinners.get(state.host)

        def answered(pin: bool | None) -> None:
            if pin and pinner is not None and state.offered_key is not None:
                path = pinner(state.offered_key)
                self.notify(f"{state.host}: pinned {state.offered_key.fingerprint} in {path}")
                self.connections[state.host].retry_now()

        _ = self.push_screen(
            TrustScreen(state.host, state.detail, state.offered_key if pinner else None), answered
        )

    def _render_current(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, DashboardScreen):
                others = [headline(v) for name, v in self.views.items() if name != self.current]
                screen.show(self.views[self.current], others, self.clock())

    # ------------------------------------------------------------ actions

    def action_next_host(self) -> None:
        """Show the next host."""
        names = list(self.views)
        self.show_host(names[(names.index(self.current) + 1) % len(names)])

    def action_pipeline(self) -> None:
        """The pipeline's stages and the next step."""
        snapshot = self.views[self.current].snapshot
        if snapshot is None:
            self.notify("no data from the host yet", severity="warning")
            return
        _ = self.push_screen(PipelineScreen(self.current, snapshot))

    def action_events(self) -> None:
        """What happened on the host, watched or not."""
        _ = self.push_screen(EventsScreen(self.current, self.connections[self.current].link))

    def action_help(self) -> None:
        """Every key."""
        _ = self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        """Dark or light."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"
        self._render_current()  # tables re-measure their columns in the new theme

    def action_reconnect(self) -> None:
        """Retry the link of the host on screen now."""
        self.connections[self.current].retry_now()

    async def action_logs(self) -> None:
        """The selected job's log, else the SGLang log, else the agent's own."""
        connection = self.connections[self.current]
        job_id = self._selected_job_id()
        snapshot = self.views[self.current].snapshot
        has_sglang = (
            snapshot is not None and snapshot.server is not None and snapshot.server.url is not None
        )
        name = (
            f"job:{job_id}"
            if job_id and not job_id.startswith("ext-")
            else ("sglang" if has_sglang else "agent")
        )
        screen = LogScreen(self.current, name)
        await self.push_screen(screen)
        try:
            await connection.follow_log(name, -256 * 1024)
        except LinkError as exc:
            self.notify(str(exc), severity="error")

    async def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a dataset opens its detail."""
        if event.data_table.id != "datasets" or event.row_key.value is None:
            return
        link = self.connections[self.current].link
        if link is None:
            self.notify("no link to the host right now", severity="warning")
            return
        try:
            detail: DatasetDetail = await link.request(
                "datasets.detail", DetailParams(event.row_key.value)
            )
        except LinkError as exc:
            self.notify(str(exc), severity="error")
            return
        _ = self.push_screen(DatasetScreen(self.current, detail))
