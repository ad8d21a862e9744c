"""The README's key table and docs/keys.md name every key the dashboard binds, so they cannot drift
from console/ui/commands.py (`e` was in the help and the palette, in neither doc)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.ui.commands import APP_COMMANDS, DASHBOARD_COMMANDS

REPO = Path(__file__).resolve().parents[1]
KEY_NAMES = {"question_mark": "?", "right_square_bracket": "]", "tab": None}
"""How a binding's key is written in the docs (None: not a key a person is told about)."""


def dashboard_keys() -> list[str]:
    keys = []
    for command in (*DASHBOARD_COMMANDS, *APP_COMMANDS):
        for key in command.key.split(","):
            shown = KEY_NAMES.get(key, key)
            if shown is not None:
                keys.append(shown)
    return keys


def table_keys(text: str) -> set[str]:
    """Every `key` written in the first cell of a table row."""
    return {key for row in text.splitlines() if row.startswith("| `")
            for key in re.findall(r"`([^`]+)`", row.split("|")[1])}  # fmt: skip


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


@pytest.mark.parametrize(
    ("doc", "heading"),
    [("README.md", "## The dashboard and its keys"), ("docs/keys.md", "## Dashboard")],
)
def test_every_dashboard_key_is_in_the_docs_table(doc: str, heading: str) -> None:
    written = table_keys(section((REPO / doc).read_text(), heading))
    missing = [
        key for key in dashboard_keys() if not any(key in cell.split(" / ") for cell in written)
    ]
    assert not missing, f"{doc} does not name {missing}"
