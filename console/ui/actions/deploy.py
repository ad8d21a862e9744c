"""Deploy, rollback and kill-and-redeploy: the d and R keys, and the deploy screen's own keys."""

from __future__ import annotations

from typing import TypeGuard

from textual.app import App
from textual.signal import Signal

from agent.protocol import ErrorCode, JobInfo
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.link.bundle import local_bundle
from console.link.deploy import FilePlan, deploy, plan_deploy, rollback, unified_diff
from console.link.redeploy import start_redeploy
from console.model.redeploy_view import RedeployFacts
from console.ui.actions.base import HostActions, Hosts
from console.ui.intents import (
    DeployAllRequested,
    DeployRequested,
    DiffRequested,
    RedeployRequested,
    RollbackRequested,
)
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.deploy import DeployScreen, DiffScreen
from console.ui.screens.redeploy import RedeployScreen
from console.ui.signals import DeployPlanned


class DeployActions(HostActions):
    """d: drift, diff, deploy, rollback; R: kill, deploy, restart."""

    def __init__(self, app: App[None], hosts: Hosts, planned: Signal[DeployPlanned]) -> None:
        super().__init__(app, hosts)
        self.planned = planned
        """Published with a host's files planned afresh after a deploy or a rollback changed them."""
        self.plans: list[FilePlan] = []
        """The latest plan, of `plans_host`: the deploy screen and the redeploy modal act on it."""
        self.plans_host = ""

    async def _plan(self, host: str, link: AgentLink) -> list[FilePlan] | None:
        config = self.hosts.configs.get(host)
        self.plans, self.plans_host = [], host
        if config is None or not config.deploy:
            return []
        try:
            self.plans = await plan_deploy(link, config.deploy)
        except LinkError as exc:
            self.app.notify(str(exc), severity="error")
            return None
        return self.plans

    async def show_drift(self, intent: DeployRequested) -> None:
        """The drift of every mapped file."""
        host = intent.host
        link = self.mutable_link(host)
        if link is None or (plans := await self._plan(host, link)) is None:
            return
        if not plans:
            self.app.notify(f"no [[hosts.{host}.deploy]] mappings configured", severity="warning")
            return
        _ = self.app.push_screen(DeployScreen(host, plans, _bundle_line(link)))

    async def _replan(self, host: str) -> None:
        """Plan the host's files again and hand them to its deploy screen: what it shows is now."""
        link = self.hosts.connections[host].link
        if link is not None and (plans := await self._plan(host, link)) is not None:
            self.planned.publish(DeployPlanned(host, plans, _bundle_line(link)))

    async def show_diff(self, intent: DiffRequested) -> None:
        """One file's diff."""
        link = self.hosts.connections[intent.host].link
        plan = next((p for p in self.plans if p.remote == intent.remote), None)
        if link is not None and plan is not None and self.plans_host == intent.host:
            _ = self.app.push_screen(DiffScreen(await unified_diff(link, plan)))

    async def show_pending_diff(self) -> None:
        """The diff of every file the redeploy being confirmed would deploy."""
        link = self.hosts.connections[self.plans_host].link if self.plans_host else None
        if link is not None:
            diffs = [
                await unified_diff(link, plan) for plan in self.plans if plan.status == "changed"
            ]
            _ = self.app.push_screen(DiffScreen("".join(diffs)))

    def deploy_all(self, intent: DeployAllRequested) -> None:
        """Deploy every changed file, after a confirm."""
        host = intent.host
        pending = [plan for plan in self.plans if plan.needs_deploy and self.plans_host == host]
        if not pending:
            self.app.notify("nothing to deploy: every file is unchanged")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(self._deploy(host, pending), "the deploy")

        listing = "\n".join(f"{plan.status}: {plan.remote}" for plan in pending)
        _ = self.app.push_screen(
            ConfirmScreen(f"Deploy {len(pending)} file(s)?", listing, "Deploy"), confirmed
        )

    async def _deploy(self, host: str, plans: list[FilePlan]) -> None:
        link = self.mutable_link(host)
        if link is None:
            return
        try:
            results = await deploy(link, plans)
        except LinkError as exc:
            self.app.notify(str(exc), severity="error", timeout=20)
            return
        self.app.notify(f"deployed {len(results)} file(s)")
        await self._replan(host)

    async def rollback(self, intent: RollbackRequested) -> None:
        """Put back the previous version of one file."""
        link = self.mutable_link(intent.host)
        if link is None:
            return
        try:
            result = await rollback(link, intent.remote)
        except LinkError as exc:
            if not _nothing_to_roll_back(exc):
                self.app.notify(str(exc), severity="error")
                return
            self.app.notify(exc.detail)
        else:
            self.app.notify(f"rolled back {result.target} (sha256 {result.sha256[:12]})")
        await self._replan(intent.host)

    async def redeploy(self, intent: RedeployRequested) -> None:
        """Kill, deploy and restart the selected job (or the job writing the selected dataset)."""
        host, job = intent.host, intent.job
        link = self.mutable_link(host)
        if link is None:
            return
        if job is None or job.external:
            self.app.notify(
                "select one of the agent's jobs first (the jobs table)", severity="warning"
            )
            return
        if (plans := await self._plan(host, link)) is None:
            return

        def confirmed(argv: tuple[str, ...] | None) -> None:
            if argv is not None:
                edited = None if argv == job.argv else argv
                self.in_worker(self._redeploy(host, job.id, edited), f"the redeploy of {job.name}")

        _ = self.app.push_screen(RedeployScreen(self._redeploy_facts(host, job, plans)), confirmed)

    def _redeploy_facts(self, host: str, job: JobInfo, plans: list[FilePlan]) -> RedeployFacts:
        """What the R modal states: its numbers then follow the host's snapshots."""
        config = self.hosts.configs.get(host)
        spec = config.pipeline.jobs.get(job.name) if config else None
        files = tuple(f"{p.status}: {p.remote}" for p in plans if p.needs_deploy)
        return RedeployFacts(host, job, spec, files, self.snapshot(host))

    async def _redeploy(self, host: str, job_id: str, argv: tuple[str, ...] | None) -> None:
        """Upload and ask; the agent carries the rest, and its steps come back as toasts."""
        link = self.hosts.connections[host].link
        config = self.hosts.configs.get(host) or HostConfig(host, SshTarget(host))
        if link is None:
            self.app.notify("the link dropped before the redeploy started", severity="error")
            return
        try:
            info = await start_redeploy(link, config, job_id, argv)
        except LinkError as exc:
            self.app.notify(str(exc), severity="error", timeout=30)
            return
        self.app.notify(
            f"{host}: redeploy of {info.subject} under way on the agent; it goes on if the "
            "link drops"
        )


def _nothing_to_roll_back(exc: LinkError) -> TypeGuard[AgentRequestError]:
    """The agent found the file already is its previous version."""
    return isinstance(exc, AgentRequestError) and exc.code == ErrorCode.NOTHING_TO_ROLL_BACK


def _bundle_line(link: AgentLink) -> str:
    """Whether the host runs the agent bundle this console ships."""
    hello, ships = link.hello_result, local_bundle().sha256
    if hello is not None and hello.bundle_sha256 == ships:
        return f"agent bundle {ships[:12]} (the host runs it)"
    return f"agent bundle: host runs {(hello.bundle_sha256 if hello else '?')[:12]}, console ships {ships[:12]}"
