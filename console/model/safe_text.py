"""Text from the host, made safe to show: the one sanitiser every screen and command uses.

Dataset names, log lines, error reasons, command lines, paths and messages come from files that
anyone on the box can write. Shown as they are, an escape sequence in a log line would drive the
user's terminal (retitle it, move the cursor, answer queries with keystrokes), and a square-bracket
tag in a dataset name would be read as markup (or crash the renderer). So:

- `sanitise` replaces every character that is not plain text with a visible placeholder: C0
  controls but tab (including newline and carriage return) and DEL by their Control Pictures
  (ESC shows as ␛), C1 controls, bidirectional overrides and isolates and line/paragraph
  separators by `<U+XXXX>`, and lone surrogates (undecodable bytes) by U+FFFD. It is idempotent.
- `literal` (one line) and `literal_lines` (a block) wrap sanitised text in a Rich `Text`, which
  no renderer parses as markup: every widget cell, static, table and headless line that holds
  host text is built from them.

No Textual here (the headless commands use it too).
"""

from __future__ import annotations

import re

from rich.text import Text

TAB = 0x09
DEL = 0x7F
SYMBOL_FOR_DEL = "\u2421"
"""␡"""
REPLACEMENT = "\ufffd"
BIDI_AND_SEPARATORS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
                       0x2028, 0x2029)  # fmt: skip
"""Arabic letter mark, LRM, RLM, embeddings and overrides, isolates, line and paragraph separators:
they reorder or break what the user reads without being seen."""


def _placeholders() -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20) if code != TAB}
    table[DEL] = SYMBOL_FOR_DEL
    table.update({code: f"<U+{code:04X}>" for code in range(0x80, 0xA0)})
    table.update({code: f"<U+{code:04X}>" for code in BIDI_AND_SEPARATORS})
    table.update({code: REPLACEMENT for code in range(0xD800, 0xE000)})
    return table


PLACEHOLDERS: dict[int, str] = _placeholders()
"""Code point -> what is shown instead."""
UNSAFE = re.compile("[" + "".join(re.escape(chr(code)) for code in sorted(PLACEHOLDERS)) + "]")
"""Any character `sanitise` replaces (a fast check: most text has none)."""


def sanitise(text: str) -> str:
    """`text` with every control character, escape, bidi control and lone surrogate made visible."""
    if UNSAFE.search(text) is None:
        return text
    return text.translate(PLACEHOLDERS)


def sanitise_lines(text: str) -> str:
    """Sanitised line by line: the newlines of a multi-line text stay line breaks."""
    return "\n".join(sanitise(line) for line in text.split("\n"))


def literal(text: str, style: str = "") -> Text:
    """Host text as a one-line Rich `Text`: sanitised, styled as a whole, never parsed as markup."""
    return Text(sanitise(text), style=style, end="")


def literal_lines(text: str, style: str = "") -> Text:
    """`literal` for a block of lines: its newlines stay line breaks."""
    return Text(sanitise_lines(text), style=style, end="")
