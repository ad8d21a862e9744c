"""A daemon running other agent code is replaced by attach; one of the same code is reused."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

from agent.bundle import running_bundle_sha256
from agent.protocol import PROTOCOL_VERSION, process_info
from agent.state import read_json

REPO = Path(__file__).resolve().parents[2]
HELLO = json.dumps({
    "id": 1, "method": "hello", "params": {"protocol_version": PROTOCOL_VERSION, "client_version": "t"}
}).encode() + b"\n"  # fmt: skip


async def hello_through_attach(bundle_parent: Path, state_dir: Path) -> dict[str, object]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "attach", "--state-dir", str(state_dir),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(bundle_parent)),
        cwd=bundle_parent,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(HELLO), 30)
    result: dict[str, object] = json.loads(out)["result"]
    return result


async def test_attach_replaces_a_daemon_of_other_code(tmp_path: Path, state_dir: Path) -> None:
    old_parent = tmp_path / "old-bundle"
    shutil.copytree(
        REPO / "agent", old_parent / "agent", ignore=shutil.ignore_patterns("__pycache__")
    )
    with (old_parent / "agent" / "bundle.py").open("a") as handle:
        handle.write("\n# an older release\n")

    old = await hello_through_attach(old_parent, state_dir)
    reused = await hello_through_attach(old_parent, state_dir)
    new = await hello_through_attach(REPO, state_dir)

    assert old["bundle_sha256"] != running_bundle_sha256()
    assert reused["pid"] == old["pid"]
    assert new["bundle_sha256"] == running_bundle_sha256()
    assert new["pid"] != old["pid"]
    info = read_json(state_dir / "daemon.json")
    assert info["pid"] == new["pid"]
    assert not is_running(int(str(old["pid"]))), "the old daemon still runs"


def is_running(pid: int) -> bool:
    """True while `pid` exists and has not exited (a zombie awaiting its reaper has exited)."""
    info = process_info(pid)
    return info is not None and info.alive
