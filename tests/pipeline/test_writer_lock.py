"""Exactly one runner writes a dataset: a second one exits at once, naming the first, writing nothing."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from agent.datasets.writer_lock import LOCK_NAME, lock_holder
from agent.host.signals import kill_group
from agent.pipeline.inference.options import EXIT_LOCKED
from tests.support.runner_files import (
    response_ids,
    run_runner,
    start_runner,
    status,
    wait_for_status,
    write_id_prompts,
)
from tests.support.simulator_process import running_simulator
from tests.support.waits import wait_until_blocking


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime in ns) of every file a runner writes, the lock file aside."""
    return {
        p.name: (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.iterdir()
        if p.name not in (LOCK_NAME, "runner.log")
    }


@pytest.mark.slow
def test_a_second_runner_on_a_dataset_exits_at_once_naming_the_first(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    ids = write_id_prompts(folder, 120)
    with running_simulator(tmp_path / "sim", "--speed", "2", "--mean-tokens", "200") as sim:
        first = start_runner(folder, sim.url, "--concurrency", "4")
        try:
            wait_for_status(folder, lambda s: s["pid"] == first.pid and s["completed"] > 0)
            first.send_signal(signal.SIGSTOP)  # nothing the first one does may hide the second's
            before = folder_state(folder)

            second = run_runner(folder, sim.url, "--concurrency", "4")

            assert second.returncode == EXIT_LOCKED, second.stderr
            assert f"pid {first.pid} (" in second.stderr
            assert "-m agent.pipeline.inference" in second.stderr
            assert "Traceback" not in second.stderr
            assert folder_state(folder) == before, "the second runner wrote something"
            holder = lock_holder(folder / LOCK_NAME)
            assert holder is not None
            assert holder.pid == first.pid
        finally:
            first.send_signal(signal.SIGCONT)
            first.kill()
            first.wait()
        assert lock_holder(folder / LOCK_NAME) is None, "the kernel lets go of a dead holder's lock"

        after_kill = run_runner(folder, sim.url, "--concurrency", "120")

    assert after_kill.returncode == 0, after_kill.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert status(folder)["stop_reason"] == "exhausted"


def test_the_lock_is_taken_before_resume_touches_a_torn_tail(tmp_path: Path) -> None:
    folder = tmp_path / "B2"
    write_id_prompts(folder, 3)
    (folder / "raw_responses.jsonl").write_bytes(b'{"id":"p0","output_ids":[1,2')
    holder = subprocess.Popen(
        ["flock", "--exclusive", str(folder / LOCK_NAME), "sleep", "60"],
        start_new_session=True,
    )
    try:
        wait_until_locked(folder)
        result = run_runner(folder, "http://127.0.0.1:1")
    finally:
        kill_group(holder.pid, signal.SIGKILL)
        holder.wait()

    assert result.returncode == EXIT_LOCKED, result.stderr
    assert (folder / "raw_responses.jsonl").read_bytes() == b'{"id":"p0","output_ids":[1,2'
    assert not (folder / "raw_responses.torn").exists()
    assert not (folder / "runner.json").exists()


def wait_until_locked(folder: Path) -> None:
    locked = wait_until_blocking(lambda: lock_holder(folder / LOCK_NAME) is not None, 10, 0.01)
    assert locked, "flock never took the lock"


def test_a_lock_on_another_filesystem_with_the_same_inode_is_not_this_datasets(
    tmp_path: Path,
) -> None:
    path = tmp_path / LOCK_NAME
    path.touch()
    info = path.stat()
    here = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    elsewhere = (here[0] + 1, here[1], here[2])

    assert lock_holder(path, {elsewhere: [os.getpid()]}) is None, (
        "this process has no such file open"
    )
    with path.open("rb"):
        holder = lock_holder(path, {elsewhere: [os.getpid()]})
    assert holder is not None, "a process that has this very file open holds it (btrfs devices)"
    assert holder.pid == os.getpid()
    found = lock_holder(path, {here: [os.getpid()]})
    assert found is not None
    assert found.pid == os.getpid()
