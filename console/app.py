"""The Textual app: wiring only. It owns the host links; screens get frozen data and say what they want.

One HostSession per host runs as a worker for the app's whole life, so a link never depends on
which screen is showing. Messages from the links update the HostView of their host; the screen
on display renders it.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable

from agent.protocol import (
    DatasetDetail,
    DetailParams,
    Event,
    JobEvent,
    JobInfo,
    LaunchParams,
    LogChunk,
    Snapshot,
    StopParams,
    StopResult,
)
from console.bundle import local_bundle
from console.commands import COMMANDS
from console.config import HostConfig, SshTarget
from console.deploy import FilePlan, deploy, plan_deploy, rollback, unified_diff
from console.host_keys import OfferedKey
from console.host_view import HostView, headline, new_alerts
from console.hosts import HostSession, LinkState, Opener
from console.link import AgentLink, AgentRequestError, LinkError
from console.messages import AgentEventReceived, LinkChanged, SnapshotReceived
from console.redeploy import redeploy
from console.screens.confirm import ConfirmScreen
from console.screens.dashboard import DashboardScreen
from console.screens.dataset import DatasetScreen
from console.screens.deploy import DeployScreen, DiffScreen
from console.screens.help import HelpScreen
from console.screens.logs import LogScreen
from console.screens.pipeline import PipelineScreen
from console.screens.redeploy import RedeployScreen
from console.screens.trust import TrustScreen
from console.themes import themes_dir

STOP_TIMEOUT_S = 600.0
Pinner = Callable[[OfferedKey], Path]


class ConsoleApp(App[None]):
    """eagle-console: one dashboard over every configured host."""

    CSS_PATH = [themes_dir() / "base.tcss", themes_dir() / "dashboard.tcss"]
    TITLE = "eagle-console"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(c.key, c.action, c.description, show=c.show) for c in COMMANDS),
        Binding("colon", "command_palette", "Palette", show=False),
    ]

    def __init__(
        self,
        openers: dict[str, Opener],
        read_only: frozenset[str] = frozenset(),
        pinners: Mapping[str, Pinner] | None = None,
        clock: Callable[[], float] = time.time,
        theme: str = "textual-dark",
        host_configs: Mapping[str, HostConfig] | None = None,
    ) -> None:
        super().__init__()
        self.host_configs = dict(host_configs or {})
        self.plans: list[FilePlan] = []
        self.clock = clock
        self.initial_theme = theme
        self.read_only = read_only
        self.pinners = pinners or {}
        self.views = {name: HostView(name, LinkState(name, "connecting")) for name in openers}
        self.sessions = {
            name: HostSession(name, opener, self._state_changed, self._event_arrived)
            for name, opener in openers.items()
        }
        self.current = next(iter(openers))

    def on_mount(self) -> None:
        """Start every link, show the dashboard, refresh ages once a second."""
        self.theme = self.initial_theme
        _ = self.push_screen(DashboardScreen())
        for name, session in self.sessions.items():
            self.run_worker(session.run(), name=f"link {name}", group="links", exit_on_error=False)
        self.set_interval(1.0, self._render_current)

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
            yield SystemCommand(
                f"Host {name}", f"show {name}", functools.partial(self.show_host, name)
            )

    def show_host(self, name: str) -> None:
        """Put host `name` on screen."""
        self.current = name
        self._render_current()

    async def on_unmount(self) -> None:
        """Close every link so no agent bridge is left behind."""
        for session in self.sessions.values():
            await session.close()

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
        view.take(message.snapshot, self.clock())
        if message.host == self.current:
            self._render_current()

    def on_link_changed(self, message: LinkChanged) -> None:
        """Keep the state, and say so when a link is lost, refused or restored."""
        view = self.views[message.state.host]
        before, view.state = view.state.status, message.state
        after = message.state.status
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
                    screen.take(event.data)
        elif isinstance(event.data, JobEvent):
            self.notify(f"{message.host}: {event.data.message}")

    def _offer_trust(self, state: LinkState) -> None:
        pinner = self.pinners.get(state.host)

        def answered(pin: bool | None) -> None:
            if pin and pinner is not None and state.offered_key is not None:
                path = pinner(state.offered_key)
                self.notify(f"{state.host}: pinned {state.offered_key.fingerprint} in {path}")
                self.sessions[state.host].retry_now()

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

    def action_help(self) -> None:
        """Every key."""
        _ = self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        """Dark or light."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"
        self._render_current()  # tables re-measure their columns in the new theme

    def action_reconnect(self) -> None:
        """Retry the link of the host on screen now."""
        self.sessions[self.current].retry_now()

    async def action_logs(self) -> None:
        """The selected job's log, else the SGLang log, else the agent's own."""
        session = self.sessions[self.current]
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
            await session.follow_log(name, -256 * 1024)
        except LinkError as exc:
            self.notify(str(exc), severity="error")

    def action_stop_job(self) -> None:
        """Stop the selected job after a confirm that says what will happen."""
        if self.current in self.read_only:
            self.notify(
                f"{self.current} is read-only: no job can be stopped from here", severity="warning"
            )
            return
        job = self._selected_job()
        if job is None:
            self.notify("select a job first (the jobs table)", severity="warning")
            return
        self._offer_stop(job)

    async def _stop(self, job_id: str, name: str) -> None:
        link = self.sessions[self.current].link
        if link is None:
            self.notify("no link to the host right now", severity="error")
            return
        started = time.monotonic()
        try:
            result: StopResult = await link.request(
                "jobs.stop", StopParams(job_id), idempotency_key=f"stop-{secrets.token_hex(6)}",
                timeout_s=STOP_TIMEOUT_S,
            )  # fmt: skip
        except LinkError as exc:
            self.notify(f"stop of {name} failed: {exc}", severity="error")
            return
        steps = " → ".join(step.action for step in result.steps) or "nothing to signal"
        self.notify(f"{name}: {result.outcome} ({steps}) in {time.monotonic() - started:.1f} s")

    async def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a dataset opens its detail."""
        if event.data_table.id != "datasets" or event.row_key.value is None:
            return
        link = self.sessions[self.current].link
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

    # ------------------------------------------------------------ deploy and redeploy

    def _mutable_link(self) -> AgentLink | None:
        if self.current in self.read_only:
            self.notify(
                f"{self.current} is read-only: nothing can be changed from here", severity="warning"
            )
            return None
        link = self.sessions[self.current].link
        if link is None:
            self.notify("no link to the host right now", severity="warning")
        return link

    async def _plan(self, link: AgentLink) -> list[FilePlan] | None:
        config = self.host_configs.get(self.current)
        if config is None or not config.deploy:
            return []
        try:
            self.plans = await plan_deploy(link, config.deploy)
        except LinkError as exc:
            self.notify(str(exc), severity="error")
            return None
        return self.plans

    async def action_deploy_screen(self) -> None:
        """The drift of every mapped file."""
        link = self._mutable_link()
        if link is None or (plans := await self._plan(link)) is None:
            return
        if not plans:
            self.notify(
                f"no [[hosts.{self.current}.deploy]] mappings configured", severity="warning"
            )
            return
        hello = link.hello_result
        ships = local_bundle().sha256
        bundle = (
            f"agent bundle {ships[:12]} (the host runs it)"
            if hello is not None and hello.bundle_sha256 == ships
            else f"agent bundle: host runs {(hello.bundle_sha256 if hello else '?')[:12]}, console ships {ships[:12]}"
        )
        _ = self.push_screen(DeployScreen(self.current, plans, bundle))

    async def action_show_diff(self, remote: str) -> None:
        """One file's diff."""
        link = self.sessions[self.current].link
        plan = next((p for p in self.plans if p.remote == remote), None)
        if link is not None and plan is not None:
            _ = self.push_screen(DiffScreen(await unified_diff(link, plan)))

    async def action_show_pending_diff(self) -> None:
        """The diff of every file a redeploy would deploy."""
        link = self.sessions[self.current].link
        if link is not None:
            diffs = [
                await unified_diff(link, plan) for plan in self.plans if plan.status == "changed"
            ]
            _ = self.push_screen(DiffScreen("".join(diffs)))

    def action_deploy_all(self) -> None:
        """Deploy every changed file, after a confirm."""
        pending = [plan for plan in self.plans if plan.needs_deploy]
        if not pending:
            self.notify("nothing to deploy: every file is unchanged")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(self._deploy(pending), group="actions", exit_on_error=False)

        listing = "\n".join(f"{plan.status}: {plan.remote}" for plan in pending)
        _ = self.push_screen(
            ConfirmScreen(f"Deploy {len(pending)} file(s)?", listing, "Deploy"), confirmed
        )

    async def _deploy(self, plans: list[FilePlan]) -> None:
        link = self._mutable_link()
        if link is None:
            return
        try:
            results = await deploy(link, plans)
        except LinkError as exc:
            self.notify(str(exc), severity="error", timeout=20)
            return
        self.notify(f"deployed {len(results)} file(s)")
        if isinstance(self.screen, DeployScreen):
            _ = self.screen.dismiss(None)

    async def action_rollback_file(self, remote: str) -> None:
        """Put back the previous version of one file."""
        link = self._mutable_link()
        if link is None:
            return
        try:
            result = await rollback(link, remote)
        except LinkError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"rolled back {result.target}")

    async def action_redeploy(self) -> None:
        """Kill, deploy and restart the selected job (or the job writing the selected dataset)."""
        link = self._mutable_link()
        job = self._selected_job()
        if link is None:
            return
        if job is None or job.external:
            self.notify("select one of the agent's jobs first (the jobs table)", severity="warning")
            return
        if (plans := await self._plan(link)) is None:
            return
        files = (
            "\n".join(f"  {p.status}: {p.remote}" for p in plans if p.needs_deploy)
            or "  (no file differs)"
        )
        text = f"{self._stop_consequences(job.id)}\nFiles that will be deployed (ctrl+d: diff):\n{files}"
        argv = suggested_argv(job, self.views[self.current].snapshot)
        if argv != job.argv:
            added = " ".join(argv[len(job.argv) :])
            text += f"\nSuggested: it heads past its budget, so the command now ends with {added}."

        def confirmed(argv: tuple[str, ...] | None) -> None:
            if argv is not None:
                edited = None if argv == job.argv else argv
                self.run_worker(
                    self._redeploy(job.id, edited), group="actions", exit_on_error=False
                )

        _ = self.push_screen(
            RedeployScreen(f"Kill, deploy and restart {job.name}?", text, argv), confirmed
        )

    async def _redeploy(self, job_id: str, argv: tuple[str, ...] | None) -> None:
        link = self.sessions[self.current].link
        config = self.host_configs.get(self.current) or HostConfig(
            self.current, SshTarget(self.current)
        )
        if link is None:
            self.notify("the link dropped before the redeploy started", severity="error")
            return
        try:
            outcome = await redeploy(
                link, config, job_id, argv, report=lambda message: self.notify(message)
            )
        except LinkError as exc:
            self.notify(str(exc), severity="error", timeout=30)
            return
        self.notify(outcome.summary(), timeout=20)

    def _job_names(self, kind: str, config: HostConfig | None) -> list[str]:
        """Configured jobs of `kind`; for train, hidden-states jobs not yet done come first."""
        kinds = ("hidden_states", "train") if kind == "train" else (kind,)
        done = {job.name for job in self._jobs() if job.state == "exited"}
        jobs = config.pipeline.jobs if config else {}
        found = [(name, spec.kind) for name, spec in jobs.items() if spec.kind in kinds]
        found.sort(key=lambda item: (item[0] in done, kinds.index(item[1])))
        return [name for name, _ in found]

    async def action_launch_kind(self, kind: str) -> None:
        """Start the configured job of `kind` (v vocab, t train, s server), behind the GPU guard."""
        link = self._mutable_link()
        config = self.host_configs.get(self.current)
        names = self._job_names(kind, config)
        if link is None:
            return
        if not names:
            self.notify(f"no job of kind {kind} in hosts.{self.current}.jobs", severity="warning")
            return
        running = [
            j for j in self._jobs() if j.name in names and j.state in ("starting", "running")
        ]
        if kind == "server" and running:
            self._offer_stop(running[0])
            return
        try:
            job: JobInfo = await link.request(
                "jobs.launch",
                LaunchParams(names[0]),
                idempotency_key=f"{kind}-{secrets.token_hex(6)}",
            )
        except AgentRequestError as exc:
            if exc.code != "gpu_busy":
                self.notify(str(exc), severity="error")
                return
            self._offer_gpu_handover(names[0], exc.detail)
            return
        self.notify(f"started {job.name} (pid group {job.pgid})")
        if kind == "server":
            self.run_worker(self._await_ready(job.name), group="actions", exit_on_error=False)

    async def _await_ready(self, name: str, timeout_s: float = 900.0) -> None:
        """Say when the started server answers /health (the agent's probe), or that it never did."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            snapshot = self.views[self.current].snapshot
            server = snapshot.server if snapshot else None
            if server is not None and server.healthy and server.probed_at > time.time() - 10:
                model = f", model {server.model_path}" if server.model_path else ""
                self.notify(
                    f"{name} ready at {server.url}{model} after {time.monotonic() - started:.0f} s"
                )
                return
            await asyncio.sleep(1.0)
        self.notify(
            f"{name} did not answer /health within {timeout_s:.0f} s; see its log (l)",
            severity="error",
        )

    def _jobs(self) -> tuple[JobInfo, ...]:
        snapshot = self.views[self.current].snapshot
        return snapshot.jobs if snapshot else ()

    def _offer_stop(self, job: JobInfo) -> None:
        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(self._stop(job.id, job.name), group="actions", exit_on_error=False)

        _ = self.push_screen(
            ConfirmScreen(f"Stop {job.name}?", self._stop_consequences(job.id), "Stop"), confirmed
        )

    def _offer_gpu_handover(self, job_name: str, detail: str) -> None:
        snapshot = self.views[self.current].snapshot
        holders = [j for j in (snapshot.jobs if snapshot else ()) if j.gpu and j.state == "running"]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(
                    self._hand_over(holders, job_name), group="actions", exit_on_error=False
                )

        names = ", ".join(f"{j.name} (pid {j.pid})" for j in holders) or "the holders"
        text = f"{detail}\n\nStop {names} first (drain, then escalate), then start {job_name}?"
        _ = self.push_screen(
            ConfirmScreen(f"The GPUs are busy: start {job_name}?", text, "Stop, then start"),
            confirmed,
        )

    async def _hand_over(self, holders: list[JobInfo], job_name: str) -> None:
        link = self.sessions[self.current].link
        if link is None:
            return
        before = self._gpu_used_gib()
        try:
            for holder in holders:
                await link.request(
                    "jobs.stop",
                    StopParams(holder.id),
                    idempotency_key=f"handover-{holder.id}",
                    timeout_s=STOP_TIMEOUT_S,
                )
            freed = await self._gpu_freed(before)
            job: JobInfo = await link.request(
                "jobs.launch",
                LaunchParams(job_name),
                idempotency_key=f"handover-{secrets.token_hex(6)}",
            )
        except LinkError as exc:
            self.notify(f"hand-over stopped: {exc}", severity="error", timeout=20)
            return
        self.notify(f"stopped {', '.join(h.name for h in holders)}; {freed}; started {job.name}")

    def _gpu_used_gib(self) -> float | None:
        snapshot = self.views[self.current].snapshot
        if snapshot is None or not snapshot.gpus:
            return None
        return sum(g.memory_used_mib or 0 for g in snapshot.gpus) / 1024

    async def _gpu_freed(self, before: float | None, timeout_s: float = 60.0) -> str:
        """Wait until the GPUs' memory drops (fresh readings come every few seconds); say by how much."""
        if before is None:
            return "no GPU reading to check"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            now = self._gpu_used_gib()
            if now is not None and now < before - 1.0:
                return f"GPU memory freed: {before:.1f} -> {now:.1f} GiB"
            await asyncio.sleep(1.0)
        return f"GPU memory still {self._gpu_used_gib() or 0:.1f} GiB after {timeout_s:.0f} s"

    def _selected_job_id(self) -> str | None:
        return self.screen.selected_job_id if isinstance(self.screen, DashboardScreen) else None

    def _selected_job(self) -> JobInfo | None:
        job_id = self._selected_job_id()
        snapshot = self.views[self.current].snapshot
        if job_id is None or snapshot is None:
            return None
        return next((job for job in snapshot.jobs if job.id == job_id), None)

    def _stop_consequences(self, job_id: str) -> str:
        snapshot = self.views[self.current].snapshot
        assert snapshot is not None
        job = next(job for job in snapshot.jobs if job.id == job_id)
        lines = [f"{self.current}: {job.name} (pid {job.pid}, process group {job.pgid}) will get its stop "
                 "signal, then SIGTERM and SIGKILL if it does not exit within its grace."]  # fmt: skip
        dataset = next((d for d in snapshot.datasets if d.name == job.dataset), None)
        if dataset is not None:
            lines.append(
                f"{dataset.name}: {dataset.responses:,} responses, {dataset.tokens:,} tokens of "
                f"{dataset.budget or 0:,}; {dataset.in_flight} request(s) in flight will be drained, "
                "or lost if it has to be killed. A restart resumes from the responses on disk."
            )
        return "\n".join(lines)


def suggested_argv(job: JobInfo, snapshot: Snapshot | None) -> tuple[str, ...]:
    """The job's argv, plus --token-budget when its dataset is projected past its budget."""
    dataset = (
        next((d for d in snapshot.datasets if d.name == job.dataset), None) if snapshot else None
    )
    if dataset is None or dataset.budget is None or "--token-budget" in job.argv:
        return job.argv
    if not dataset.projected_overrun_tokens:
        return job.argv
    return (*job.argv, "--token-budget", str(dataset.budget))
