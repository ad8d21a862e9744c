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
    app_wide: bool = False
    """Run by the app on any screen; otherwise by the screen on display (the dashboard's keys)."""

    @property
    def binding_action(self) -> str:
        """The action as an app binding names it: the screen's own, unless app-wide.

        The bindings stay on the app so every screen's footer lists the same keys; a key the
        screen on display has no action for does nothing there.
        """
        return self.action if self.app_wide else f"screen.{self.action}"


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
    Command("e", "events", "Events", show=False, app_wide=True),
    Command("h", "next_host", "Next host", app_wide=True),
    Command("r", "reconnect", "Reconnect", show=False, app_wide=True),
    Command("ctrl+t", "toggle_theme", "Dark/light", show=False, app_wide=True),
    Command("question_mark", "help", "Help", app_wide=True),
    Command("q", "quit", "Quit", app_wide=True),
)
