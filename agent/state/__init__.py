"""The agent's state directory: where the daemon's socket, identity, logs and registries live.

The directory is private (mode 0700): the unix socket inside it is the agent's only door, and
file permissions are what keep other users of a shared GPU box out of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.host.regular_files import open_regular

MAX_JSON_BYTES = 4 * 1024 * 1024
SOCKET_NAME = "agent.sock"
"""Relative on purpose: the daemon and attach chdir into the state directory, so a long state
path never hits the ~107-byte limit of unix socket addresses."""


class StateDirError(Exception):
    """The state directory cannot be used safely."""


@dataclass(frozen=True, slots=True)
class StatePaths:
    """Every file the agent keeps in its state directory."""

    root: Path

    @property
    def daemon_info(self) -> Path:
        """Identity of the running daemon: pid, versions, bundle hash."""
        return self.root / "daemon.json"

    @property
    def daemon_lock(self) -> Path:
        """Held by the running daemon for its whole life, so only one runs."""
        return self.root / "daemon.lock"

    @property
    def start_lock(self) -> Path:
        """Held while an attach checks for and starts the daemon."""
        return self.root / "start.lock"

    @property
    def daemon_log(self) -> Path:
        """The daemon's own stdout and stderr."""
        return self.root / "agent.log"

    @property
    def idempotency(self) -> Path:
        """The answers to mutating requests by idempotency key, kept across restarts."""
        return self.root / "idempotency.jsonl"

    @property
    def pipeline_config(self) -> Path:
        """The last pipeline config a console sent, so a restarted daemon still knows it."""
        return self.root / "pipeline.json"


def prepare_state_dir(path: str | Path) -> StatePaths:
    """Create the state directory with mode 0700, or check that an existing one is private."""
    root = Path(path).expanduser().absolute()
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = root.stat()
    except OSError as exc:
        raise StateDirError(f"cannot create state directory {root}: {exc.strerror}") from None
    if info.st_uid != os.getuid():
        raise StateDirError(f"state directory {root} belongs to uid {info.st_uid}, not to us")
    if info.st_mode & 0o077:
        root.chmod(0o700)
    return StatePaths(root)


def write_json_atomic(path: Path, value: Any) -> None:
    """Replace `path` with `value` as JSON so a reader sees the old file or the new, never half.

    A failed write (a full disk) raises OSError naming `path`, and leaves the old file as it was.
    """
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(value, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None if it is missing, unreadable, not a regular file or too big.

    Other processes write some of these files (runner.json): a FIFO in their place must not
    block the agent, nor a huge or deeply nested file cost it its memory or stack.
    """
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
        return json.loads(data) if len(data) <= MAX_JSON_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
