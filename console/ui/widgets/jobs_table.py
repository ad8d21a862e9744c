"""Jobs: the agent's own and external ones, with pid, state, uptime, exit, GPU."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from agent.protocol import JobInfo
from console.model.formatting import job_uptime
from console.model.safe_text import literal
from console.ui.widgets.kept_position import refill

COLUMNS = ("job", "kind", "dataset", "pid", "state", "uptime", "exit", "gpu", "origin")
STATE_STYLE = {
    "running": "green",
    "failed": "bold red",
    "lost": "red",
    "killed": "yellow",
    "stopping": "yellow",
    "stopped": "dim",
}


class JobsTable(DataTable[Text | str]):
    """One row per job."""

    def on_mount(self) -> None:
        """Columns, and whole-row selection."""
        self.cursor_type = "row"
        for column in COLUMNS:
            self.add_column(column, key=column)

    def show(
        self, jobs: tuple[JobInfo, ...], now: float, stale: frozenset[str] = frozenset()
    ) -> None:
        """Put `jobs` on screen as of `now`; jobs (or their datasets) in `stale` run old code."""
        refill(self, lambda: self._fill(jobs, now, stale))

    def _fill(self, jobs: tuple[JobInfo, ...], now: float, stale: frozenset[str]) -> None:
        for job in jobs:
            exit_text = job.exit_signal or ("" if job.exit_code is None else str(job.exit_code))
            self.add_row(
                literal(job.name), literal(job.kind), literal(job.dataset or ""),
                str(job.pid or ""), _state_text(job, stale), job_uptime(job, now),
                literal(exit_text), "gpu" if job.gpu else "", "external" if job.external else "own",
                key=job.id,
            )  # fmt: skip

    @property
    def selected_job_id(self) -> str | None:
        """The id of the job under the cursor."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value


def _state_text(job: JobInfo, stale: frozenset[str]) -> Text:
    if job.state == "running" and (
        job.id in stale or (job.dataset is not None and job.dataset in stale)
    ):
        return Text("running · stale code", style="bold yellow")
    return literal(job.state, STATE_STYLE.get(job.state, ""))
