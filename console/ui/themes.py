"""Where the Textual stylesheets live, from a checkout or from an installed wheel.

In a checkout they sit in `themes/` beside `console/`; a wheel carries them as
`console/themes/` (see pyproject's force-include). Both are looked for, in that order.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
"""The `console` package (this module sits in `console/ui/`)."""


def themes_dir() -> Path:
    """The folder holding the `.tcss` stylesheets."""
    for candidate in (PACKAGE / "themes", PACKAGE.parent / "themes"):
        if (candidate / "base.tcss").is_file():
            return candidate
    raise FileNotFoundError(
        f"no themes/base.tcss beside {PACKAGE} or in it; reinstall eagle-console"
    )
