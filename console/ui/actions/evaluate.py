"""B benchmarks the drafter; X shows the export's report; a toast offers B after training.

B asks the agent for one sequence: the drafter's server (a job of kind drafter_server), the
baseline server too when the evaluate job compares against one (--baseline), then the evaluate
job, which waits for both. A server refused stops the sequence there, saying why.
"""

from __future__ import annotations

import secrets

from agent.protocol import (
    LIVE_JOB_STATES,
    OPERATIONS_SEQUENCE,
    Alert,
    DrafterCheck,
    SequenceParams,
    SequenceStep,
    Snapshot,
)
from console.link.agent_link import LinkError
from console.model.drafter_check_view import check_text
from console.ui.actions.base import HostActions
from console.ui.intents import EvaluateRequested, ExportReportRequested
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.export import ExportScreen

ACTIVE = LIVE_JOB_STATES


class EvaluateActions(HostActions):
    """The drafter's evaluation and the export's report."""

    def _servers_for(self, host: str, evaluate_job: str) -> list[str]:
        """The drafter's server, and the baseline's when the evaluation has a --baseline."""
        config = self.hosts.configs.get(host)
        argv = config.pipeline.jobs[evaluate_job].argv if config else ()
        kinds = ("drafter_server", "server") if "--baseline" in argv else ("drafter_server",)
        running = {job.name for job in self.jobs(host) if job.state in ACTIVE}
        return [name for name in self.configured(host, *kinds) if name not in running]

    async def evaluate(self, intent: EvaluateRequested, force: bool = False) -> None:
        """Start what the evaluation needs, then the evaluation; its verdict comes to the panel.

        A drafter whose checkpoint failed the drafter check is offered in a confirm first: the
        agent refuses to serve it unless the start is forced.
        """
        host = intent.host
        link = self.mutable_link(host)
        names = self.configured(host, "evaluate")
        if link is None:
            return
        if not names:
            self.app.notify(f"no job of kind evaluate in hosts.{host}.jobs", severity="warning")
            return
        servers = self._servers_for(host, names[0])
        drafters = set(self.configured(host, "drafter_server")) & set(servers)
        snapshot = self.snapshot(host)
        check = snapshot.drafter_check if snapshot is not None else None
        if drafters and check is not None and check.ok is False and not force:
            self._offer_evaluate_anyway(intent, check)
            return
        steps = (*(SequenceStep("start", job=name, force=force and name in drafters)
                   for name in servers),
                 SequenceStep("start", job=names[0]))  # fmt: skip
        params = SequenceParams(f"the drafter's evaluation ({names[0]})", steps)
        try:
            await link.call(
                OPERATIONS_SEQUENCE, params, idempotency_key=f"B-{secrets.token_hex(6)}"
            )
        except LinkError as exc:
            self.app.notify(f"evaluation not started: {exc}", severity="error", timeout=20)
            return
        first = f"{', '.join(servers)}, then " if servers else ""
        self.app.notify(f"{host}: the agent starts {first}{names[0]}; it waits for the servers")

    def _offer_evaluate_anyway(self, intent: EvaluateRequested, check: DrafterCheck) -> None:
        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(self.evaluate(intent, force=True), "the drafter's evaluation")

        text = f"{check_text(check)}\n\nServed anyway, it is measured as it is."
        _ = self.app.push_screen(
            ConfirmScreen("The drafter failed its check: serve and evaluate it anyway?", text,
                          "Serve anyway"),
            confirmed,
        )  # fmt: skip

    def export_report(self, intent: ExportReportRequested) -> None:
        """The latest export's quality report."""
        snapshot = self.snapshot(intent.host)
        if snapshot is None or snapshot.export is None:
            self.app.notify("no export report yet: x exports the training data", severity="warning")
            return
        _ = self.app.push_screen(ExportScreen(intent.host, snapshot.export))

    def offer_evaluation(self, host: str, alert: Alert, snapshot: Snapshot) -> None:
        """After training exits cleanly (its job_exited alert), say what comes next.

        B, unless the autopilot runs: then it is the autopilot's next stage, and "press B" misled.
        """
        job = next((j for j in snapshot.jobs if j.id == alert.subject), None)
        if alert.kind != "job_exited" or job is None or job.kind != "train" or job.exit_code != 0:
            return
        autopilot = snapshot.autopilot
        if autopilot is not None and autopilot.state == "running":  # it serves and measures
            self.app.notify(f"{host}: training finished: the autopilot serves the drafter and "
                            "measures it next", timeout=15)  # fmt: skip
        elif self.configured(host, "evaluate"):
            self.app.notify(
                f"{host}: training finished: press B to serve the drafter and measure it "
                "against the server without it",
                timeout=30,
            )
