"""Named logs read by byte offset, so a console that reconnects misses nothing and sees nothing twice.

A read starts at an offset and returns whole lines after it with the offset to ask from next. A
file that was cut shorter or replaced (a new inode) is reported as reset and read from its start.
A line longer than the cap is shortened in what is sent, but offsets always count real bytes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.host.regular_files import check_regular, open_regular
from agent.protocol import MAX_EXIT_REASON_CHARS, LogChunk

MAX_LINE_CHARS = 8192
MAX_READ_BYTES = 512 * 1024


@dataclass(frozen=True, slots=True)
class NamedLog:
    """A log the agent will serve, by name."""

    name: str
    path: Path


def read_chunk(
    log: NamedLog,
    offset: int,
    inode: int | None,
    max_bytes: int = MAX_READ_BYTES,
    redraws_end_lines: bool = False,
) -> LogChunk:
    """Whole lines of `log` after `offset` (from the start if the file was reset since `inode`).

    With `redraws_end_lines`, a carriage return ends a line too: a tqdm bar redrawn in place
    writes no newline for as long as it runs, and its progress must not wait for one.
    A log that is not a regular file (a FIFO, a device) raises NotRegularFileError unread.
    """
    try:
        info = log.path.stat()
    except FileNotFoundError:
        return LogChunk(log.name, offset, offset, "", size_bytes=0, inode=None)
    check_regular(log.path, info.st_mode)
    reset = (inode is not None and info.st_ino != inode) or offset > info.st_size
    start = 0 if reset else max(offset, 0)
    if offset < 0:  # negative: that many bytes back from the end, aligned to a line start
        start = _line_start_before(log.path, max(0, info.st_size + offset))
    if start == info.st_size and not reset:  # nothing new: the stat is all it takes
        return LogChunk(log.name, start, start, "", info.st_size, info.st_ino)
    with open_regular(log.path) as handle:
        handle.seek(start)
        data = handle.read(min(max_bytes, info.st_size - start))
    end = max(data.rfind(b"\n"), data.rfind(b"\r") if redraws_end_lines else -1) + 1
    if end == 0 and len(data) == max_bytes:
        end = len(data)  # one line longer than a whole read: send it cut, move on
    raw = data[:end].decode(errors="replace")
    if redraws_end_lines:  # each redraw a line of its own, capped alone: the newest is kept whole
        raw = raw.replace("\r", "\n")
    text = "\n".join(_cap(line) for line in raw.split("\n"))
    return LogChunk(log.name, start, start + end, text, info.st_size, info.st_ino, reset=reset)


def _cap(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} … [{len(line) - MAX_LINE_CHARS:,} more characters cut]"


def _line_start_before(path: Path, position: int) -> int:
    if position == 0:
        return 0
    with open_regular(path) as handle:
        handle.seek(max(0, position - 1))
        before = handle.read(1)
        if before == b"\n":
            return position
        rest = handle.readline()
        return position + len(rest) if rest.endswith(b"\n") else position


def log_size(path: Path) -> int | None:
    """Bytes in `path`, or None if it does not exist."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
"""A terminal's escape sequences: CSI (colours, cursor moves), OSC (titles, links), and the rest."""
TAIL_BYTES = 4096
TAIL_LINE_CHARS = 200


def last_lines(path: Path, count: int) -> list[str]:
    """The last `count` non-blank lines of a log (each cut to TAIL_LINE_CHARS); [] if unreadable."""
    try:
        chunk = read_chunk(NamedLog("tail", path), -TAIL_BYTES, None)
    except OSError:
        return []
    lines = [printable_line(line) for line in chunk.text.splitlines()]
    return [line[:TAIL_LINE_CHARS] for line in [line for line in lines if line][-count:]]


def printable_line(line: str) -> str:
    """`line` fit to travel in an event, a webhook or an alert.

    Its terminal escapes (CSI, OSC) are removed, and every other character that does not print
    (C0, C1, bidi, zero-width) dropped.
    """
    return "".join(c for c in _ESCAPES.sub("", line) if c.isprintable()).strip()


PROGRAM_LABELS = ("runner: ", "vocab: ", "export: ", "evaluate: ", "shim: ")
"""How the pipeline's programs (and the shim) begin their last line: dropped, the job names them."""
_LOG_STAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\s+")
"""The time Python's logging puts before a line by default: the reason is what follows."""


def reason_text(line: str) -> str:
    """One line made safe and short: no escapes, control characters, log stamp or program label."""
    text = printable_line(line)
    text = _LOG_STAMP.sub("", text)
    label = next((label for label in PROGRAM_LABELS if text.startswith(label)), "")
    return cut(text[len(label) :].strip())


def bounded_reason(value: object) -> str | None:
    """A recorded reason as it may be sent: printable, one line, cut; None if it is not text."""
    if not isinstance(value, str):
        return None
    text = "".join(c if c.isprintable() else " " for c in value[: MAX_EXIT_REASON_CHARS * 4])
    return cut(" ".join(text.split())) or None


def cut(text: str) -> str:
    """`text` no longer than MAX_EXIT_REASON_CHARS, cut in the middle with "…".

    A reason says what went wrong first and what to do last ("… (in eagle-console.toml:
    trust_remote_code = true)"): a cut at the end lost the advice, so both ends stay.
    """
    if len(text) <= MAX_EXIT_REASON_CHARS:
        return text
    head = MAX_EXIT_REASON_CHARS * 2 // 5
    tail = MAX_EXIT_REASON_CHARS - head - 1
    return text[:head].rstrip() + "…" + text[-tail:].lstrip()
