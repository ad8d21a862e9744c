"""`d`: every mapped file as unchanged, changed, new or missing locally; its diff; deploy; rollback."""

from __future__ import annotations

from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

from console.link.deploy import FilePlan
from console.model.roles import DEPLOY_ROLES
from console.model.safe_text import literal, sanitise_lines
from console.ui.commands import DEPLOY_COMMANDS, bindings
from console.ui.intents import DeployAllRequested, DiffRequested, RollbackRequested
from console.ui.signals import DeployPlanned, signals_of
from console.ui.themes import in_role
from console.ui.widgets.key_footer import KeyFooter


class DiffScreen(ModalScreen[None]):
    """One file's unified diff, highlighted."""

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, diff: str) -> None:
        super().__init__()
        self.diff = diff

    def compose(self) -> ComposeResult:
        """The diff in a scrollable box."""
        with VerticalScroll(id="diff-box"):
            yield Static(
                Syntax(
                    sanitise_lines(self.diff) or "no difference",
                    "diff",
                    theme="ansi_dark",
                    background_color="default",
                )
            )

    def action_close(self) -> None:
        """Back."""
        _ = self.dismiss(None)


class DeployScreen(Screen[None]):
    """The drift table; the app does the deploying (it owns the link) and says when it is done."""

    KEYS = DEPLOY_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, plans: list[FilePlan], bundle_line: str = "") -> None:
        super().__init__()
        self.host = host
        self.plans = plans
        self.bundle_line = bundle_line

    def compose(self) -> ComposeResult:
        """Title, the table, footer."""
        yield Static(id="deploy-title")
        table: DataTable[Text | str] = DataTable(id="deploy-table", cursor_type="row")
        table.add_columns("status", "remote", "local", "host sha256", "local sha256")
        yield table
        yield KeyFooter()

    def on_mount(self) -> None:
        """Show the plans, and hear when this host's files are planned afresh."""
        self._show_plans()
        signals_of(self).deploy_planned.subscribe(self, self._planned)

    def _planned(self, planned: DeployPlanned) -> None:
        """A deploy or a rollback changed the host's files: show them as they are now."""
        if planned.host == self.host:
            self.plans, self.bundle_line = planned.plans, planned.bundle_line
            self._show_plans()

    def _show_plans(self) -> None:
        """The title and one row per file, the cursor kept on the same file."""
        changed = sum(plan.needs_deploy for plan in self.plans)
        self.query_one("#deploy-title", Static).update(
            Text.assemble(
                literal(self.host, "bold"),
                literal(f" · deploy drift · {changed} file(s) to deploy · {self.bundle_line}"),
            )
        )
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for plan in self.plans:
            table.add_row(
                in_role(plan.status, DEPLOY_ROLES[plan.status]), literal(plan.remote),
                literal(str(plan.local or "—")), literal((plan.remote_sha256 or "—")[:12]),
                (plan.local_sha256 or "—")[:12], key=plan.remote,
            )  # fmt: skip
        table.move_cursor(row=min(row, max(0, len(self.plans) - 1)))

    @property
    def selected(self) -> FilePlan | None:
        """The plan under the cursor."""
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return self.plans[table.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a file: the table takes the key, so its selection opens the diff."""
        event.stop()
        self.action_diff()

    def action_diff(self) -> None:
        """Ask the app for the selected file's diff."""
        if self.selected is not None:
            self.post_message(DiffRequested(self.host, self.selected.remote))

    def action_deploy(self) -> None:
        """Ask the app to deploy every changed file."""
        self.post_message(DeployAllRequested(self.host))

    def action_rollback(self) -> None:
        """Ask the app to roll the selected file back."""
        if self.selected is not None:
            self.post_message(RollbackRequested(self.host, self.selected.remote))

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)
