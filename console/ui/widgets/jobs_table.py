"""Jobs: the agent's own and external ones, with pid, state, uptime, exit (and why), GPU."""

from __future__ import annotations

from rich.text import Text

from agent.protocol import JobInfo
from console.model.formatting import exit_text, job_uptime
from console.model.restart_text import restart_badge
from console.model.roles import JOB_ROLES
from console.model.safe_text import literal
from console.ui.themes import in_role
from console.ui.widgets.fitted_table import FittedTable, Row

COLUMNS = ("job", "kind", "dataset", "pid", "state", "uptime", "exit", "gpu", "origin")


class JobsTable(FittedTable):
    """One row per job."""

    COLUMNS = COLUMNS
    FOLD_ORDER = ("origin", "gpu", "kind", "exit", "uptime", "pid")
    """The job's name, its dataset and its state stay at any width: "inference · killed ·
    restarted" with no dataset named none of eight runs."""
    SCROLL_HINT = True
    """More jobs than rows in view (a short terminal) say so in the bottom border."""

    def show(
        self, jobs: tuple[JobInfo, ...], now: float, stale: frozenset[str] = frozenset()
    ) -> None:
        """Put `jobs` on screen as of `now`; jobs (or their datasets) in `stale` run old code."""
        self.fill_rows([_row(job, now, stale) for job in jobs])

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
        return in_role("running · stale code", "attention")
    badge = restart_badge(job)
    role = "critical" if badge == "gave up" else JOB_ROLES[job.state]
    return in_role(f"{job.state} · {badge}" if badge else job.state, role)


def _row(job: JobInfo, now: float, stale: frozenset[str]) -> Row:
    return Row(job.id, (
        literal(job.name), literal(job.kind), literal(job.dataset or ""), str(job.pid or ""),
        _state_text(job, stale), job_uptime(job, now), literal(exit_text(job)),
        "gpu" if job.gpu else "", _origin(job),
    ))  # fmt: skip


def _origin(job: JobInfo) -> str:
    """own, external, or this box's part of a job across boxes (`node 1/2`)."""
    if job.external:
        return "external"
    return f"node {job.node.rank}/{job.node.nnodes}" if job.node is not None else "own"
