"""Hostile text as a box could hold it, planted in every string a host sends, and the checks.

Each hostile string starts with a label naming where it was planted, then carries markup that
would restyle or crash a renderer and escape sequences that would drive a terminal: a title
change, a screen clear, a cursor-position query (the terminal would answer with keystrokes), a
C1 CSI, a DCS, NUL, backspace, carriage return, a bidi override and an undecodable byte.
The tests and the `terminal_text` fault scenario share it.
"""

from __future__ import annotations

import dataclasses
import typing
import unicodedata
from typing import Any, Literal, TypeVar

from agent.protocol import Snapshot, TrainingProgress
from tests.support.sample_snapshot import SNAPSHOT

MARKUP = "[red]M[/][/][link=https://evil.example]L[/link]"
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[6n\x9b31m\x1bP+q\x1b\\\x00\x08\r\u202e\udcff"
SHOWN_MARKUP = "[red]M[/][/]"
"""What a screen must show of MARKUP (its start: narrow cells cut the rest)."""
BIDI = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
                  0x2028, 0x2029})  # fmt: skip
T = TypeVar("T")


def hostile(label: str) -> str:
    """A hostile string that says where it was planted."""
    return f"{label}{MARKUP}{ESCAPES}~"


def plant(value: T, label: str = "") -> T:
    """`value` with every string in it, at any depth, replaced by `hostile(<its path>)`.

    Fields of a fixed set of values (a `Literal`) keep theirs: the decoder refuses any other.
    """
    planted: Any
    if isinstance(value, str):
        planted = hostile(label)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fixed = _fixed_value_fields(type(value))
        changes = {
            f.name: plant(getattr(value, f.name), f"{label}.{f.name}".lstrip("."))
            for f in dataclasses.fields(value)
            if f.name not in fixed
        }
        planted = dataclasses.replace(value, **changes)
    elif isinstance(value, tuple):
        planted = tuple(plant(item, f"{label}[{i}]") for i, item in enumerate(value))
    elif isinstance(value, dict):
        planted = {
            plant(key, f"{label}<{i}>"): plant(item, f"{label}[{i}]")
            for i, (key, item) in enumerate(value.items())
        }
    else:
        planted = value
    return planted  # type: ignore[no-any-return]


def _fixed_value_fields(cls: type) -> set[str]:
    hints = typing.get_type_hints(cls)
    return {name for name, hint in hints.items() if Literal in _origins(hint)}


def _origins(hint: Any) -> set[Any]:
    return {typing.get_origin(hint), *(typing.get_origin(arg) for arg in typing.get_args(hint))}


def unsafe_characters(text: str) -> list[str]:
    """Every character in `text` a terminal would act on or a reader be fooled by, as repr."""
    return [
        repr(char)
        for char in text
        if unicodedata.category(char) in ("Cc", "Cs") or ord(char) in BIDI
    ]


def hostile_snapshot() -> Snapshot:
    """The sample snapshot with a training job, server log fields and a sick server, all planted."""
    server = SNAPSHOT.server
    assert server is not None
    sample = dataclasses.replace(
        SNAPSHOT,
        server=dataclasses.replace(server, healthy=False, detail="refused", log_stats={"a": "b"}),
        training=(
            TrainingProgress(
                "sglang-1", 10, 100, 1, 0.5, None, None, 2.1, 2.3, 8, 60.0, (0.9, 0.5), (1.5, 2.1)
            ),
        ),  # fmt: skip
    )
    return plant(sample, "snap")
