"""Screens that only show: l a log, p the pipeline, Enter a dataset's detail."""

from __future__ import annotations

from agent.protocol import DATASETS_DETAIL, DatasetDetail, DetailParams, JobInfo
from console.link.agent_link import LinkError
from console.ui.actions.base import HostActions
from console.ui.intents import DatasetDetailRequested, LogsRequested, PipelineRequested
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.logs import LogScreen
from console.ui.screens.pipeline import PipelineScreen

LOG_BACKLOG_BYTES = 256 * 1024
"""How much of a log's end a new log screen starts with."""


def log_to_open(
    job_id: str | None, jobs: tuple[JobInfo, ...], *, has_server: bool, sglang_log: bool
) -> str:
    """The log `l` opens for the job under the cursor.

    A server job's is SGLang's own log when one is configured (the job's output is often one
    launch line), any other job's is its output, and with no job SGLang's log or the agent's.
    """
    job = next((j for j in jobs if j.id == job_id), None) if job_id else None
    if job is not None and job.kind == "server" and sglang_log:
        return "sglang"
    if job_id and not job_id.startswith("ext-"):
        return f"job:{job_id}"
    return "sglang" if has_server else "agent"


class ViewActions(HostActions):
    """Open a screen on what a host knows."""

    async def logs(self, intent: LogsRequested) -> None:
        """The log of the selected job (SGLang's own for a server job), else SGLang's, else ours."""
        host = intent.host
        snapshot = self.snapshot(host)
        config = self.hosts.configs.get(host)
        name = log_to_open(
            intent.job_id,
            snapshot.jobs if snapshot else (),
            has_server=snapshot is not None and snapshot.server is not None
            and snapshot.server.url is not None,
            sglang_log=bool(config and config.pipeline.sglang_log),
        )  # fmt: skip
        await self.app.push_screen(LogScreen(host, name))
        try:
            await self.hosts.connections[host].follow_log(name, -LOG_BACKLOG_BYTES)
        except LinkError as exc:
            self.app.notify(str(exc), severity="error")

    def pipeline(self, intent: PipelineRequested) -> None:
        """The pipeline's stages and the next step."""
        snapshot = self.snapshot(intent.host)
        if snapshot is None:
            self.app.notify("no data from the host yet", severity="warning")
            return
        _ = self.app.push_screen(PipelineScreen(intent.host, snapshot))

    async def dataset_detail(self, intent: DatasetDetailRequested) -> None:
        """One dataset up close, as the agent reads it now."""
        link = self.hosts.connections[intent.host].link
        if link is None:
            self.app.notify("no link to the host right now", severity="warning")
            return
        try:
            detail: DatasetDetail = await link.call(DATASETS_DETAIL, DetailParams(intent.dataset))
        except LinkError as exc:
            self.app.notify(str(exc), severity="error")
            return
        snapshot = self.snapshot(intent.host)
        shown = [d for d in snapshot.datasets if d.name == intent.dataset] if snapshot else []
        _ = self.app.push_screen(DatasetScreen(intent.host, detail, next(iter(shown), None)))
