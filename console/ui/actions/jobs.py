"""Stopping and starting jobs: k, v, t, s, x and the GPU hand-over."""

from __future__ import annotations

import asyncio
import secrets
import time

from textual.app import App

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    OPERATIONS_SEQUENCE,
    ErrorCode,
    JobInfo,
    LaunchParams,
    SequenceParams,
    SequenceStep,
    StopParams,
    StopResult,
)
from console.link.agent_link import AgentRequestError, LinkError
from console.model.consequences import nothing_to_stop
from console.model.formatting import started_as
from console.ui.actions.base import STOP_TIMEOUT_S, HostActions, Hosts
from console.ui.actions.nodes import NodeActions
from console.ui.intents import LaunchRequested, StopRequested
from console.ui.screens.confirm import ConfirmScreen


class JobActions(HostActions):
    """k: stop; v, t, s, x: start by kind, behind the GPU guard."""

    def __init__(self, app: App[None], hosts: Hosts) -> None:
        super().__init__(app, hosts)
        self.nodes = NodeActions(app, hosts)
        """Jobs that span boxes: started, stopped and watched on every box at once."""

    def stop(self, intent: StopRequested) -> None:
        """Stop the selected job after a confirm that says what will happen."""
        host, job = intent.host, intent.job
        if host in self.hosts.read_only:
            self.app.notify(
                f"{host} is read-only: no job can be stopped from here", severity="warning"
            )
            return
        if job is None:
            self.app.notify("select a job first (the jobs table)", severity="warning")
            return
        self.offer_stop(host, job)

    def offer_stop(self, host: str, job: JobInfo) -> None:
        """Ask, then stop `job` on `host`: the host asked about, whatever is on screen by then."""
        ended = nothing_to_stop(job)
        if ended is not None:
            self.app.notify(ended)
            return
        if job.node is not None and self.nodes.offer_stop(host, job):
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.hosts.views[host].stops_asked.add(job.id)
                self.in_worker(self._stop(host, job.id, job.name), f"the stop of {job.name}")

        consequences = self.stop_consequences(host, job.id)
        _ = self.app.push_screen(
            ConfirmScreen(f"Stop {job.name}?", consequences, "Stop"), confirmed
        )

    async def _stop(self, host: str, job_id: str, name: str) -> None:
        link = self.hosts.connections[host].link
        if link is None:
            self.app.notify("no link to the host right now", severity="error")
            return
        started = time.monotonic()
        try:
            result: StopResult = await link.call(
                JOBS_STOP, StopParams(job_id), idempotency_key=f"stop-{secrets.token_hex(6)}",
                timeout_s=STOP_TIMEOUT_S,
            )  # fmt: skip
        except LinkError as exc:
            self.app.notify(f"stop of {name} failed: {exc}", severity="error")
            return
        if result.outcome == "already_exited":
            self.app.notify(nothing_to_stop(result.job) or f"{name}: it had already exited")
            return
        steps = " → ".join(step.action for step in result.steps) or "nothing to signal"
        self.app.notify(f"{name}: {result.outcome} ({steps}) in {time.monotonic() - started:.1f} s")

    def _job_names(self, host: str, kind: str) -> list[str]:
        """Configured jobs of `kind`; for train, hidden-states jobs not yet done come first."""
        config = self.hosts.configs.get(host)
        kinds = ("hidden_states", "train") if kind == "train" else (kind,)
        done = {job.name for job in self.jobs(host) if job.state == "exited"}
        jobs = config.pipeline.jobs if config else {}
        found = [(name, spec.kind) for name, spec in jobs.items() if spec.kind in kinds]
        found.sort(key=lambda item: (item[0] in done, kinds.index(item[1])))
        return [name for name, _ in found]

    async def launch(self, intent: LaunchRequested) -> None:
        """Start the configured job of a kind (v vocab, t train, s server), behind the GPU guard."""
        host, kind = intent.host, intent.kind
        link = self.mutable_link(host)
        names = self._job_names(host, kind)
        if link is None:
            return
        if not names:
            self.app.notify(f"no job of kind {kind} in hosts.{host}.jobs", severity="warning")
            return
        running = [
            j for j in self.jobs(host) if j.name in names and j.state in ("starting", "running")
        ]
        if kind == "server" and running:
            self.offer_stop(host, running[0])
            return
        spec = (
            self.hosts.configs[host].pipeline.jobs.get(names[0])
            if host in self.hosts.configs
            else None
        )
        if spec is not None and spec.nodes:
            await self.nodes.start(host, names[0], spec.nodes)
            return
        await self._launch(host, kind, names[0])

    async def _launch(self, host: str, kind: str, name: str, force: bool = False) -> None:
        """Ask the agent to start `name`; a refusal the user may overrule is offered as a confirm."""
        link = self.mutable_link(host)
        if link is None:
            return
        try:
            job: JobInfo = await link.call(
                JOBS_LAUNCH,
                LaunchParams(name, force=force),
                idempotency_key=f"{kind}-{secrets.token_hex(6)}",
            )
        except AgentRequestError as exc:
            if exc.code == ErrorCode.GPU_BUSY:
                self._offer_gpu_handover(host, name, exc.detail)
            elif exc.code == ErrorCode.NO_ROOM:
                self._offer_start_anyway(host, kind, name, exc.detail)
            elif exc.code == ErrorCode.DRAFTER_CHECK_FAILED:
                self._offer_serve_anyway(host, kind, name, exc.detail)
            else:
                self.app.notify(str(exc), severity="error")
            return
        self.app.notify(f"started {job.name} ({started_as(job)})")
        self.hosts.views[host].launched(job)
        if kind == "server":
            self.in_worker(self._await_ready(host, job.name), f"the readiness watch of {job.name}")

    async def _await_ready(self, host: str, name: str, timeout_s: float = 900.0) -> None:
        """Say when the started server answers /health (the agent's probe), or that it never did."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            snapshot = self.snapshot(host)
            server = snapshot.server if snapshot else None
            fresh = (
                snapshot is not None
                and server is not None
                and snapshot.taken_at - server.probed_at < 10
            )
            if server is not None and server.healthy and fresh:
                model = f", model {server.model_path}" if server.model_path else ""
                self.app.notify(
                    f"{name} ready at {server.url}{model} after {time.monotonic() - started:.0f} s"
                )
                return
            await asyncio.sleep(1.0)
        self.app.notify(
            f"{name} did not answer /health within {timeout_s:.0f} s; see its log (l)",
            severity="error",
        )

    def _offer_forced_start(self, host: str, kind: str, name: str, screen: ConfirmScreen) -> None:
        """A refusal `force` overrules: start `name` forced only if the user confirms `screen`."""

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(self._launch(host, kind, name, force=True), f"the start of {name}")

        _ = self.app.push_screen(screen, confirmed)

    def _offer_start_anyway(self, host: str, kind: str, name: str, detail: str) -> None:
        """The capture's plan does not fit: say so, and start it only if the user insists."""
        text = (
            f"{detail}\n\nStarted anyway, it is stopped (its "
            "stop signal) before the room runs out, and what it wrote stays for a run on more "
            "space."
        )
        title = f"{name} will not fit: start it anyway?"
        self._offer_forced_start(host, kind, name, ConfirmScreen(title, text, "Start anyway"))

    def _offer_serve_anyway(self, host: str, kind: str, name: str, detail: str) -> None:
        """The drafter failed its check: say which fields, and serve it only if the user insists."""
        text = (
            f"{detail}\n\nServed anyway, a drafter that fails these checks loads and accepts "
            "about one token, or does not load."
        )
        title = f"{name}: the drafter failed its check: serve it anyway?"
        self._offer_forced_start(host, kind, name, ConfirmScreen(title, text, "Serve anyway"))

    def _offer_gpu_handover(self, host: str, job_name: str, detail: str) -> None:
        holders = [j for j in self.jobs(host) if j.gpu and j.state == "running"]

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(
                    self._hand_over(host, holders, job_name), f"the hand-over to {job_name}"
                )

        names = ", ".join(f"{j.name} (pid {j.pid})" for j in holders) or "the holders"
        text = f"{detail}\n\nStop {names} first (drain, then escalate), then start {job_name}?"
        _ = self.app.push_screen(
            ConfirmScreen(f"The GPUs are busy: start {job_name}?", text, "Stop, then start"),
            confirmed,
        )

    async def _hand_over(self, host: str, holders: list[JobInfo], job_name: str) -> None:
        """Ask the agent for the whole hand-over, which it carries whatever the link does.

        It stops the holders, waits for the GPUs and starts the job; its steps come back as toasts.
        """
        link = self.hosts.connections[host].link
        if link is None:
            return
        steps = (
            *(SequenceStep("stop", job_id=holder.id) for holder in holders),
            SequenceStep("wait_gpus"),
            SequenceStep("start", job=job_name),
        )
        params = SequenceParams(f"GPU hand-over to {job_name}", steps)
        try:
            await link.call(
                OPERATIONS_SEQUENCE, params, idempotency_key=f"handover-{secrets.token_hex(6)}"
            )
        except LinkError as exc:
            self.app.notify(f"hand-over not started: {exc}", severity="error", timeout=20)
            return
        names = ", ".join(h.name for h in holders)
        self.app.notify(f"{host}: the agent stops {names}, then starts {job_name}")
