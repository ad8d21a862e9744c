"""The Textual app: wiring only. It owns the host links; screens get frozen data and say what they want.

One HostConnection per host runs as a worker for the app's whole life, so a link never depends on
which screen is showing. Messages from the links update the HostView of their host; the app
publishes what changed on its signals (`console/ui/signals.py`) and the screens mounted at the
time subscribe: the app never looks a screen up to feed it. A screen says what the user wants with an intent (`console/ui/intents.py`)
naming the host it was asked on; the app acts on each in one handler, through the action groups
in `console/ui/actions/`. Every toast is sanitised and never read as markup: most of them carry
names and reasons from a host.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from textual.worker import Worker, WorkerState

from agent.protocol import Event, JobEvent, LogChunk, OperationInfo, Snapshot
from console.config import ConsoleSettings, HostConfig
from console.link.host_connection import BACKOFF_S, HostConnection, LinkState, Opener
from console.link.host_keys import OfferedKey
from console.link.last_seen import LastSeen
from console.model.config_drift import drift_text
from console.model.host_view import HostView, headline, new_alerts
from console.model.operations_view import ALERTS_TOLD_HERE
from console.model.safe_text import sanitise
from console.model.toasts import Toast
from console.ui.actions.autopilot import AutopilotActions
from console.ui.actions.away import AwayActions
from console.ui.actions.base import Hosts
from console.ui.actions.deploy import DeployActions
from console.ui.actions.evaluate import EvaluateActions
from console.ui.actions.generate import GenerateActions
from console.ui.actions.jobs import JobActions
from console.ui.actions.views import ViewActions
from console.ui.alarm import Alarm, terminal_writer
from console.ui.alert_toasts import AlertToasts
from console.ui.commands import APP_COMMANDS, bindings, key_label, keys_of
from console.ui.intents import (
    AutopilotRequested,
    DatasetDetailRequested,
    DeployAllRequested,
    DeployRequested,
    DiffRequested,
    EvaluateRequested,
    ExportReportRequested,
    GenerateAllRequested,
    GenerateRequested,
    LaunchRequested,
    LogsRequested,
    PendingDiffRequested,
    PipelineRequested,
    RedeployRequested,
    RollbackRequested,
    StopRequested,
)
from console.ui.log_file import attach_log_file, detach_log_file
from console.ui.messages import AgentEventReceived, LinkChanged, SnapshotReceived
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.events import EventsScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.trust import TrustScreen
from console.ui.signals import ConsoleSignals, HostShown, LogChunkReceived
from console.ui.themes import themes_dir

Pinner = Callable[[OfferedKey], Path]
TOAST_LEVELS: dict[str, SeverityLevel] = {
    "error": "error", "warning": "warning", "info": "information",
}  # fmt: skip
LINK_WORKER = "link "
"""The name of a host's link worker is this and the host's name."""
LINKS_END_S = 15.0
"""How long quitting waits for the links still opening to end their attach or SSH connection."""

log = logging.getLogger(__name__)


class ConsoleApp(App[None]):
    """eagle-console: one dashboard over every configured host."""

    CSS_PATH = [themes_dir() / "base.tcss", themes_dir() / "dashboard.tcss"]
    TITLE = "eagle-console"
    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(APP_COMMANDS),
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
        settings: ConsoleSettings | None = None,
        state_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.log_path = log_path
        self._log_handler: logging.Handler | None = None
        self._link_failures: dict[str, int] = {}
        self.clock = clock
        self.initial_theme = theme
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
        self.signals = ConsoleSignals(self)
        hosts = Hosts(self.views, self.connections, dict(host_configs or {}), read_only)
        self.job_actions = JobActions(self, hosts)
        self.generate_actions = GenerateActions(self, hosts)
        self.deploy_actions = DeployActions(self, hosts, self.signals.deploy_planned)
        self.evaluate_actions = EvaluateActions(self, hosts)
        self.autopilot_actions = AutopilotActions(self, hosts)
        self.view_actions = ViewActions(self, hosts)
        self.away_actions = AwayActions(self, hosts, LastSeen(state_dir) if state_dir else None)
        self.alarm = Alarm(settings or ConsoleSettings(), terminal_writer(self))
        self.alert_toasts = AlertToasts(self)

    async def on_mount(self) -> None:
        """Start every link, show the dashboard, refresh ages once a second."""
        self.theme = self.initial_theme
        if self.log_path is not None:
            self._log_handler = attach_log_file(self.log_path)
        _ = self.push_screen(DashboardScreen(self.current))
        for name in self.connections:
            await self._start_link(name)
        self.set_interval(1.0, self._publish_host_shown)

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
        """The keys of the screen the palette was opened over, with every host to jump to."""
        yield from super().get_system_commands(screen)
        for command in keys_of(screen):
            if not command.bound:
                continue  # a widget's own key (a table's enter): it acts only where it has focus
            runner = self if command in APP_COMMANDS else screen  # as the key would, on that screen
            yield SystemCommand(
                command.description,
                f"key {key_label(command.key)}",
                functools.partial(self.run_action, command.action, runner),
            )
        for name in self.views:
            shown = escape(sanitise(name))  # the palette reads titles as markup
            yield SystemCommand(
                f"Host {shown}", f"show {shown}", functools.partial(self.show_host, name)
            )

    def show_host(self, name: str) -> None:
        """Put host `name` on screen."""
        self.current = name
        self._publish_host_shown()

    async def on_unmount(self) -> None:
        """Close every link, and end those still opening, so no agent bridge is left behind."""
        for connection in self.connections.values():
            await connection.close()
        # Textual cancels workers on exit without waiting: a link cancelled mid-hello would kill
        # its attach (or SSH connection) after the event loop ended, or never
        opening = self.workers.cancel_group(self, "links")
        ended = asyncio.gather(*(worker.wait() for worker in opening), return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended, LINKS_END_S)
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
        fresh = new_alerts(view.snapshot, message.snapshot, view.stops_asked)
        self.alert_toasts.heard(message.host, [a for a in fresh if a.kind not in ALERTS_TOLD_HERE])
        self._tell(view.operations_seen.heard(message.host, message.snapshot.operations))
        for job in view.pids_found(message.snapshot):
            where = f" on {job.dataset}" if job.dataset else ""
            self.notify(f"{message.host}: {job.name}{where} runs as pid {job.pid}")
        for alert in fresh:
            self.evaluate_actions.offer_evaluation(message.host, alert, message.snapshot)
        self.alarm.heard(message.host, message.snapshot)
        self.away_actions.snapshot_seen(message.host, message.snapshot)
        view.record_snapshot(message.snapshot)
        self.job_actions.nodes.watch()
        if message.host == self.current:
            self._publish_host_shown()

    def on_link_changed(self, message: LinkChanged) -> None:
        """Keep the state, and say so when a link is lost, refused or restored."""
        view = self.views[message.state.host]
        before = view.state.status
        view.link_changed(message.state)
        self.away_actions.link_changed(message.state)
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
        if after == "up" and before != "up" and message.state.config_differences:
            drift = drift_text(view.name, message.state.config_differences)
            self.notify(drift, severity="warning", timeout=30)
        self._publish_host_shown()

    def on_agent_event_received(self, message: AgentEventReceived) -> None:
        """Log chunks go to whichever log screens are mounted; job events become toasts."""
        event = message.event
        if isinstance(event.data, LogChunk):
            self.signals.log_chunk_received.publish(LogChunkReceived(message.host, event.data))
        elif isinstance(event.data, JobEvent):
            self.notify(f"{message.host}: {event.data.message}", timeout=10)  # as alerts
        elif isinstance(event.data, OperationInfo):
            seen = self.views[message.host].operations_seen
            self._tell(seen.heard(message.host, [event.data]))

    def _tell(self, toasts: list[Toast]) -> None:
        for toast in toasts:
            self.notify(toast.message, severity=TOAST_LEVELS[toast.severity], timeout=15)

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

    def _publish_host_shown(self) -> None:
        """The host in focus, for whichever dashboard is mounted to render."""
        now = self.clock()
        others = [headline(v, now) for name, v in self.views.items() if name != self.current]
        self.signals.host_shown.publish(HostShown(self.views[self.current], others, now))

    # ------------------------------------------------------------ actions

    def action_help_quit(self) -> None:
        """Ctrl+C quits, as q does and as it does in k9s and lazydocker.

        Textual binds it to a toast that names the quit key instead; in a text field Ctrl+C is
        the field's own (copy), which comes first.
        """
        self.exit()

    def action_next_host(self) -> None:
        """Show the next host (with one host, say how to watch more)."""
        names = list(self.views)
        if len(names) == 1:
            self.notify(
                f"{self.current} is the only host in the config: add a [hosts.NAME] table "
                "for each box to watch, then h moves between them",
                timeout=6,
            )
            return
        self.show_host(names[(names.index(self.current) + 1) % len(names)])

    def action_events(self) -> None:
        """What happened on the host, watched or not."""
        _ = self.push_screen(EventsScreen(self.current, self.connections[self.current].link))

    def action_help(self) -> None:
        """Every key of the screen on display."""
        _ = self.push_screen(HelpScreen(keys_of(self.screen)))

    def action_toggle_theme(self) -> None:
        """Dark or light."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"
        self._publish_host_shown()  # tables re-measure their columns in the new theme

    def action_reconnect(self) -> None:
        """Retry the link of the host on screen now, and say so."""
        host = self.current
        status = self.views[host].state.status
        if status in ("up", "connecting"):
            self.notify(f"{host}: the link is {status}; nothing to reconnect")
            return
        self.connections[host].retry_now()
        self.notify(f"{host}: reconnecting now")

    # ------------------------------------------------------------ intents, one handler each

    def on_stop_requested(self, intent: StopRequested) -> None:
        """k: confirm, then stop."""
        self.job_actions.stop(intent)

    async def on_launch_requested(self, intent: LaunchRequested) -> None:
        """v, t, s, x: start a job of a kind."""
        await self.job_actions.launch(intent)

    async def on_generate_requested(self, intent: GenerateRequested) -> None:
        """g: generate on one dataset."""
        await self.generate_actions.generate(intent)

    def on_generate_all_requested(self, intent: GenerateAllRequested) -> None:
        """G: generate on every dataset still to do."""
        self.generate_actions.generate_all(intent)

    async def on_deploy_requested(self, intent: DeployRequested) -> None:
        """d: the deploy screen."""
        await self.deploy_actions.show_drift(intent)

    async def on_diff_requested(self, intent: DiffRequested) -> None:
        """One file's diff."""
        await self.deploy_actions.show_diff(intent)

    async def on_pending_diff_requested(self, _: PendingDiffRequested) -> None:
        """What the redeploy being confirmed would deploy."""
        await self.deploy_actions.show_pending_diff()

    def on_deploy_all_requested(self, intent: DeployAllRequested) -> None:
        """D: deploy every changed file."""
        self.deploy_actions.deploy_all(intent)

    async def on_rollback_requested(self, intent: RollbackRequested) -> None:
        """b: roll one file back."""
        await self.deploy_actions.rollback(intent)

    async def on_redeploy_requested(self, intent: RedeployRequested) -> None:
        """R: kill, deploy, restart."""
        await self.deploy_actions.redeploy(intent)

    async def on_evaluate_requested(self, intent: EvaluateRequested) -> None:
        """B: measure the drafter."""
        await self.evaluate_actions.evaluate(intent)

    def on_export_report_requested(self, intent: ExportReportRequested) -> None:
        """X: the export's report."""
        self.evaluate_actions.export_report(intent)

    async def on_logs_requested(self, intent: LogsRequested) -> None:
        """l: follow a log."""
        await self.view_actions.logs(intent)

    def on_autopilot_requested(self, intent: AutopilotRequested) -> None:
        """A: start, pause or resume the autopilot."""
        self.autopilot_actions.toggle(intent)

    def on_pipeline_requested(self, intent: PipelineRequested) -> None:
        """p: the pipeline's stages."""
        self.view_actions.pipeline(intent)

    async def on_dataset_detail_requested(self, intent: DatasetDetailRequested) -> None:
        """Enter on a dataset: its detail."""
        await self.view_actions.dataset_detail(intent)
