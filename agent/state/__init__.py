"""The agent's state directory: where the daemon's socket, identity, logs and registries live.

The directory is private (mode 0700): the unix socket inside it is the agent's only door, and
file permissions are what keep other users of a shared GPU box out of it. So a folder the agent
did not make is taken only if it is already ours alone; its files are opened through
`private_files`, never through a link.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.host.regular_files import open_regular
from agent.state.private_files import planted_entries

MAX_JSON_BYTES = 4 * 1024 * 1024
DEFAULT_STATE_DIR = "~/.eagle-agent"
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
    def audit_log(self) -> Path:
        """One line per request that changed something, and who asked."""
        return self.root / "audit.jsonl"

    @property
    def pipeline_config(self) -> Path:
        """The config the agent runs (the first a console sent, or the last applied), kept."""
        return self.root / "pipeline.json"

    @property
    def kept_scans(self) -> Path:
        """How far each dataset file was read and what it counted, so a restart resumes there."""
        return self.root / "scans"


OWN_FILES = (
    "daemon.json", "daemon.lock", "start.lock", "agent.log", "idempotency.jsonl", "audit.jsonl",
    "pipeline.json", "autopilot.json", "history.sqlite3", "history.sqlite3-wal",
    "history.sqlite3-shm",
)  # fmt: skip
"""The files the agent keeps directly in its state folder (agent-code is a link it makes itself)."""
OWN_FOLDERS = ("jobs", "operations", "scans")
"""Its folders there: a link in their place would have job logs and records written elsewhere."""


def prepare_state_dir(path: str | Path) -> StatePaths:
    """The state directory, made with mode 0700 if missing, or checked to be ours alone.

    A folder the agent did not make is never changed: one that belongs to another user, or
    that others may write to (a shared 1777 folder like /tmp), is refused, and so is one that
    holds a link or odd file where the agent's own files go.
    """
    root = Path(path).expanduser().absolute()
    try:
        made = _make_if_missing(root)
        info = root.stat()
    except OSError as exc:
        raise StateDirError(f"cannot create state directory {root}: {exc.strerror}") from None
    if made:
        root.chmod(0o700)  # ours, just made: private whatever the umask
    else:
        _check_ours_alone(root, info)
    planted = planted_entries(root, OWN_FILES, OWN_FOLDERS)
    if planted:
        raise StateDirError(
            f"state directory {root}: {'; '.join(planted)}. The agent writes nothing through "
            "these: remove them (and find out who put them there), then start it again"
        )
    return StatePaths(root)


def _make_if_missing(root: Path) -> bool:
    """Make `root` (mode 0700) and any missing parents; True when `root` itself was made here."""
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        return False
    return True


def _check_ours_alone(root: Path, info: os.stat_result) -> None:
    choose = (
        "choose a folder of its own for the agent (state_dir in the host's config, "
        f"e.g. {DEFAULT_STATE_DIR}) that it can create"
    )
    if not stat.S_ISDIR(info.st_mode):
        raise StateDirError(f"state directory {root} is not a folder; {choose}")
    if info.st_uid != os.getuid():
        raise StateDirError(
            f"state directory {root} belongs to uid {info.st_uid}, not to us ({os.getuid()}); "
            f"{choose}"
        )
    if info.st_mode & 0o022:
        raise StateDirError(
            f"state directory {root} may be written by others (mode "
            f"{stat.S_IMODE(info.st_mode):04o}): the agent keeps its socket, logs and history "
            f"there and must own it alone; {choose}, or make this one private (chmod 700) "
            "if it is yours alone"
        )


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
