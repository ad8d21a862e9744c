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

DEFAULT_RANK = 2
"""A key's rank unless the table says otherwise (a widget's own keys get it too)."""


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
    """Its word in a footer too narrow for every key in full; empty: the description is short."""
    rank: int = DEFAULT_RANK
    """When it leaves a footer too narrow for every key: the highest rank first, 0 last."""


APP_COMMANDS: tuple[Command, ...] = (
    Command("tab", "focus_next", "Next panel", bound=False),
    Command("r", "reconnect", "Reconnect", show=False),
    Command("ctrl+t", "toggle_theme", "Dark/light", show=False),
    Command("question_mark", "help", "Help", rank=0),
    Command("q", "quit", "Quit", rank=0),
)
"""Keys that act on every screen, bound on the app."""

DASHBOARD_COMMANDS: tuple[Command, ...] = (
    Command("g", "generate", "Generate", short="Gen", rank=1),
    Command("G", "generate_all", "Generate all", show=False),
    Command("l", "logs", "Logs", rank=1),
    Command("k", "stop_job", "Stop job", short="Stop", rank=1),
    Command("R", "redeploy", "Kill+deploy+restart", short="Redeploy", rank=1),
    Command("d", "deploy_screen", "Deploy"),
    Command("v", "launch_kind('vocab')", "Vocab map", short="Vocab", rank=4),
    Command("t", "launch_kind('train')", "Train", rank=4),
    Command("s", "launch_kind('server')", "SGLang", rank=4),
    Command("x", "launch_kind('export')", "Export data", short="Export", rank=4),
    Command("X", "export_report", "Export report", short="Report", rank=4),
    Command("B", "evaluate_drafter", "Bench drafter", short="Bench", rank=4),
    Command("p", "pipeline", "Pipeline", rank=3),
    Command("A", "autopilot", "Autopilot", short="Auto", rank=3),
    Command("e", "app.events", "Events", rank=3),
    Command("h", "app.next_host", "Next host", short="Host"),
    Command("right_square_bracket", "next_panels", "More panels", short="Panels", rank=1),
    Command("enter", "select_cursor", "Dataset detail (datasets table)", bound=False),
    Command("o", "cycle_sort", "Sort datasets (datasets table)", bound=False, short="Sort"),
)
"""`]` shows only while a panel is folded away (a narrow or short terminal)."""

LOG_COMMANDS: tuple[Command, ...] = (
    Command("space", "toggle_follow", "Follow/pause", short="Pause", rank=1),
    Command("slash", "search", "Search", rank=1),
    Command("n", "next_match", "Next"),
    Command("N", "previous_match", "Previous", short="Prev", rank=3),
    Command("f", "filter", "Filter", rank=1),
    Command("c", "copy_line", "Copy line", short="Copy", rank=3),
    Command("escape,q", "back", "Back", rank=0),
)

DEPLOY_COMMANDS: tuple[Command, ...] = (
    Command("enter", "diff", "Diff", rank=1),
    Command("D", "deploy", "Deploy changed", short="Deploy", rank=1),
    Command("b", "rollback", "Roll back file", short="Roll back"),
    Command("escape,q", "back", "Back", rank=0),
)

DATASET_COMMANDS: tuple[Command, ...] = (Command("escape,q", "back", "Back", rank=0),)
PIPELINE_COMMANDS: tuple[Command, ...] = (Command("escape,q,p", "back", "Back", rank=0),)
EXPORT_COMMANDS: tuple[Command, ...] = (Command("escape,q,X", "back", "Back", rank=0),)
EVENTS_COMMANDS: tuple[Command, ...] = (Command("escape,q,e", "back", "Back", rank=0),)

COMMANDS: tuple[Command, ...] = APP_COMMANDS + DASHBOARD_COMMANDS
"""Every key of the app and its main screen (the palette's list on the dashboard)."""


def bindings(commands: Iterable[Command]) -> list[Binding]:
    """The Textual bindings of `commands` (those a widget binds itself are left to it)."""
    return [Binding(c.key, c.action, c.description, show=c.show) for c in commands if c.bound]


def key_label(key: str) -> str:
    """A key as help shows it: `?` for question_mark, `/` for slash, several with slashes."""
    names = {"question_mark": "?", "slash": "/", "right_square_bracket": "]"}
    return " / ".join(names.get(part, part) for part in key.split(","))


def keys_of(screen: DOMNode) -> tuple[Command, ...]:
    """Every key that acts on `screen`: its own table, then the app's keys it does not shadow."""
    own: tuple[Command, ...] = getattr(screen, "KEYS", ())
    taken = {part for command in own for part in command.key.split(",")}
    return own + tuple(c for c in APP_COMMANDS if c.key not in taken)
