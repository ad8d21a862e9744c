"""The answers to mutating requests, by idempotency key, kept in the state folder across restarts.

Each finished request leaves one line in `<state>/idempotency.jsonl`: its key, the sha256 of its
method and params, and its answer (result or refusal). After a daemon restart the same key with
the same request gets that answer again; the same key with another request is refused. The file
is rewritten with the newest CAPACITY entries when it holds twice that many, so it stays small.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.protocol import Request, to_wire
from agent.state.private_files import open_private

log = logging.getLogger(__name__)

CAPACITY = 4096
"""Keys kept; the oldest are forgotten first."""
MAX_ANSWER_BYTES = 64 * 1024
"""A longer answer is kept as its digest only: a repeat then runs the request again."""


def request_digest(request: Request[object]) -> str:
    """sha256 of a request's method and params, whatever order its fields came in."""
    canonical = json.dumps(
        {"method": request.method, "params": to_wire(request.params)},
        sort_keys=True, separators=(",", ":"),
    )  # fmt: skip
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """What a finished request answered: `result` (wire form) or an error code and message."""

    digest: str
    method: str
    result: Any = None
    error: tuple[str, str] | None = None
    kept: bool = True
    """False when the answer was too long to keep: only the digest is known."""


class AnswerStore:
    """The answers of past requests by key, loaded from and appended to one JSONL file."""

    def __init__(self, path: Path, capacity: int = CAPACITY) -> None:
        self.path = path
        self.capacity = capacity
        self._answers: OrderedDict[str, StoredAnswer] = OrderedDict()
        self._lines = 0
        self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="idempotency")
        """One writer thread: appends and rewrites happen in the order they were asked for."""
        self._load()

    def get(self, key: str) -> StoredAnswer | None:
        """The stored answer for `key`, if any."""
        return self._answers.get(key)

    def put(self, key: str, answer: StoredAnswer) -> None:
        """Keep an answer: in memory at once, on disk from the writer thread.

        An fsync must not stall the event loop, where a stop's grace is being timed.
        """
        self._answers[key] = answer
        self._answers.move_to_end(key)
        while len(self._answers) > self.capacity:
            self._answers.popitem(last=False)
        self._lines += 1
        rewrite = None
        if self._lines > 2 * self.capacity:
            rewrite = [_line(k, a) for k, a in self._answers.items()]
            self._lines = len(rewrite)
        self._disk.submit(self._write, key, _line(key, answer), rewrite)

    def flush(self) -> None:
        """Wait until everything handed to the writer thread is on disk (tests, shutdown)."""
        self._disk.submit(lambda: None).result()

    def _write(self, key: str, line: str, rewrite: list[str] | None) -> None:
        try:
            if rewrite is not None:
                self._rewrite(rewrite)
            else:
                self._append(line)
        except OSError as exc:
            log.warning("could not keep the answer to key %r in %s: %s", key, self.path, exc)

    def _append(self, line: str) -> None:
        fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def _rewrite(self, lines: list[str]) -> None:
        """Replace the file with `lines` (a temp file, fsync, rename)."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.writelines(line + "\n" for line in lines)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _load(self) -> None:
        try:
            with os.fdopen(open_private(self.path, os.O_RDONLY), "rb") as handle:
                for raw in handle:
                    self._lines += 1
                    self._take(raw)
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("could not read %s: %s; earlier keys are not known", self.path, exc)
        while len(self._answers) > self.capacity:
            self._answers.popitem(last=False)

    def _take(self, raw: bytes) -> None:
        try:
            entry = json.loads(raw)
            error = entry.get("error")
            answer = StoredAnswer(
                str(entry["digest"]), str(entry["method"]), entry.get("result"),
                (str(error[0]), str(error[1])) if error else None, bool(entry.get("kept", True)),
            )  # fmt: skip
        except (ValueError, RecursionError, KeyError, TypeError, IndexError, AttributeError):
            return  # a torn last line after a crash, or junk: skipped
        self._answers[str(entry["key"])] = answer
        self._answers.move_to_end(str(entry["key"]))


def answer_of(digest: str, method: str, result: Any, error: tuple[str, str] | None) -> StoredAnswer:
    """The answer to keep: the result's wire form, or the error; only the digest if too long."""
    answer = StoredAnswer(digest, method, to_wire(result) if error is None else None, error)
    if len(json.dumps(answer.result)) > MAX_ANSWER_BYTES:
        return StoredAnswer(digest, method, kept=False)
    return answer


def _line(key: str, answer: StoredAnswer) -> str:
    entry = {
        "key": key, "digest": answer.digest, "method": answer.method, "at": time.time(),
        "result": answer.result, "error": list(answer.error) if answer.error else None,
        "kept": answer.kept,
    }  # fmt: skip
    return json.dumps(entry, separators=(",", ":"))
