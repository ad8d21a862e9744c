"""speculators' console output put back together, line by line.

speculators 0.9.0 prints its metrics through rich's RichHandler with a filter that flattens each
record to `train/loss=1.234, train/full_acc_0=0.700, ..., epoch=0, lr=1.00e-04, global_step=41`
(train/logger.py `setup_root_logger`, `FormatDictFilter`). Written to a file, rich wraps that
at 80 columns: the first line carries the time and level columns and the source file on the
right, the rest are indented continuations. Its epoch bars (tqdm.rich, desc `Epoch N` for both
training and validation) print once, when they close, and "Training epoch 1/3 started" lines say
which bar is which. This module only reassembles; what the figures mean is log.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEAD = re.compile(
    r"^\s*(?:\[[^\]]{1,40}\]\s+)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<body>.*)$"
)
_SOURCE_COLUMN = re.compile(r"\s{2,}[^\s=,]{1,200}:\d{1,7}\s*$")
"""Rich's right-hand column: the file and line that logged (`trainer.py:587`)."""
_PAIR = re.compile(r"^(?P<key>[A-Za-z_][\w/.-]{0,200})=(?P<value>\S{1,100})$")
PHASE = re.compile(
    r"(?P<phase>Training|Validation) epoch (?P<epoch>\d{1,6})/(?P<epochs>\d{1,6}) "
    r"(?:started|completed)"
)
EPOCH_BAR = re.compile(
    r"^\s*Epoch (?P<epoch>\d{1,6})\s+\d{1,3}%\s.*?(?P<n>\d{1,12})/(?P<total>\d{1,12})\s+\["
)
MAX_RECORD_KEYS = 512
"""A record holds a few dozen keys; past this a run-on record is cut, not grown."""


@dataclass(frozen=True)
class Record:
    """One metrics record: its flat keys and their values (None where not a number)."""

    values: dict[str, float | int | None]

    @property
    def is_eval(self) -> bool:
        """A validation record (its keys start `val/`)."""
        return next(iter(self.values), "").startswith("val/")


class RecordJoiner:
    """Joins the wrapped lines of each metrics record; hands back each record once complete."""

    def __init__(self) -> None:
        self._pending: dict[str, float | int | None] | None = None

    def take(self, line: str) -> list[Record]:
        """The records `line` completes: none, the one it ends, or one it cuts short."""
        lead = _LEAD.match(line)
        body = _SOURCE_COLUMN.sub("", lead["body"] if lead else line).strip()
        done = self._flush() if lead else []
        pairs = _pairs(body)
        if pairs is None or (self._pending is None and not _opens_record(pairs)):
            return done
        pending = self._pending if self._pending is not None else {}
        if len(pending) + len(pairs) > MAX_RECORD_KEYS:
            self._pending = None
            return done
        pending.update(pairs)
        self._pending = pending
        if "global_step" in pairs or ("epoch" in pairs and Record(pending).is_eval):
            done += self._flush()
        return done

    def _flush(self) -> list[Record]:
        pending, self._pending = self._pending, None
        return [Record(pending)] if pending else []


def _opens_record(pairs: dict[str, float | int | None]) -> bool:
    return next(iter(pairs)).startswith(("train/", "val/"))


def _pairs(body: str) -> dict[str, float | int | None] | None:
    """`k=v, k=v` as a dict, or None when the text is anything else (a sentence with a `=`)."""
    pieces = [piece.strip() for piece in body.split(",")]
    pieces = [piece for piece in pieces if piece]
    matches = [_PAIR.match(piece) for piece in pieces]
    if not matches or any(match is None for match in matches):
        return None
    return {m["key"]: _value(m["value"]) for m in matches if m is not None}


def _value(text: str) -> float | int | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None
