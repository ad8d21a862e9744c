"""The audit log: every request that changes something, who sent it and how it ended.

`<state>/audit.jsonl`, one JSON line per mutating request, appended and never rewritten.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agent.protocol import to_wire


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
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
