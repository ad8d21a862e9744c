"""The one command table: it drives the bindings, the footer, the help screen and the palette."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    """A key, the action it runs, and what it does in words."""

    key: str
    action: str
    description: str
    show: bool = True
    """Shown in the footer (all commands are in help and the palette)."""


COMMANDS: tuple[Command, ...] = (
    Command("g", "generate", "Generate"),
    Command("G", "generate_all", "Generate all", show=False),
    Command("l", "logs", "Logs"),
    Command("k", "stop_job", "Stop job"),
    Command("R", "redeploy", "Kill+deploy+restart"),
    Command("d", "deploy_screen", "Deploy"),
    Command("v", "launch_kind('vocab')", "Vocab map"),
    Command("t", "launch_kind('train')", "Train"),
    Command("s", "launch_kind('server')", "SGLang"),
    Command("x", "launch_kind('export')", "Export data", show=False),
    Command("X", "export_report", "Export report", show=False),
    Command("B", "evaluate_drafter", "Bench drafter", show=False),
    Command("p", "pipeline", "Pipeline"),
    Command("e", "events", "Events", show=False),
    Command("h", "next_host", "Next host"),
    Command("r", "reconnect", "Reconnect", show=False),
    Command("ctrl+t", "toggle_theme", "Dark/light", show=False),
    Command("question_mark", "help", "Help"),
    Command("q", "quit", "Quit"),
)
