"""When this console last saw each host, kept in its state folder across runs.

The "while you were away" summary needs the moment the console last saw a host; that moment is
the agent's own clock (a snapshot's `taken_at`), so a workstation clock that is off does not
shift what counts as new. The file is small JSON, replaced atomically; a missing or damaged
file means "never seen", which shows nothing rather than everything.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "last_seen.json"


class LastSeen:
    """Each host's last-seen time (agent clock, seconds since the epoch), read and written."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE_NAME

    def get(self, host: str) -> float | None:
        """When `host` was last seen, or None if this console never saw it."""
        found = self._read().get(host)
        return float(found) if isinstance(found, (int, float)) else None

    def mark(self, host: str, ts: float) -> None:
        """Remember that `host` was seen at `ts`; a failure to write is logged, never raised."""
        seen = self._read()
        seen[host] = ts
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", dir=self.path.parent, prefix=".last_seen.", delete=False
            ) as handle:
                json.dump(seen, handle)
            os.replace(handle.name, self.path)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)

    def _read(self) -> dict[str, object]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}
