"""The box of the redeploy_cuts scenario, and the watch on the agent's operation records.

A job that ignores its stop signal, two versions of its code, the host's config as a file.
The job is a per-dataset "runner" (kind inference, so the one-writer rule applies) whose script
ignores SIGINT: a stop waits out its grace, then SIGTERM ends it. Each version changes the
script and a large companion file, so a deploy swaps two files and takes long enough to be hit.
The operation records (`<state>/operations/<id>.json`, written before each phase runs) are
polled every few milliseconds, so a fault can be aimed at a phase of the agent's own redeploy.
Nothing here injects a fault.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.state import read_json
from console.config import HostConfig, load_config
from tests.support.runner_files import write_id_prompts

JOB, DATASET = "worker", "D1"
GRACE_S, TERM_GRACE_S = 0.6, 3.0
RESTART_DELAY_S = 0.2
PHASES = ("begin", "stop", "install", "start", "watch", "rollback", "restore", "end")
"""The phases of a redeploy record, in the order they run ("begin" runs the stop)."""
POLL_S = 0.002
WORKER = """# {version}
import signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("running {version} on", sys.argv[1], flush=True)
while True:
    time.sleep(1)
"""


@dataclass(frozen=True, slots=True)
class Version:
    """One version of the job's code: the script and the large file, by sha256."""

    number: int
    script_sha256: str
    blob_sha256: str

    @property
    def said(self) -> str:
        """What a job running this version prints."""
        return f"running v{self.number} on"


@dataclass(frozen=True, slots=True)
class Box:
    """The folders of the loopback box and the console's side of it."""

    local: Path
    """The console's copy of the code (the deploy mapping's local folder)."""
    remote: Path
    """Where the code lives on the box (under the deploy root)."""
    state: Path
    datasets: Path

    @classmethod
    def at(cls, workdir: Path) -> Box:
        """The folders under `workdir`, with the dataset's prompts written."""
        box = cls(workdir / "local", workdir / "root" / "app", workdir / "state",
                  workdir / "datasets")  # fmt: skip
        for folder in (box.local, box.remote):
            folder.mkdir(parents=True, exist_ok=True)
        write_id_prompts(box.datasets / DATASET, 2)
        return box

    @property
    def operations(self) -> Path:
        """The agent's operation records."""
        return self.state / "operations"


def write_version(folder: Path, number: int, blob_bytes: int, rng: random.Random) -> Version:
    """Write version `number` of the script and the large file into `folder`."""
    script = WORKER.format(version=f"v{number}").encode()
    blob = rng.randbytes(blob_bytes)
    (folder / "worker.py").write_bytes(script)
    (folder / "blob.bin").write_bytes(blob)
    return Version(number, _sha(script), _sha(blob))


def on_disk(folder: Path) -> tuple[str, str]:
    """(script sha256, large file sha256) of what `folder` holds now."""
    return _sha((folder / "worker.py").read_bytes()), _sha((folder / "blob.bin").read_bytes())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_config(box: Box, port: int, identity: Path, known_hosts: Path, path: Path) -> HostConfig:
    """The host's eagle-console.toml (what the CLI console reads), loaded back as a HostConfig."""
    empty = path.with_name("ssh_config")
    empty.touch()
    q = json.dumps
    argv = ["{python}", str(box.remote / "worker.py"), "{dataset}"]
    path.write_text(
        "\n".join([
            "[hosts.faults]",
            f"ssh = {q(f'{getpass.getuser()}@127.0.0.1:{port}')}",
            f"known_hosts = {q(str(known_hosts))}", f"identity = {q(str(identity))}",
            f"ssh_config = {q(str(empty))}", f"python = {q(sys.executable)}",
            f"state_dir = {q(str(box.state))}", f"deploy_roots = [{q(str(box.remote.parent))}]",
            "[hosts.faults.datasets]", f"root = {q(str(box.datasets))}",
            "[[hosts.faults.deploy]]", f"local = {q(str(box.local))}",
            f"remote = {q(str(box.remote))}",
            f"[hosts.faults.jobs.{JOB}]", f"argv = {q(argv)}", 'kind = "inference"',
            "per_dataset = true", 'stop_signal = "SIGINT"', f"grace_s = {GRACE_S}",
            f"term_grace_s = {TERM_GRACE_S}", 'restart = "on-failure"',
            f"restart_delay_s = {RESTART_DELAY_S}", "max_restarts = 100",
            "restart_window_s = 3600", "",
        ])
    )  # fmt: skip
    return load_config(path).host("faults")


# ---------------------------------------------------------------- the agent's records, watched


@dataclass(frozen=True, slots=True)
class Caught:
    """A redeploy record caught at a phase: its id, and the phase it was in when hit."""

    operation_id: str
    phase: str


def catch_phase(
    folder: Path, known: set[str], phase: str, timeout_s: float, act: Callable[[], None]
) -> Caught | None:
    """Poll the records every POLL_S; once a new one reached `phase`, `act` at once.

    Blocking (run it in a thread). Returns the record and the phase read just after `act`
    (the one hit, if `act` froze the agent or nothing moved on meanwhile); None on timeout.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in folder.glob("*.json"):
            if path.stem in known:
                continue
            if _reached(read_json(path), phase):
                act()
                record = read_json(path)
                return Caught(path.stem, _phase(record) or "?")
        time.sleep(POLL_S)
    return None


def _reached(record: object, aim: str) -> bool:
    """The record is at `aim` or past it; a stop counts once its signal was sent."""
    found = _phase(record)
    if found is None or PHASES.index(found) < PHASES.index(aim):
        return False
    if found != "stop" or not isinstance(record, dict):
        return True
    steps = record.get("steps")
    return isinstance(steps, list) and any(
        isinstance(step, list) and step[:2] == ["stop", "running"] for step in steps
    )


def _phase(record: object) -> str | None:
    if not isinstance(record, dict) or record.get("kind") != "redeploy":
        return None
    phase = record.get("phase")
    return phase if phase in PHASES else None


def caught_now(folder: Path, known: set[str]) -> Caught | None:
    """The one record made since `known` was taken, at the phase it holds now."""
    new = sorted(known_operations(folder) - known)
    if len(new) != 1:
        return None
    return Caught(new[0], _phase(read_json(folder / f"{new[0]}.json")) or "?")


def known_operations(folder: Path) -> set[str]:
    """The ids of the records there now."""
    return {path.stem for path in folder.glob("*.json")} if folder.is_dir() else set()
