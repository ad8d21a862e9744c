"""Binaries and files the config names are peers: bounded in time and size, never trusted.

`nvidia_smi` may hang, flood or answer garbage; `api_key_file` may be a FIFO, a device or huge.
Each is a reading with a note (or a refusal that says why), and nothing is left running.
"""

from __future__ import annotations

import asyncio
import gc
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from agent.host import sglang_auth
from agent.host.bounded_process import run_bounded
from agent.host.sglang_auth import ApiKeyError, read_api_key
from agent.host.signals import is_running
from agent.probes import gpus
from agent.probes.gpus import read_gpus
from tests.support.waits import until, wait_until_blocking

GOOD_ROW = "0, GPU-aaaa, NVIDIA H100 80GB HBM3, 97, 70000, 81559, 61, 612.5"


def stand_in(tmp_path: Path, body: str) -> str:
    """An executable `nvidia-smi` running `body` (Python), its pid written beside it."""
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n{body}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def gone(tmp_path: Path) -> bool:
    pid = int((tmp_path / "pid").read_text())
    return wait_until_blocking(lambda: not is_running(pid), 10, 0.02)


async def test_an_nvidia_smi_that_hangs_is_a_note_and_is_not_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpus, "TIMEOUT_S", 0.5)
    reading = await read_gpus(stand_in(tmp_path, "time.sleep(600)"))
    assert (reading.gpus, reading.note) == (
        (),
        "nvidia-smi failed: no answer within 0.5 s (stopped)",
    )
    assert gone(tmp_path), "a hung copy was left behind at every refresh"


async def test_a_hung_nvidia_smi_leaves_no_traceback_in_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read cut at the deadline ended with an exception nobody took: each hang logged
    "_GatheringFuture exception was never retrieved" with a traceback (found by peer_binaries)."""
    monkeypatch.setattr(gpus, "TIMEOUT_S", 0.3)
    said: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: said.append(str(context.get("message"))))
    try:
        for _ in range(3):
            await read_gpus(stand_in(tmp_path, "time.sleep(600)"))
        await asyncio.sleep(0.05)  # the cancelled reads' callbacks run
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert said == []


async def test_an_nvidia_smi_that_floods_is_cut_and_stopped(tmp_path: Path) -> None:
    flood = "chunk = b'x' * 65536\nwhile True: sys.stdout.buffer.write(chunk)"
    reading = await read_gpus(stand_in(tmp_path, flood))
    assert reading.gpus == ()
    assert reading.note == "nvidia-smi failed: it printed more than 1,048,576 bytes (stopped)"
    assert gone(tmp_path)


async def test_garbage_rows_are_left_out_and_said_and_the_good_ones_kept(tmp_path: Path) -> None:
    rows = [
        GOOD_ROW,
        "²\x1b[2J, GPU-bbbb, x, 1, 2, 3, 4, 5",
        "not, a, gpu",
        "1, GPU-cccc, B200, inf, nan, 1, 2, 3",
    ]
    body = f"print({chr(10).join(rows)!r}) if '--query-gpu' in sys.argv[1] else None"
    reading = await read_gpus(stand_in(tmp_path, body))
    assert [(g.index, g.name, g.utilization_pct) for g in reading.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", 97.0),
        (1, "B200", None),  # inf is a float to Python, not a reading
    ]
    assert reading.note == "nvidia-smi: 2 of its 4 GPU rows could not be read"


async def test_twenty_thousand_gpu_rows_are_cut_to_a_box_worth(tmp_path: Path) -> None:
    body = (
        "if '--query-gpu' in sys.argv[1]:\n"
        "    for i in range(20_000): print(f'{i % 64}, GPU-{i}, H100, 1, 2, 3, 4, 5')"
    )
    reading = await read_gpus(stand_in(tmp_path, body))
    assert len(reading.gpus) == gpus.MAX_GPUS
    assert reading.note == "nvidia-smi: it listed 20,000 GPUs, of which the first 64 are shown"


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_an_api_key_file_that_is_no_key_file_is_refused_at_once_and_unread(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "key"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        with path.open("wb") as handle:
            handle.truncate(300 * 2**20)  # 300 MB, sparse
    began = time.monotonic()
    with pytest.raises(ApiKeyError) as refused:
        read_api_key(path)
    assert time.monotonic() - began < 2
    said = str(refused.value)
    assert said.startswith(f"API key file {path}")
    if kind == "huge":
        assert f"holds over {sglang_auth.MAX_KEY_FILE_BYTES:,} bytes" in said
    else:
        assert "not a regular file" in said


def test_a_key_file_of_one_line_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("sk-local\n")
    assert read_api_key(tmp_path / "key") == "sk-local"


async def test_a_child_left_in_the_background_dies_with_the_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    script = f"sleep 600 & echo $! > {pid_file}; echo done"
    answer = await run_bounded(("sh", "-c", script), 5.0, 1024)
    assert (answer.returncode, answer.out) == (0, b"done\n")
    child = int(pid_file.read_text())
    await until(lambda: not is_running(child), "its background child ended", 10)
