"""The state folder is the agent's own: a shared or foreign folder is refused, links are not followed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.journal.audit import AuditLog
from agent.journal.idempotency_store import AnswerStore, answer_of
from agent.state import StateDirError, StatePaths, prepare_state_dir
from agent.state.private_files import UnsafeStateFileError, open_private
from tests.support.simulator_process import agent_env

PLANTED = ("agent.log", "audit.jsonl", "idempotency.jsonl", "daemon.lock")


@pytest.fixture
def started_in(tmp_path: Path) -> Iterator[list[Path]]:
    """Folders an agent may have been started in; any daemon there is stopped after the test."""
    folders: list[Path] = []
    yield folders
    for folder in folders:
        if (folder / "daemon.json").exists():
            stop_daemon(StatePaths(folder))


def agent_start(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", "start", "--state-dir", str(folder)],
        env=agent_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_a_shared_sticky_folder_is_refused_and_left_as_it_was(
    tmp_path: Path, started_in: list[Path]
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    started_in.append(shared)
    done = agent_start(shared)
    assert done.returncode == 1
    assert "may be written by others (mode 1777)" in done.stderr
    assert "choose a folder of its own" in done.stderr
    assert oct(shared.stat().st_mode & 0o7777) == oct(0o1777), "a folder not ours is not changed"
    assert list(shared.iterdir()) == []


def test_a_group_writable_folder_is_refused_and_a_private_enough_one_is_kept_as_it_is(
    tmp_path: Path,
) -> None:
    group = tmp_path / "group"
    group.mkdir(mode=0o775)
    group.chmod(0o775)
    with pytest.raises(StateDirError, match="mode 0775"):
        prepare_state_dir(group)
    readable = tmp_path / "readable"
    readable.mkdir()
    readable.chmod(0o755)
    assert prepare_state_dir(readable).root == readable
    assert oct(readable.stat().st_mode & 0o777) == oct(0o755)
    made = prepare_state_dir(tmp_path / "new" / "state").root
    assert oct(made.stat().st_mode & 0o777) == oct(0o700)


def plant_links(folder: Path, outside: Path) -> dict[Path, bytes]:
    """Links named as the agent's own files, each to a file outside; what those files hold."""
    targets = {}
    for name in PLANTED:
        target = outside / f"{name}.target"
        target.write_bytes(b"not the agent's\n")
        (folder / name).symlink_to(target)
        targets[target] = target.read_bytes()
    return targets


def test_links_planted_in_the_state_folder_stop_the_start_and_nothing_is_written_through(
    tmp_path: Path, started_in: list[Path]
) -> None:
    state, outside = tmp_path / "state", tmp_path / "outside"
    state.mkdir(mode=0o700)
    outside.mkdir()
    targets = plant_links(state, outside)
    started_in.append(state)
    done = agent_start(state)
    assert done.returncode == 1
    assert "agent.log is a symbolic link" in done.stderr
    assert "remove them" in done.stderr
    assert {path: path.read_bytes() for path in targets} == targets


def test_a_link_planted_while_the_agent_runs_is_refused_at_each_write(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    targets = plant_links(tmp_path, outside)
    with pytest.raises(OSError, match="symbolic link"):
        AuditLog(tmp_path / "audit.jsonl").record("me", "jobs.stop", {}, "k", "ok")
    store = AnswerStore(tmp_path / "idempotency.jsonl")
    store.put("key", answer_of("digest", "jobs.launch", {"ok": True}, None))
    store.flush()
    with pytest.raises(UnsafeStateFileError, match="symbolic link"):
        open_private(tmp_path / "agent.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    assert {path: path.read_bytes() for path in targets} == targets


def test_a_hard_link_to_another_file_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.write_bytes(b"someone else's\n")
    os.link(other, tmp_path / "audit.jsonl")
    with pytest.raises(OSError, match="hard link"):
        AuditLog(tmp_path / "audit.jsonl").record("me", "jobs.stop", {}, "k", "ok")
    assert other.read_bytes() == b"someone else's\n"


def test_a_link_in_place_of_the_jobs_folder_is_refused(tmp_path: Path) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere"
    state.mkdir(mode=0o700)
    elsewhere.mkdir()
    (state / "jobs").symlink_to(elsewhere)
    with pytest.raises(StateDirError, match="jobs is a symbolic link"):
        prepare_state_dir(state)
