"""Starting generation: g on the dataset under the cursor, G on every dataset still to do."""

from __future__ import annotations

import secrets

from agent.protocol import (
    JOBS_LAUNCH,
    OPERATIONS_GENERATE,
    DatasetProgress,
    GenerateParams,
    JobInfo,
    LaunchParams,
)
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.model.formatting import started_as
from console.model.generate_checks import why_not_generate
from console.ui.actions.base import HostActions
from console.ui.intents import GenerateAllRequested, GenerateRequested
from console.ui.screens.confirm import ConfirmScreen


class GenerateActions(HostActions):
    """g and G: the configured per-dataset inference job, never twice on one dataset."""

    async def generate(self, intent: GenerateRequested) -> None:
        """Start the inference job on the selected dataset, unless something writes it already."""
        host = intent.host
        link, job_name = self.mutable_link(host), self._inference_job(host)
        if link is None or job_name is None:
            return
        dataset = self._latest(host, intent.dataset)
        if dataset is None:
            self.app.notify("select a dataset first (the datasets table)", severity="warning")
            return
        if (reason := self._why_not(host, dataset)) is not None:
            self.app.notify(reason, severity="warning")
            return
        await self._launch(host, link, job_name, [dataset.name])

    def generate_all(self, intent: GenerateAllRequested) -> None:
        """Start the inference job on every dataset that is neither complete nor being written."""
        host = intent.host
        link, job_name = self.mutable_link(host), self._inference_job(host)
        if link is None or job_name is None:
            return
        snapshot = self.snapshot(host)
        datasets = snapshot.datasets if snapshot else ()
        todo = [d.name for d in datasets if self._why_not(host, d) is None]
        if not todo:
            self.app.notify("every dataset is complete or being written", severity="warning")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(
                    self._launch_all(host, link, job_name, todo), f"the start of {job_name}"
                )

        text = f"{host}: start {job_name} on {len(todo)} dataset(s): {', '.join(todo)}."
        _ = self.app.push_screen(
            ConfirmScreen(f"Start {job_name} on {len(todo)} dataset(s)?", text, "Start"), confirmed
        )

    def _inference_job(self, host: str) -> str | None:
        config = self.hosts.configs.get(host)
        jobs = config.pipeline.jobs if config else {}
        names = [
            name for name, spec in jobs.items() if spec.kind == "inference" and spec.per_dataset
        ]
        if not names:
            self.app.notify(
                f"no per-dataset job of kind inference in hosts.{host}.jobs", severity="warning"
            )
        return names[0] if names else None

    def _latest(self, host: str, selected: DatasetProgress | None) -> DatasetProgress | None:
        """The selected dataset as the host's latest snapshot has it."""
        snapshot = self.snapshot(host)
        if selected is None or snapshot is None:
            return None
        return next((d for d in snapshot.datasets if d.name == selected.name), None)

    def _why_not(self, host: str, dataset: DatasetProgress) -> str | None:
        """Why generation should not start on `dataset` now, or None when it should."""
        return why_not_generate(dataset, self.jobs(host))

    async def _launch_all(
        self, host: str, link: AgentLink, job_name: str, datasets: list[str]
    ) -> None:
        """Ask the agent to start them all: it goes on with the rest if the link drops."""
        params = GenerateParams(job_name, tuple(datasets))
        key = f"generate-all-{secrets.token_hex(6)}"
        try:
            await link.call(OPERATIONS_GENERATE, params, idempotency_key=key)
        except LinkError as exc:
            self.app.notify(f"{job_name}: {exc}", severity="error")
            return
        self.app.notify(
            f"{host}: starting {job_name} on {len(datasets)} dataset(s) (the agent carries it)"
        )

    async def _launch(self, host: str, link: AgentLink, job_name: str, datasets: list[str]) -> None:
        started: list[JobInfo] = []
        for name in datasets:
            try:
                key = f"generate-{name}-{secrets.token_hex(6)}"
                started.append(
                    await link.call(JOBS_LAUNCH, LaunchParams(job_name, name), idempotency_key=key)
                )
            except (AgentRequestError, LinkError) as exc:
                self.app.notify(f"{job_name} on {name}: {exc}", severity="error")
        for job in started:
            self.hosts.views[host].launched(job)
        if started:
            where = ", ".join(f"{job.dataset} ({started_as(job)})" for job in started)
            self.app.notify(f"started {job_name} on {where}")
