"""The default screen: datasets, jobs, server, GPUs and alerts of the host in focus.

Its keys (the dashboard's table in the command table, bound on this screen so only its footer
lists them) post intents: the host on display and the row under the cursor, as they
are when the key is pressed. The app acts on them; this screen never touches a link.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from agent.protocol import DatasetProgress, JobInfo, Snapshot
from console.model.autopilot_view import autopilot_line
from console.model.drafter_view import measured_accept_length
from console.model.formatting import STALE_AFTER_S, age, gpu_text, training_text
from console.model.host_view import HostView, as_asked, no_data_text
from console.model.lower_pages import (
    DRAFTER,
    DRAFTER_BESIDE_FROM,
    GPUS,
    MAIN,
    NARROW_BELOW,
    lower_pages,
    next_page,
    page_hint,
)
from console.model.operations_view import under_way
from console.model.pipeline_view import next_stage, stages
from console.model.safe_text import literal, literal_lines
from console.model.truncation_view import TRUNCATION_HIGH
from console.ui.commands import DASHBOARD_COMMANDS, bindings
from console.ui.intents import (
    AutopilotRequested,
    DatasetDetailRequested,
    DeployRequested,
    EvaluateRequested,
    ExportReportRequested,
    GenerateAllRequested,
    GenerateRequested,
    LaunchRequested,
    LogsRequested,
    PipelineRequested,
    RedeployRequested,
    StopRequested,
)
from console.ui.signals import HostShown, signals_of
from console.ui.themes import in_role
from console.ui.widgets.alert_strip import AlertStrip
from console.ui.widgets.datasets_table import DatasetsTable
from console.ui.widgets.drafter_panel import DrafterPanel
from console.ui.widgets.host_header import HostHeader
from console.ui.widgets.jobs_table import JobsTable
from console.ui.widgets.key_footer import KeyFooter
from console.ui.widgets.server_panel import ServerPanel

PAGE_PANEL = {MAIN: "server", GPUS: "gpus", DRAFTER: "drafter"}
"""The panel whose border says what `]` shows next, on each page."""


class DashboardScreen(Screen[None]):
    """Everything about one host at a glance."""

    KEYS = DASHBOARD_COMMANDS
    HORIZONTAL_BREAKPOINTS = [
        (0, "-narrow"),
        (NARROW_BELOW, "-wide"),
        (DRAFTER_BESIDE_FROM, "-widest"),
    ]
    """Narrow: the GPU/training panel folds away, and below widest the drafter panel: `]` shows
    them on pages of the lower half (console/model/lower_pages.py, themes/dashboard.tcss)."""
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    """Short: the alerts take fewer lines."""
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    shown: Snapshot | None = None
    """The snapshot last shown: what the rows under the cursor stand for."""
    page = MAIN
    """The page of the lower half on display (`]`)."""
    _pages_shown: tuple[str, ...] = ()

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
        """The host on display: every intent names it."""

    def on_mount(self) -> None:
        """The widgets are composed: render the host the app shows, from now on."""
        signals_of(self).host_shown.subscribe(self, self._host_shown)

    def _host_shown(self, shown: HostShown) -> None:
        self.show(shown.view, shown.others, shown.now)

    def on_resize(self, _: events.Resize) -> None:
        """Another width folds other panels: the page on display may be gone."""
        self._show_page()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`]` acts (and shows in the footer) only while some panel is folded away."""
        if action == "next_panels":
            return len(self._pages()) > 1
        return True

    def action_next_panels(self) -> None:
        """]: the next page of the lower half."""
        self.page = next_page(self._pages(), self.page)
        self._show_page()

    def _pages(self) -> tuple[str, ...]:
        drafter_shown = any(panel.has_class("-shown") for panel in self.query(DrafterPanel))
        width, height = self.size if self.size.area else self.app.size
        return lower_pages(width, height, drafter_shown)

    def _show_page(self) -> None:
        """Show the page on display, or the first when it is gone; hint at the others."""
        pages = self._pages()
        if self.page not in pages:
            self.page = MAIN
        for page in (GPUS, DRAFTER):
            self.set_class(self.page == page, f"-page-{page}")
        hinted = PAGE_PANEL[self.page]
        for panel in self.query("#server, #gpus, #drafter"):
            panel.border_subtitle = page_hint(pages, self.page) if panel.id == hinted else ""
        if pages != self._pages_shown:  # `]` comes or goes in the footer
            self._pages_shown = pages
            self.refresh_bindings()

    def compose(self) -> ComposeResult:
        """Header, datasets, jobs beside server and GPUs, alerts, footer."""
        yield HostHeader(id="host-header")
        yield DatasetsTable(id="datasets")
        with Horizontal(id="lower"):
            yield JobsTable(id="jobs")
            with Vertical(id="side"):
                yield ServerPanel(id="server")
                yield Static(id="gpus")
            yield DrafterPanel(id="drafter")
        yield AlertStrip(id="alerts")
        yield KeyFooter()

    def show(self, view: HostView, others: list[str], now: float) -> None:
        """Render `view` as of `now`; panels turn stale when its data is old."""
        headers = self.query(HostHeader)
        if not headers:  # being torn down
            return
        self.host, self.shown = view.name, view.snapshot  # what a key acts on from now
        headers.first().show(view, others, now)
        data_age = view.age_s()
        stale = (data_age or 0) > STALE_AFTER_S or view.state.status != "up"
        for panel in self.query("#datasets, #jobs, #server, #gpus"):
            panel.set_class(stale, "-stale")
            panel.border_title = f"{panel.id} · {age(data_age)}"
        snapshot = view.snapshot
        if snapshot is None:
            self._show_no_data(no_data_text(view, now))
            return
        self.query_one("#datasets").border_subtitle = literal(_pipeline_line(snapshot))
        server_up = snapshot.server is not None and snapshot.server.healthy is True
        cut_warned = frozenset(a.subject for a in snapshot.alerts if a.kind == TRUNCATION_HIGH)
        self.query_one(DatasetsTable).show(
            snapshot.datasets, snapshot.taken_at, server_up, cut_warned
        )
        stale_subjects = frozenset(a.subject for a in snapshot.alerts if a.kind == "stale_code")
        jobs = as_asked(snapshot.jobs, view.stops_asked)
        self.query_one(JobsTable).show(jobs, view.agent_now() or now, stale_subjects)
        self.query_one(JobsTable).show_note(literal(" · ".join(under_way(snapshot.operations))))
        self.query_one(ServerPanel).show(
            snapshot.server, list(view.throughput), snapshot.datasets, snapshot.taken_at,
            snapshot.jobs,
        )  # fmt: skip
        training = training_text(
            snapshot.training, snapshot.jobs, measured_accept_length(snapshot.evaluation)
        )
        gpus = gpu_text(snapshot.gpus, snapshot.gpu_note)
        self.query_one("#gpus", Static).update(
            literal_lines(f"{gpus}\n{training}" if training else gpus)
        )
        self.query_one(AlertStrip).show(snapshot.alerts)
        self.query_one(DrafterPanel).show(
            snapshot.evaluation, snapshot.export, snapshot.drafter_check
        )
        self._show_page()

    def _show_no_data(self, why: str) -> None:
        """No snapshot of this host: no row or figure of another host stays, each panel says why."""
        self.query_one("#datasets").border_subtitle = literal(why)
        self.query_one(DatasetsTable).show(())
        self.query_one(JobsTable).show((), 0.0)
        self.query_one(ServerPanel).show_nothing(why)
        self.query_one("#gpus", Static).update(literal(why))
        self.query_one(AlertStrip).update(in_role(why, "muted"))
        self.query_one(DrafterPanel).show(None, None)
        self._show_page()

    @property
    def selected_dataset(self) -> str | None:
        """The dataset under the datasets table's cursor."""
        return self.query_one(DatasetsTable).selected_name

    @property
    def selected_job_id(self) -> str | None:
        """The job under the cursor of the table in focus.

        From the datasets table: the job writing that dataset, a live one first, else the latest.
        """
        datasets = self.query_one(DatasetsTable)
        if not datasets.has_focus:
            return self.query_one(JobsTable).selected_job_id
        jobs = self.shown.jobs if self.shown else ()
        writers = [j for j in jobs if j.dataset == datasets.selected_name and not j.external]
        writers.sort(key=lambda job: (job.state in ("starting", "running"), job.started_at or 0))
        return writers[-1].id if writers else None

    @property
    def selected_job(self) -> JobInfo | None:
        """The job `selected_job_id` names, as last shown."""
        jobs = self.shown.jobs if self.shown else ()
        return next((job for job in jobs if job.id == self.selected_job_id), None)

    @property
    def selected_dataset_progress(self) -> DatasetProgress | None:
        """The dataset under the datasets table's cursor, as last shown."""
        datasets = self.shown.datasets if self.shown else ()
        return next((d for d in datasets if d.name == self.selected_dataset), None)

    @on(DataTable.RowSelected, "#datasets")
    def dataset_chosen(self, event: DataTable.RowSelected) -> None:
        """Enter on a dataset asks for its detail."""
        if event.row_key.value is not None:
            self.post_message(DatasetDetailRequested(self.host, event.row_key.value))

    def action_generate(self) -> None:
        """g: generate on the dataset under the cursor."""
        self.post_message(GenerateRequested(self.host, self.selected_dataset_progress))

    def action_generate_all(self) -> None:
        """G: generate on every dataset still to do."""
        self.post_message(GenerateAllRequested(self.host))

    def action_logs(self) -> None:
        """l: the selected job's log."""
        self.post_message(LogsRequested(self.host, self.selected_job_id))

    def action_stop_job(self) -> None:
        """k: stop the selected job."""
        self.post_message(StopRequested(self.host, self.selected_job))

    def action_redeploy(self) -> None:
        """R: kill, deploy and restart the selected job."""
        self.post_message(RedeployRequested(self.host, self.selected_job))

    def action_autopilot(self) -> None:
        """A: start, pause or resume the autopilot."""
        self.post_message(AutopilotRequested(self.host))

    def action_deploy_screen(self) -> None:
        """d: the drift of the mapped files."""
        self.post_message(DeployRequested(self.host))

    def action_launch_kind(self, kind: str) -> None:
        """v, t, s, x: start the configured job of `kind`."""
        self.post_message(LaunchRequested(self.host, kind))

    def action_export_report(self) -> None:
        """X: the export's report."""
        self.post_message(ExportReportRequested(self.host))

    def action_evaluate_drafter(self) -> None:
        """B: measure the drafter."""
        self.post_message(EvaluateRequested(self.host))

    def action_pipeline(self) -> None:
        """p: the pipeline's stages."""
        self.post_message(PipelineRequested(self.host))


def _pipeline_line(snapshot: Snapshot) -> str:
    """The autopilot where it is on; else the next stage and its key."""
    line = autopilot_line(snapshot.autopilot)
    if line:
        return f"{line} (A: pause/resume, p: stages)"
    upcoming = next_stage(stages(snapshot))
    if upcoming is None:
        return "pipeline done"
    return f"pipeline next: {upcoming.name} ({upcoming.key}; p for all stages; A: autopilot)"
