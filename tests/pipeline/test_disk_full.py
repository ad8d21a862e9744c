"""A write that fails (full disk, quota, I/O error, size limit) stops the run and loses nothing.

The unit tests make a real file's write fail halfway through a record, deterministically; the
process tests make the kernel refuse it: RLIMIT_FSIZE (EFBIG, any user) and a full tmpfs (ENOSPC,
root only: they say why they skip elsewhere). After each, a rerun must finish the dataset with
every prompt exactly once.
"""

from __future__ import annotations

import errno
import json
import resource
import subprocess
from pathlib import Path

import pytest

from agent.datasets.tracker import DatasetTracker
from agent.pipeline.inference.records import AppendLog
from agent.pipeline.inference.storage import StorageError
from agent.protocol import DatasetsConfig
from tests.support.runner_files import (
    RUN_TIMEOUT_S,
    dataset_alerts,
    response_ids,
    run_runner,
    runner_command,
    status,
    write_id_prompts,
    write_stop_problems,
)
from tests.support.simulator_process import SimulatorProcess, agent_env
from tests.support.small_fs import small_tmpfs


class HalfThenFail:
    """os.write that writes half of the n-th call's bytes, then fails with `code`."""

    def __init__(self, fail_on_call: int, code: int) -> None:
        self.calls, self.fail_on_call, self.code = 0, fail_on_call, code

    def __call__(self, fd: int, data: bytes) -> int:
        import os

        self.calls += 1
        if self.calls < self.fail_on_call:
            return os.write(fd, data)
        if self.calls == self.fail_on_call:
            return os.write(fd, data[: len(data) // 2])
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG])
def test_a_failed_append_cuts_its_partial_line_and_keeps_every_record(
    tmp_path: Path, code: int
) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_bytes(b'{"id":"old","output_ids":[1]}\n')
    log = AppendLog(path, write=HalfThenFail(fail_on_call=3, code=code))
    log.append({"id": "a", "output_ids": [1, 2, 3]})
    log.append({"id": "b", "output_ids": [4, 5, 6]})

    with pytest.raises(StorageError) as caught:
        log.append({"id": "c", "output_ids": list(range(100))})
    log.close()

    assert caught.value.errno_name == errno.errorcode[code]
    assert str(path) in str(caught.value)
    assert "cut a partial line of" in str(caught.value)
    lines = path.read_bytes().splitlines(keepends=True)
    assert [json.loads(line)["id"] for line in lines] == ["old", "a", "b"]
    assert all(line.endswith(b"\n") for line in lines)


@pytest.mark.slow
def test_a_run_that_hits_a_file_size_limit_stops_with_its_code_then_resumes_exactly(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B1"
    ids = write_id_prompts(folder, 300)
    limit = 64 * 1024

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    stopped = subprocess.run(
        runner_command(folder, simulator.url, "--concurrency", "8"), env=agent_env(),
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, preexec_fn=limit_file_size,
    )  # fmt: skip

    assert_stopped_cleanly(folder, stopped, "EFBIG")
    assert (folder / "raw_responses.jsonl").stat().st_size <= limit
    resume_exactly(folder, simulator, ids)


@pytest.mark.slow
def test_a_full_filesystem_stops_the_run_and_a_rerun_after_space_returns_is_exact(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    with small_tmpfs(tmp_path / "mnt", size_kib=256) as mount:
        folder = mount.path / "B1"
        ids = write_id_prompts(folder, 300)

        stopped = run_runner(folder, simulator.url, "--concurrency", "8")

        assert_stopped_cleanly(folder, stopped, "ENOSPC")
        mount.resize(size_kib=4096)
        resume_exactly(folder, simulator, ids)


def assert_stopped_cleanly(
    folder: Path, stopped: subprocess.CompletedProcess[str], errno_name: str
) -> None:
    """One clear line, no traceback, the reason in runner.json, whole lines only."""
    assert write_stop_problems(folder, stopped.returncode, errno_name) == [], stopped.stderr
    assert "Traceback" not in stopped.stderr
    [said] = [line for line in stopped.stderr.splitlines() if line.startswith("runner: stopped:")]
    assert f"({errno_name})" in said
    assert "rerun" in said
    record = status(folder)
    assert record["state"] == "failed"
    assert record["write_error"]["disk_full"] is True
    assert record["in_flight"] == 0
    kept = response_ids(folder)  # asserts every line is whole and valid
    assert kept, "nothing was written before the disk filled"
    assert set(kept.values()) == {1}
    assert record["responses"] == len(kept)
    tracker = DatasetTracker(DatasetsConfig(str(folder.parent)))
    [alert] = dataset_alerts(tracker, "disk_full", folder.name)
    assert f"({errno_name})" in alert.message
    assert alert.severity == "error"


def resume_exactly(folder: Path, simulator: SimulatorProcess, ids: list[str]) -> None:
    before = response_ids(folder)
    again = run_runner(folder, simulator.url, "--concurrency", "8")
    assert again.returncode == 0, again.stderr
    after = response_ids(folder)
    assert after == dict.fromkeys(ids, 1)
    assert status(folder)["resumed_responses"] == len(before)
    assert status(folder)["torn_bytes_moved"] == 0, "the stopped run left a partial line"
