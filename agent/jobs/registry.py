"""Each job's files in `<state>/jobs/<id>/`, the registry a restarted daemon rebuilds from.

`job.json` (what was launched) and `shim.json` are written by the daemon, `child.json` and
`exit.json` by the shim, `stop.json` by whoever stopped it, `restart.json` by the restart
policy once it decided what follows the job's end. Every write is atomic; every read
accepts a missing or half-written file as "not yet".
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.state import read_json, write_json_atomic

JOB_FILE, SHIM_FILE, CHILD_FILE, EXIT_FILE, STOP_FILE, RESTART_FILE = (
    "job.json", "shim.json", "child.json", "exit.json", "stop.json", "restart.json",
)  # fmt: skip
LOG_FILE = "output.log"
MARK_ENV = "EAGLE_AGENT_JOB_MARK"
"""Set by the shim in the job's environment to the random `mark` of its job.json: every process
the job starts inherits it, so a stop finds the ones that left both the group and the shim."""


@dataclass(frozen=True, slots=True)
class JobFiles:
    """The folder of one job."""

    folder: Path

    @property
    def id(self) -> str:
        """The job id is its folder name."""
        return self.folder.name

    @property
    def log(self) -> Path:
        """The job's stdout and stderr."""
        return self.folder / LOG_FILE

    def read(self, name: str) -> dict[str, Any] | None:
        """One of the job's JSON files, or None while it does not exist."""
        value = read_json(self.folder / name)
        return value if isinstance(value, dict) else None

    def write(self, name: str, value: dict[str, Any]) -> None:
        """Replace one of the job's JSON files atomically."""
        write_json_atomic(self.folder / name, value)


class Registry:
    """All job folders under one state directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(mode=0o700, exist_ok=True)
        self._by_key: dict[str, Path] | None = None
        """Each launch's idempotency key and its folder: read once, then kept as jobs are made
        (a launch looked through every job.json, on the event loop, and restarts add many)."""

    def create(self, name: str, record: dict[str, Any]) -> JobFiles:
        """A new job folder holding `job.json`."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = f"{_slug(name)}-{stamp}"
        for suffix in range(1000):
            folder = self.root / (base if suffix == 0 else f"{base}-{suffix}")
            try:
                folder.mkdir(mode=0o700)
            except FileExistsError:
                continue
            files = JobFiles(folder)
            try:
                files.write(JOB_FILE, {"id": files.id, **record})
            except OSError:
                shutil.rmtree(folder, ignore_errors=True)  # no half-made job left behind
                raise
            key = record.get("idempotency_key")
            if isinstance(key, str) and key and self._by_key is not None:
                self._by_key[key] = folder
            return files
        raise RuntimeError(f"cannot create a job folder for {name} under {self.root}")

    def all(self) -> list[JobFiles]:
        """Every job folder that has its job.json, oldest first."""
        folders = sorted(p for p in self.root.iterdir() if (p / JOB_FILE).exists())
        return [JobFiles(p) for p in folders]

    def get(self, job_id: str) -> JobFiles | None:
        """The job called `job_id`, if it exists (ids are folder names, never paths)."""
        if "/" in job_id or job_id.startswith("."):
            return None
        files = JobFiles(self.root / job_id)
        return files if (files.folder / JOB_FILE).exists() else None

    def by_idempotency_key(self, key: str) -> JobFiles | None:
        """The job a launch with this key already started."""
        if self._by_key is None:
            self._by_key = {}
            for files in self.all():
                found = (files.read(JOB_FILE) or {}).get("idempotency_key")
                if isinstance(found, str) and found:
                    self._by_key[found] = files.folder
        folder = self._by_key.get(key)
        return JobFiles(folder) if folder is not None and (folder / JOB_FILE).exists() else None


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:60] or "job"
