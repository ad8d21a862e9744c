"""The rule in the code itself: no f-string reaches a renderer that reads markup.

Textual's Static and DataTable cells, and Rich's console.print and table cells, parse a plain
string as markup; an f-string is how host text gets into one. Such text must be built as a
`Text` (`console.model.safe_text.literal`) instead. This walks the console's source, so a new screen
or command that forgets is caught before it ships (the pilot test catches it at run time).
"""

from __future__ import annotations

import ast
from pathlib import Path

import console

MARKUP_SINKS = {"Static", "Label", "update", "add_row", "add_rows", "print", "Table", "Syntax"}
"""Callables whose string arguments are read as markup (or, for Syntax, written out raw)."""


def markup_from_fstrings(source: str) -> list[int]:
    """Line numbers where an interpolating f-string is passed to a markup sink, or markup is on."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        if name in MARKUP_SINKS and any(_interpolates(argument) for argument in arguments):
            found.append(node.lineno)
        if name == "from_markup" or any(
            k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        ):
            found.append(node.lineno)
    return found


def _interpolates(node: ast.expr) -> bool:
    """An f-string with a value in it; `{n:,}`-style (with a format spec) formats a number."""
    return isinstance(node, ast.JoinedStr) and any(
        isinstance(part, ast.FormattedValue) and part.format_spec is None for part in node.values
    )


def test_no_console_module_passes_an_f_string_to_a_markup_renderer() -> None:
    package = Path(console.__file__).parent
    offenders = {
        str(path.relative_to(package.parent)): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := markup_from_fstrings(path.read_text()))
    }
    assert offenders == {}, (
        "build host text with console.model.safe_text.literal(), not an f-string"
    )


def test_the_check_finds_what_it_looks_for() -> None:
    bad = "Static(f'[b]{name}[/b]')\nout.print(f'{x}')\ntable.add_row(name, f'{y}')\nText.from_markup(s)\n"
    good = "Static(literal(name))\nout.print('plain')\nnotify(f'{x}')\nadd_row(f'{n:,}')\n"
    assert markup_from_fstrings(bad) == [1, 2, 3, 4]
    assert markup_from_fstrings(good) == []
