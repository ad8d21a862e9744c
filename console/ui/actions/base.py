"""What every group of console actions needs: the host on screen, its link and its jobs.

The action groups are mixins of the app, so each key's action is found by Textual as usual;
this base declares the state they share and the helpers several of them use.
"""

from __future__ import annotations

import secrets
import time

from textual.app import App

from agent.protocol import (
    JobInfo,
    StopParams,
    StopResult,
)
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.deploy import FilePlan
from console.link.host_connection import HostConnection
from console.model.consequences import stop_consequences
from console.model.host_view import HostView
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dashboard import DashboardScreen

STOP_TIMEOUT_S = 600.0


class ActionsMixin(App[None]):
    """A mixin of the app: the state the action groups share, and the helpers several use."""

    views: dict[str, HostView]
    connections: dict[str, HostConnection]
    current: str
    host_configs: dict[str, HostConfig]
    read_only: frozenset[str]
    plans: list[FilePlan]

    def _mutable_link(self, host: str) -> AgentLink | None:
        if host in self.read_only:
            self.notify(
                f"{host} is read-only: nothing can be changed from here", severity="warning"
            )
            return None
        link = self.connections[host].link
        if link is None:
            self.notify("no link to the host right now", severity="warning")
        return link

    def _jobs(self, host: str) -> tuple[JobInfo, ...]:
        snapshot = self.views[host].snapshot
        return snapshot.jobs if snapshot else ()

    def _offer_stop(self, host: str, job: JobInfo) -> None:
        """Ask, then stop `job` on `host`: the host asked about, whatever is on screen by then."""

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(
                    self._stop(host, job.id, job.name),
                    name=f"the stop of {job.name}",
                    group="actions",
                    exit_on_error=False,
                )

        consequences = self._stop_consequences(host, job.id)
        _ = self.push_screen(ConfirmScreen(f"Stop {job.name}?", consequences, "Stop"), confirmed)

    async def _stop(self, host: str, job_id: str, name: str) -> None:
        link = self.connections[host].link
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

    def _selected_job_id(self) -> str | None:
        return self.screen.selected_job_id if isinstance(self.screen, DashboardScreen) else None

    def _selected_job(self) -> JobInfo | None:
        job_id = self._selected_job_id()
        snapshot = self.views[self.current].snapshot
        if job_id is None or snapshot is None:
            return None
        return next((job for job in snapshot.jobs if job.id == job_id), None)

    def _stop_consequences(self, host: str, job_id: str) -> str:
        snapshot = self.views[host].snapshot
        assert snapshot is not None
        return stop_consequences(host, snapshot, job_id)
