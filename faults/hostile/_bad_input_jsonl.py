"""Part (b) of bad_input: a responses file cut at every byte, and corrupt lines in the middle.

Each cut goes to the agent's dataset reader (`ResponseCounter`, what the tracker follows a
dataset with, and the tracker itself) and to the runner's resume repair (`recover`): neither may
raise, the counts must be exactly the complete-line prefix, and the torn tail must be reported
(and, by resume, moved to `.torn`). A corrupt line in the middle must be counted as corrupt with
its byte offset, stop a resume with a clear error, and be moved aside by `--repair`.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.datasets.tracker import DatasetTracker, ResponseCounter
from agent.pipeline.inference.records import CorruptRecordError, recover
from agent.protocol import DatasetsConfig

NO_OTHER_WRITER = 0.0
"""This process alone writes the sweep's files: a repair has no writer to wait out."""


def sample_records(output_tokens: int, rng: random.Random) -> bytes:
    """Five responses as a runner and as other scripts write them, one with multibyte UTF-8."""
    ids = [rng.randrange(32000) for _ in range(output_tokens)]
    compact: dict[str, Any] = {"separators": (",", ":")}
    lines = [
        json.dumps({"id": "p0", "output_ids": [5, 6, 7], "completion_tokens": 3,
                    "finish_reason": "stop"}, **compact),
        json.dumps({"id": "問題-1 ✓", "output_ids": [1, 2], "text": "naïve — 日本語 🙂"},
                   ensure_ascii=False),
        json.dumps({"id": "p2", "output_ids": ids, "completion_tokens": len(ids),
                    "meta_info": {"id": "rid-2", "completion_tokens": len(ids)}}, **compact),
        json.dumps({"id": 3, "output_ids": [9] * 4}),
        json.dumps({"id": "p4", "output_ids": [], "completion_tokens": 0}, **compact),
    ]  # fmt: skip
    return "".join(line + "\n" for line in lines).encode()


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the complete lines before a cut hold, by plain json.loads."""

    kept: bytes
    ids: frozenset[str]
    tokens: int


def prefix_of(data: bytes) -> Prefix:
    """The complete-line prefix of `data` and its ids and tokens."""
    kept = data[: data.rfind(b"\n") + 1]
    ids, tokens = set(), 0
    for line in kept.splitlines():
        record = json.loads(line)
        ids.add(str(record["id"]))
        tokens += record.get("completion_tokens", len(record["output_ids"]))
    return Prefix(kept, frozenset(ids), tokens)


class TruncationSweep:
    """Cuts of one sample file, each fed to the reader, the tracker and resume."""

    def __init__(self, folder: Path, whole: bytes, report: Callable[[str], None]) -> None:
        self.whole, self.report = whole, report
        self.reader_path = folder / "reader" / "raw_responses.jsonl"
        self.tracker = DatasetTracker(DatasetsConfig(str(folder / "root")))
        self.tracked_path = folder / "root" / "B1" / "raw_responses.jsonl"
        self.resume_path = folder / "resume" / "raw_responses.jsonl"
        for path in (self.reader_path, self.tracked_path, self.resume_path):
            path.parent.mkdir(parents=True, exist_ok=True)

    def cut(self, offset: int) -> bool:
        """One cut through all three readers; True when every check held."""
        return self.check(self.whole[:offset], f"jsonl cut at byte {offset}")

    def check(self, data: bytes, where: str) -> bool:
        """`data` (the sample's start, maybe with a junk tail) through all three readers."""
        expected = prefix_of(data)
        checks = (self._reader, self._tracker, self._resume)
        return all([_guarded(check, data, expected, where, self.report) for check in checks])

    def _reader(self, data: bytes, expected: Prefix) -> list[str]:
        self.reader_path.write_bytes(data)
        counter = ResponseCounter(self.reader_path)
        counter.update()
        torn = len(data) - len(expected.kept)
        problems = _compare(
            "reader", (counter.responses, counter.tokens, counter.torn_tail_bytes,
                       len(counter.corrupt_offsets)),
            (len(expected.ids), expected.tokens, torn, 0),
        )  # fmt: skip
        if not self.whole.startswith(data):
            return problems
        with self.reader_path.open("ab") as handle:
            handle.write(self.whole[len(data) :])  # the writer finishes its line
        counter.update()
        whole = prefix_of(self.whole)
        return problems + _compare(
            "reader after the rest was appended",
            (counter.responses, counter.torn_tail_bytes), (len(whole.ids), 0),
        )  # fmt: skip

    def _tracker(self, data: bytes, expected: Prefix) -> list[str]:
        self.tracked_path.write_bytes(data)
        [progress] = self.tracker.progress(1e9)
        torn = len(data) - len(expected.kept)
        return _compare(
            "tracker", (progress.responses, progress.tokens, progress.torn_tail_bytes,
                        progress.corrupt_lines),
            (len(expected.ids), expected.tokens, torn, 0),
        )  # fmt: skip

    def _resume(self, data: bytes, expected: Prefix) -> list[str]:
        self.resume_path.write_bytes(data)
        torn_path = self.resume_path.with_suffix(".torn")
        torn_path.unlink(missing_ok=True)
        state = recover(self.resume_path, repair=False, settle_s=NO_OTHER_WRITER)
        tail = data[len(expected.kept) :]
        moved = torn_path.read_bytes() if torn_path.exists() else b""
        return _compare(
            "resume", (state.done_ids, state.tokens, state.torn_bytes_moved,
                       self.resume_path.read_bytes(), moved),
            (set(expected.ids), expected.tokens, len(tail), expected.kept,
             tail + b"\n" if tail else b""),
        )  # fmt: skip


def _compare(what: str, got: tuple[Any, ...], want: tuple[Any, ...]) -> list[str]:
    return [] if got == want else [f"{what} read {_short(got)}, want {_short(want)}"]


def _short(values: tuple[Any, ...]) -> str:
    return repr(tuple(v if not isinstance(v, bytes) else f"<{len(v)} bytes>" for v in values))


def _guarded(
    check: Callable[[bytes, Prefix], list[str]], data: bytes, expected: Prefix, where: str,
    report: Callable[[str], None],
) -> bool:  # fmt: skip
    try:
        problems = check(data, expected)
    except Exception as exc:  # an exception is the finding
        problems = [f"{check.__name__.strip('_')} raised {type(exc).__name__}: {exc}"]
    for problem in problems:
        report(f"{where}: {problem}")
    return not problems


CORRUPT_LINES = (
    ("garbage", b"this is not a record"),
    ("NUL bytes", b"\x00" * 64),
    ("invalid UTF-8", b'{"id":"p9","output_ids":[1,2],"note":"\xff\xfe"}'),
    ("binary junk", bytes(range(128, 256))),
    ("a torn line glued on", b'{"id":"p9","output_ids":[1,2,3'),
    ("JSON but no record", b'{"id":"p9"}'),
    ("a JSON list", b"[1, 2, 3]"),
)
GOOD_BEFORE = b'{"id":"a","output_ids":[1,2],"completion_tokens":2}\n'
GOOD_AFTER = b'{"id":"b","output_ids":[3],"completion_tokens":1}\n'


def check_corrupt_line(folder: Path, label: str, bad: bytes, report: Callable[[str], None]) -> bool:
    """A bad line between two good ones: counted corrupt with its offset, refused, repaired."""
    where = f"jsonl corrupt line ({label})"
    data = GOOD_BEFORE + bad + b"\n" + GOOD_AFTER
    path = folder / label.replace(" ", "-") / "raw_responses.jsonl"
    shutil.rmtree(path.parent, ignore_errors=True)
    path.parent.mkdir(parents=True)
    try:
        problems = _corrupt_checks(path, data, bad)
    except Exception as exc:  # an exception is the finding
        problems = [f"raised {type(exc).__name__}: {exc}"]
    for problem in problems:
        report(f"{where}: {problem}")
    return not problems


def _corrupt_checks(path: Path, data: bytes, bad: bytes) -> list[str]:
    path.write_bytes(data)
    counter = ResponseCounter(path)
    counter.update()
    problems = _compare(
        "reader", (counter.responses, counter.corrupt_offsets), (2, [len(GOOD_BEFORE)])
    )
    try:
        recover(path, repair=False, settle_s=NO_OTHER_WRITER)
        problems.append("resume went on past the corrupt line")
    except CorruptRecordError as exc:
        if f"byte {len(GOOD_BEFORE)}" not in str(exc) or "--repair" not in str(exc):
            problems.append(f"resume refused it unclearly: {exc}")
    state = recover(path, repair=True, settle_s=NO_OTHER_WRITER)
    aside = path.with_suffix(".corrupt").read_bytes()
    return problems + _compare(
        "resume --repair", (state.done_ids, state.corrupt_lines_moved, path.read_bytes(), aside),
        ({"a", "b"}, 1, GOOD_BEFORE + GOOD_AFTER, bad + b"\n"),
    )  # fmt: skip
