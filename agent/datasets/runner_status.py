"""What the run writing a dataset says about itself: `runner.json`, or else the job's argv.

Any script may write a dataset, so everything here is optional: a runner.json that is missing,
stale or from a dead process simply means "no run is writing this dataset now".
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.state import read_json

FRESH_S = 15.0
"""A runner.json older than this, or from a dead pid, describes a run that is over."""
ACTIVE_STATES = ("starting", "waiting_for_server", "running", "draining", "cancelling")


@dataclass(frozen=True, slots=True)
class RunView:
    """The stop condition and liveness of the run writing a dataset."""

    active: bool
    state: str | None = None
    budget: int | None = None
    max_samples: int | None = None
    in_flight: int = 0
    runner_sha256: str | None = None
    pid: int | None = None
    write_error: str | None = None
    """Why the run stopped when a file could not be written (runner.json's write_error)."""
    write_disk_full: bool = False


def read_runner_status(dataset_dir: Path, now: float | None = None) -> RunView | None:
    """The runner.json of a dataset folder, or None if there is none."""
    record = read_json(dataset_dir / "runner.json")
    if not isinstance(record, dict):
        return None
    now = time.time() if now is None else now
    fresh = now - float(record.get("updated_at") or 0) <= FRESH_S
    active = record.get("state") in ACTIVE_STATES and fresh and _alive(record.get("pid"))
    return RunView(
        active=active,
        state=record.get("state"),
        budget=_int(record.get("budget")),
        max_samples=_int(record.get("max_samples")),
        in_flight=_int(record.get("in_flight")) or 0 if active else 0,
        runner_sha256=record.get("runner_sha256"),
        pid=_int(record.get("pid")),
        **_write_error(record.get("write_error")),
    )


def _write_error(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    path, errno_name = value.get("path"), value.get("errno")
    text = f"cannot write {path}: {value.get('message')} ({errno_name})"
    return {"write_error": text, "write_disk_full": value.get("disk_full") is True}


def view_from_argv(argv: tuple[str, ...]) -> RunView:
    """The stop condition a runner-like command line asks for (`--token-budget`, `--max-samples`)."""
    return RunView(
        active=True,
        budget=_flag(argv, "--token-budget"),
        max_samples=_flag(argv, "--max-samples"),
    )


def _flag(argv: tuple[str, ...], name: str) -> int | None:
    for index, part in enumerate(argv):
        if part == name and index + 1 < len(argv):
            return _int(argv[index + 1].replace("_", ""))
        if part.startswith(name + "="):
            return _int(part.split("=", 1)[1].replace("_", ""))
    return None


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _alive(pid: object) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
