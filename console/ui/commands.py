"""The one command table: it drives the bindings, the footers, the help screen and the palette.

One table per screen, plus the app's own keys. A screen binds its table (`bindings`), so its
footer lists exactly the keys that act on it; `?` lists the table of the screen it was opened
over (`keys_of`), the keys a widget binds itself (enter on a table, `o`, tab) included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding
from textual.dom import DOMNode


@dataclass(frozen=True, slots=True)
class Command:
    """A key, the action it runs, and what it does in words."""

    key: str
    action: str
    description: str
    show: bool = True
    """Shown in the footer (all commands are in help and the palette)."""
    bound: bool = True
    """Bound from this table; False when a widget binds it itself (a table's enter): listed only."""
    short: str = ""
    """Its word in a footer too narrow for every key; empty: it folds out of such a footer."""


APP_COMMANDS: tuple[Command, ...] = (
    Command("tab", "focus_next", "Next panel", bound=False),
    Command("r", "reconnect", "Reconnect", show=False),
    Command("ctrl+t", "toggle_theme", "Dark/light", show=False),
    Command("question_mark", "help", "Help", short="Help"),
    Command("q", "quit", "Quit", short="Quit"),
)
"""Keys that act on every screen, bound on the app."""

DASHBOARD_COMMANDS: tuple[Command, ...] = (
    Command("g", "generate", "Generate", short="Generate"),
    Command("G", "generate_all", "Generate all", show=False),
    Command("l", "logs", "Logs", short="Logs"),
    Command("k", "stop_job", "Stop job", short="Stop"),
    Command("R", "redeploy", "Kill+deploy+restart", short="Redeploy"),
    Command("d", "deploy_screen", "Deploy", short="Deploy"),
    Command("v", "launch_kind('vocab')", "Vocab map"),
    Command("t", "launch_kind('train')", "Train"),
    Command("s", "launch_kind('server')", "SGLang"),
    Command("x", "launch_kind('export')", "Export data", show=False),
    Command("X", "export_report", "Export report", show=False),
    Command("B", "evaluate_drafter", "Bench drafter", show=False),
    Command("p", "pipeline", "Pipeline"),
    Command("A", "autopilot", "Autopilot", short="Auto"),
    Command("e", "app.events", "Events", show=False),
    Command("h", "app.next_host", "Next host", short="Host"),
    Command("enter", "select_cursor", "Dataset detail (datasets table)", bound=False),
    Command("o", "cycle_sort", "Sort datasets (datasets table)", bound=False, short="Sort"),
)

LOG_COMMANDS: tuple[Command, ...] = (
    Command("space", "toggle_follow", "Follow/pause"),
    Command("slash", "search", "Search"),
    Command("n", "next_match", "Next"),
    Command("N", "previous_match", "Previous"),
    Command("f", "filter", "Filter"),
    Command("c", "copy_line", "Copy line"),
    Command("escape,q", "back", "Back"),
)

DEPLOY_COMMANDS: tuple[Command, ...] = (
    Command("enter", "diff", "Diff"),
    Command("D", "deploy", "Deploy changed"),
    Command("b", "rollback", "Roll back file"),
    Command("escape,q", "back", "Back"),
)

DATASET_COMMANDS: tuple[Command, ...] = (Command("escape,q", "back", "Back"),)
PIPELINE_COMMANDS: tuple[Command, ...] = (Command("escape,q,p", "back", "Back"),)
EXPORT_COMMANDS: tuple[Command, ...] = (Command("escape,q,X", "back", "Back"),)
EVENTS_COMMANDS: tuple[Command, ...] = (Command("escape,q,e", "back", "Back"),)

COMMANDS: tuple[Command, ...] = APP_COMMANDS + DASHBOARD_COMMANDS
"""Every key of the app and its main screen (the palette's list on the dashboard)."""


def bindings(commands: Iterable[Command]) -> list[Binding]:
    """The Textual bindings of `commands` (those a widget binds itself are left to it)."""
    return [Binding(c.key, c.action, c.description, show=c.show) for c in commands if c.bound]


def key_label(key: str) -> str:
    """A key as help shows it: `?` for question_mark, `/` for slash, several with slashes."""
    names = {"question_mark": "?", "slash": "/"}
    return " / ".join(names.get(part, part) for part in key.split(","))


def keys_of(screen: DOMNode) -> tuple[Command, ...]:
    """Every key that acts on `screen`: its own table, then the app's keys it does not shadow."""
    own: tuple[Command, ...] = getattr(screen, "KEYS", ())
    taken = {part for command in own for part in command.key.split(",")}
    return own + tuple(c for c in APP_COMMANDS if c.key not in taken)
