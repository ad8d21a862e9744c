"""The audit log: every request that changes something, who sent it and how it ended.

`<state>/audit.jsonl`, one JSON line per mutating request, appended and never rewritten.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from agent.protocol import AuditEntry, PipelineApplyParams, from_wire, to_wire, without_secrets
from agent.protocol.config_diff import argv_without_secrets
from agent.state.private_files import open_private

TAIL_BLOCK_BYTES = 64 * 1024
TAIL_MAX_BYTES = 32 * 1024 * 1024
"""audit.read looks no further back than this (10,000 entries fit many times over)."""


MAX_TEXT_CHARS = 128
"""A peer's string (a key, a client name) is kept this far in an entry, with its length after."""
MAX_OUTCOME_CHARS = 1024
MAX_PARAMS_BYTES = 4096
"""A request's params past this many bytes are summarised: a refused request's 7 MB key or
argv must not make each audit line 7 MB (60 of them made audit.jsonl 420 MB)."""


def _bounded(text: str | None, limit: int = MAX_TEXT_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _bounded_params(params: object) -> object:
    if isinstance(params, PipelineApplyParams):  # a config's webhook URL and env hold secrets
        params = PipelineApplyParams(without_secrets(params.pipeline))
    wire = _argvs_without_secrets(to_wire(params))
    size = len(json.dumps(wire, separators=(",", ":")))
    return wire if size <= MAX_PARAMS_BYTES else {"omitted": f"{size:,} bytes of params"}


def _argvs_without_secrets(wire: object) -> object:
    """Every `argv` in a request's params with its secret flags' values hidden.

    An edited launch's `--api-key=…` was kept verbatim in audit.jsonl, where env values and the
    webhook's URL were not.
    """
    if not isinstance(wire, dict):
        return wire
    return {
        key: argv_without_secrets(tuple(map(str, value)))
        if key == "argv" and isinstance(value, list)
        else _argvs_without_secrets(value)
        for key, value in wire.items()
    }


class AuditLog:
    """Appends one line per mutation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listeners: list[Callable[[str, str, object, str | None, str], None]] = []
        """Told of every entry once it is written (the history records deploys and stops)."""

    def record(
        self, client: str, method: str, params: object, key: str | None, outcome: str
    ) -> None:
        """Append one entry; the line is written in one call so entries never interleave."""
        line = json.dumps(
            {
                "ts": time.time(), "client": _bounded(client), "method": _bounded(method),
                "params": _bounded_params(params), "idempotency_key": _bounded(key),
                "outcome": _bounded(outcome, MAX_OUTCOME_CHARS),
            },
            separators=(",", ":"),
        )  # fmt: skip
        data = (line + "\n").encode()
        try:
            fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        try:
            end = os.fstat(fd).st_size
            if os.write(fd, data) < len(data):  # a full disk took part of it: take it back
                os.ftruncate(fd, end)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        finally:
            os.close(fd)
        for listener in self.listeners:
            listener(client, method, params, key, outcome)

    def last(self, limit: int) -> list[AuditEntry]:
        """The newest `limit` entries, oldest first; unreadable lines are skipped.

        Read from the end of the file, a block at a time, never more than TAIL_MAX_BYTES: the
        cost follows what is asked for, not how long the log has grown.
        """
        entries = []
        for line in tail_lines(self.path, limit, TAIL_MAX_BYTES):
            try:
                entries.append(from_wire(AuditEntry, json.loads(line)))
            except (ValueError, RecursionError):
                continue
        return entries


def tail_lines(path: Path, count: int, max_bytes: int) -> list[bytes]:
    """The last `count` complete lines of `path` within its last `max_bytes`, oldest first."""
    if count <= 0:
        return []
    try:
        handle = os.fdopen(open_private(path, os.O_RDONLY), "rb")
    except FileNotFoundError:
        return []
    with handle:
        end = handle.seek(0, os.SEEK_END)
        start, data = end, b""
        while start > max(0, end - max_bytes) and data.count(b"\n") <= count:
            step = min(TAIL_BLOCK_BYTES, start - max(0, end - max_bytes))
            start -= step
            handle.seek(start)
            data = handle.read(step) + data
        whole_first = start == 0 or handle.seek(start - 1) >= 0 and handle.read(1) == b"\n"
    lines = data.split(b"\n")
    complete = lines[:-1] if whole_first else lines[1:-1]  # the first may be cut, the last torn
    return [line for line in complete if line.strip()][-count:]
