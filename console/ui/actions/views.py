"""Screens that only show: l a log, p the pipeline, Enter a dataset's detail."""

from __future__ import annotations

from agent.protocol import DATASETS_DETAIL, DatasetDetail, DetailParams
from console.link.agent_link import LinkError
from console.ui.actions.base import HostActions
from console.ui.intents import DatasetDetailRequested, LogsRequested, PipelineRequested
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.logs import LogScreen
from console.ui.screens.pipeline import PipelineScreen

LOG_BACKLOG_BYTES = 256 * 1024
"""How much of a log's end a new log screen starts with."""


class ViewActions(HostActions):
    """Open a screen on what a host knows."""

    async def logs(self, intent: LogsRequested) -> None:
        """The selected job's log, else the SGLang log, else the agent's own."""
        host, job_id = intent.host, intent.job_id
        snapshot = self.snapshot(host)
        has_sglang = (
            snapshot is not None and snapshot.server is not None and snapshot.server.url is not None
        )
        name = (
            f"job:{job_id}"
            if job_id and not job_id.startswith("ext-")
            else ("sglang" if has_sglang else "agent")
        )
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
