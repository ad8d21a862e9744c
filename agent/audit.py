"""The audit log: every request that changes something, who sent it and how it ended.

`<state>/audit.jsonl`, one JSON line per mutating request, appended and never rewritten.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from agent.protocol import AuditEntry, from_wire, to_wire


class AuditLog:
    """Appends one line per mutation."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def record(self, client: str, method: str, params: Any, key: str | None, outcome: str) -> None:
        """Append one entry; the line is written in one call so entries never interleave."""
        line = json.dumps(
            {
                "ts": time.time(), "client": client, "method": method,
                "params": to_wire(params), "idempotency_key": key, "outcome": outcome,
            },
            separators=(",", ":"),
        )  # fmt: skip
        data = (line + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
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

    def last(self, limit: int) -> list[AuditEntry]:
        """The newest `limit` entries, oldest first; unreadable lines are skipped."""
        try:
            lines = self.path.read_bytes().splitlines()[-max(limit, 0) :] if limit > 0 else []
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(from_wire(AuditEntry, json.loads(line)))
            except ValueError:
                continue
        return entries
