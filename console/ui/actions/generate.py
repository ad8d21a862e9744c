"""Starting generation: g on the dataset under the cursor, G on every dataset still to do."""

from __future__ import annotations

import secrets

from agent.protocol import DatasetProgress, JobInfo, LaunchParams
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.model.pipeline_view import ACTIVE
from console.ui.actions.base import ActionsMixin
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dashboard import DashboardScreen


class GenerateActions(ActionsMixin):
    """g and G: the configured per-dataset inference job, never twice on one dataset."""

    async def action_generate(self) -> None:
        """Start the inference job on the selected dataset, unless something writes it already."""
        link, job_name = self._mutable_link(self.current), self._inference_job()
        dataset = self._selected_dataset()
        if link is None or job_name is None:
            return
        if dataset is None:
            self.notify("select a dataset first (the datasets table)", severity="warning")
            return
        if (reason := self._why_not(dataset)) is not None:
            self.notify(reason, severity="warning")
            return
        await self._launch(link, job_name, [dataset.name])

    def action_generate_all(self) -> None:
        """Start the inference job on every dataset that is neither complete nor being written."""
        link, job_name = self._mutable_link(self.current), self._inference_job()
        if link is None or job_name is None:
            return
        snapshot = self.views[self.current].snapshot
        todo = [d.name for d in (snapshot.datasets if snapshot else ()) if self._why_not(d) is None]
        if not todo:
            self.notify("every dataset is complete or being written", severity="warning")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_worker(
                    self._launch(link, job_name, todo),
                    name=f"the start of {job_name}",
                    group="actions",
                    exit_on_error=False,
                )

        text = f"{self.current}: start {job_name} on {len(todo)} dataset(s): {', '.join(todo)}."
        _ = self.push_screen(
            ConfirmScreen(f"Start {job_name} on {len(todo)} dataset(s)?", text, "Start"), confirmed
        )

    def _inference_job(self) -> str | None:
        config = self.host_configs.get(self.current)
        jobs = config.pipeline.jobs if config else {}
        names = [
            name for name, spec in jobs.items() if spec.kind == "inference" and spec.per_dataset
        ]
        if not names:
            self.notify(
                f"no per-dataset job of kind inference in hosts.{self.current}.jobs",
                severity="warning",
            )
        return names[0] if names else None

    def _selected_dataset(self) -> DatasetProgress | None:
        snapshot = self.views[self.current].snapshot
        if not isinstance(self.screen, DashboardScreen) or snapshot is None:
            return None
        name = self.screen.selected_dataset
        return next((d for d in snapshot.datasets if d.name == name), None)

    def _why_not(self, dataset: DatasetProgress) -> str | None:
        """Why generation should not start on `dataset` now, or None when it should."""
        writers = [
            j for j in self._jobs(self.current) if j.dataset == dataset.name and j.state in ACTIVE
        ]
        if writers:
            return f"{dataset.name} is being written by {writers[0].name} (pid {writers[0].pid}); R restarts it"
        if dataset.writer:  # a lock holder or an old script with the file open: one writer only
            return f"{dataset.name} is being written by {dataset.writer}"
        if dataset.writer_active:
            return f"{dataset.name} is being written by a runner the agent did not start (its runner.json is live)"
        if dataset.generation_done:
            return f"{dataset.name} is done: {_done_why(dataset)}"
        return None

    async def _launch(self, link: AgentLink, job_name: str, datasets: list[str]) -> None:
        started: list[JobInfo] = []
        for name in datasets:
            try:
                key = f"generate-{name}-{secrets.token_hex(6)}"
                started.append(
                    await link.request(
                        "jobs.launch", LaunchParams(job_name, name), idempotency_key=key
                    )
                )
            except (AgentRequestError, LinkError) as exc:
                self.notify(f"{job_name} on {name}: {exc}", severity="error")
        if started:
            where = ", ".join(f"{job.dataset} (pid {job.pid})" for job in started)
            self.notify(f"started {job_name} on {where}")


def _done_why(dataset: DatasetProgress) -> str:
    """Why the one budget rule calls `dataset` done, in words."""
    if dataset.budget is not None and dataset.tokens >= dataset.budget:
        return f"{dataset.tokens:,} of its {dataset.budget:,} tokens"
    failed = f", {dataset.failed_prompts:,} failed for good" if dataset.failed_prompts else ""
    return f"no prompt left ({dataset.responses:,} answered{failed})"
