"""SIGINT stops a runner whose prompts are all waiting to try a hostile server again.

Before: a prompt in its retry backoff slept on (up to 30 s a try) and then asked again during the
drain, so a runner busy with a server that only gives broken answers took the whole drain
timeout (60 s) to stop. Now a stop ends the waits at once; those prompts stay to do, unmarked.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.hostile_answer_server import hostile_answer_server, write_kind_prompts
from tests.support.runner_files import start_runner, status, wait_for_status

STOP_LIMIT_S = 10.0


@pytest.mark.slow
def test_sigint_ends_the_retry_waits_at_once_and_marks_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    write_kind_prompts(folder, ["cut_mid_body", "tokens_negative", "endless_500"], copies=4)
    with hostile_answer_server() as (url, _):
        runner = start_runner(folder, url, "--max-retries", "1000", "--concurrency", "4")
        try:
            wait_for_status(folder, lambda record: record.get("retries", 0) >= 16)
            asked = time.monotonic()
            runner.send_signal(signal.SIGINT)
            runner.wait(STOP_LIMIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {STOP_LIMIT_S:g} s after SIGINT")
        finally:
            runner.kill()
            runner.wait()
    assert time.monotonic() - asked < STOP_LIMIT_S
    final = status(folder)
    assert (final["stop_reason"], final["errors"]) == ("signal", 0)
    assert not (folder / "errors.jsonl").read_text()
