"""What a critical alert writes to the terminal: a bell and a desktop notification escape.

Pure: no I/O and no Textual. OSC 777 (`notify;title;body`: foot, kitty, WezTerm, urxvt, the
VTE terminals) and OSC 9 (iTerm2, Windows Terminal, ConEmu) are both sent; a terminal ignores
the one it does not know. The body is host text, so it is sanitised and stripped of `;`, which
would end a field of OSC 777, before it goes inside an escape sequence.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.protocol import Alert
from console.model.safe_text import sanitise

BELL = "\a"
ST = "\x1b\\"
"""String terminator of an OSC sequence."""
CRITICAL = "error"
MAX_BODY_CHARS = 200

AlertKey = tuple[str, str, str]
"""(host, kind, subject): one alert, however many snapshots repeat it."""


def critical_keys(host: str, alerts: Iterable[Alert]) -> dict[AlertKey, Alert]:
    """The critical alerts among `alerts`, by key."""
    return {(host, a.kind, a.subject): a for a in alerts if a.severity == CRITICAL}


def alarm_text(host: str, alert: Alert, *, bell: bool, desktop: bool) -> str:
    """The bytes to write for one new critical alert; empty when both are turned off."""
    body = _field(f"{host}: {alert.message}")[:MAX_BODY_CHARS]
    title = "eagle-console"
    desktop_escape = f"\x1b]777;notify;{title};{body}{ST}\x1b]9;{title}: {body}{ST}"
    return (BELL if bell else "") + (desktop_escape if desktop else "")


def _field(text: str) -> str:
    return sanitise(text).replace(";", ",")
