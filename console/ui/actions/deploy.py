"""Deploy, rollback and kill-and-redeploy: the d and R keys."""

from __future__ import annotations

from agent.protocol import (
    JobInfo,
    Snapshot,
)
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink, LinkError
from console.link.bundle import local_bundle
from console.link.deploy import FilePlan, deploy, plan_deploy, rollback, unified_diff
from console.link.redeploy import redeploy
from console.ui.actions.base import ActionsMixin
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.deploy import DeployScreen, DiffScreen
from console.ui.screens.redeploy import RedeployScreen


class DeployActions(ActionsMixin):
    """d: drift, diff, deploy, rollback; R: kill, deploy, restart."""

    async def _plan(self, host: str, link: AgentLink) -> list[FilePlan] | None:
        config = self.host_configs.get(host)
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
        host = self.current
        link = self._mutable_link(host)
        if link is None or (plans := await self._plan(host, link)) is None:
            return
        if not plans:
            self.notify(f"no [[hosts.{host}.deploy]] mappings configured", severity="warning")
            return
        hello = link.hello_result
        ships = local_bundle().sha256
        bundle = (
            f"agent bundle {ships[:12]} (the host runs it)"
            if hello is not None and hello.bundle_sha256 == ships
            else f"agent bundle: host runs {(hello.bundle_sha256 if hello else '?')[:12]}, console ships {ships[:12]}"
        )
        _ = self.push_screen(DeployScreen(host, plans, bundle))

    async def action_show_diff(self, remote: str) -> None:
        """One file's diff."""
        link = self.connections[self.current].link
        plan = next((p for p in self.plans if p.remote == remote), None)
        if link is not None and plan is not None:
            _ = self.push_screen(DiffScreen(await unified_diff(link, plan)))

    async def action_show_pending_diff(self) -> None:
        """The diff of every file a redeploy would deploy."""
        link = self.connections[self.current].link
        if link is not None:
            diffs = [
                await unified_diff(link, plan) for plan in self.plans if plan.status == "changed"
            ]
            _ = self.push_screen(DiffScreen("".join(diffs)))

    def action_deploy_all(self) -> None:
        """Deploy every changed file, after a confirm."""
        host = self.current
        pending = [plan for plan in self.plans if plan.needs_deploy]
        if not pending:
            self.notify("nothing to deploy: every file is unchanged")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(
                    self._deploy(host, pending),
                    name="the deploy",
                    group="actions",
                    exit_on_error=False,
                )

        listing = "\n".join(f"{plan.status}: {plan.remote}" for plan in pending)
        _ = self.push_screen(
            ConfirmScreen(f"Deploy {len(pending)} file(s)?", listing, "Deploy"), confirmed
        )

    async def _deploy(self, host: str, plans: list[FilePlan]) -> None:
        link = self._mutable_link(host)
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
        link = self._mutable_link(self.current)
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
        host = self.current
        link = self._mutable_link(host)
        job = self._selected_job()
        if link is None:
            return
        if job is None or job.external:
            self.notify("select one of the agent's jobs first (the jobs table)", severity="warning")
            return
        if (plans := await self._plan(host, link)) is None:
            return
        files = (
            "\n".join(f"  {p.status}: {p.remote}" for p in plans if p.needs_deploy)
            or "  (no file differs)"
        )
        text = f"{self._stop_consequences(host, job.id)}\nFiles that will be deployed (ctrl+d: diff):\n{files}"
        argv = suggested_argv(job, self.views[host].snapshot)
        if argv != job.argv:
            added = " ".join(argv[len(job.argv) :])
            text += f"\nSuggested: it heads past its budget, so the command now ends with {added}."

        def confirmed(argv: tuple[str, ...] | None) -> None:
            if argv is not None:
                edited = None if argv == job.argv else argv
                self.run_worker(
                    self._redeploy(host, job.id, edited),
                    name=f"the redeploy of {job.name}",
                    group="actions",
                    exit_on_error=False,
                )

        _ = self.push_screen(
            RedeployScreen(f"Kill, deploy and restart {job.name}?", text, argv), confirmed
        )

    async def _redeploy(self, host: str, job_id: str, argv: tuple[str, ...] | None) -> None:
        link = self.connections[host].link
        config = self.host_configs.get(host) or HostConfig(host, SshTarget(host))
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
