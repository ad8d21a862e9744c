"""Where the look is decided: the Textual stylesheets' folder, and the skin of the state roles.

The stylesheets sit in `themes/` beside `console/` in a checkout; a wheel carries them as
`console/themes/` (see pyproject's force-include). Both are looked for, in that order.

The skin gives each role of `console.model.roles` its Rich style, as a k9s skin gives each state
a colour: table cells are Rich text, so this is the one place a widget's colour is spelt.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from console.model.roles import Role
from console.model.safe_text import literal

PACKAGE = Path(__file__).resolve().parents[1]
"""The `console` package (this module sits in `console/ui/`)."""

SKIN: dict[Role, str] = {
    "critical": "bold red", "error": "red", "attention": "bold yellow", "warning": "yellow",
    "healthy": "green", "passed": "dim green", "info": "cyan", "muted": "dim", "plain": "",
}  # fmt: skip
"""Each role's Rich style: ANSI colours, so the terminal's own palette draws them."""


def themes_dir() -> Path:
    """The folder holding the `.tcss` stylesheets."""
    for candidate in (PACKAGE / "themes", PACKAGE.parent / "themes"):
        if (candidate / "base.tcss").is_file():
            return candidate
    raise FileNotFoundError(
        f"no themes/base.tcss beside {PACKAGE} or in it; reinstall eagle-console"
    )


def in_role(text: str, role: Role) -> Text:
    """`text` shown literally (sanitised, never markup) in the look of `role`."""
    return literal(text, SKIN[role])
