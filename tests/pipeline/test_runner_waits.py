"""A server still warming up is waited for, boundedly, and everyone is told so."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agent.datasets.progress import Counts, Liveness, dataset_progress
from agent.datasets.rates import RateHistory
from agent.datasets.runner_status import read_runner_status
from console.model.formatting import dataset_row
from tests.support.runner_files import (
    RUN_TIMEOUT_S,
    response_ids,
    run_runner,
    start_runner,
    status,
    wait_for_status,
    write_id_prompts,
)
from tests.support.simulator_process import running_simulator


@pytest.mark.slow
def test_a_warming_server_is_waited_for_and_shown_as_waiting(tmp_path: Path) -> None:
    folder = tmp_path / "W1"
    ids = write_id_prompts(folder, 30)
    with running_simulator(
        tmp_path / "sim", "--speed", "1", "--warmup-s", "12", "--mean-tokens", "40",
        "--per-request-rate", "4000",
    ) as sim:  # fmt: skip
        runner = start_runner(folder, sim.url, "--concurrency", "8")
        try:
            first = wait_for_status(folder, lambda s: s["state"] == "waiting_for_server")
            view = read_runner_status(folder)
            again = wait_for_status(folder, lambda s: s["updated_at"] > first["updated_at"])
            code = runner.wait(RUN_TIMEOUT_S)
        finally:  # reaped whatever happened: a runner left unwaited fails a later test
            if runner.poll() is None:
                runner.kill()
            runner.wait()

    assert again["state"] in ("waiting_for_server", "running")  # kept fresh while it waits
    assert view is not None
    assert (view.active, view.state) == (True, "waiting_for_server")
    progress = dataset_progress(
        "W1", Counts(prompts=30, responses=0, tokens=0), None, view, RateHistory(),
        Liveness(active=True, idle_for_s=5.0, stall_after_s=1.0),
    )  # fmt: skip
    assert progress.status == "waiting_for_server"  # not "stalled", though idle past 1 s
    assert dataset_row(progress).status == "waiting for server"
    log = (folder / "runner.log").read_text()
    assert code == 0, log
    assert "waiting for server, up to 1200 s (--wait-for-server)" in log
    assert "/health answered HTTP 503" in log
    assert response_ids(folder) == dict.fromkeys(ids, 1)


@pytest.mark.slow
def test_the_wait_is_bounded(tmp_path: Path) -> None:
    folder = tmp_path / "W2"
    write_id_prompts(folder, 5)
    with running_simulator(tmp_path / "sim", "--speed", "1", "--warmup-s", "600") as sim:
        result = run_runner(folder, sim.url, "--wait-for-server", "2")

    assert result.returncode == 1
    assert "no SGLang server became ready within 2 s (--wait-for-server)" in result.stderr
    assert "/health answered HTTP 503" in result.stderr
    final = status(folder)
    assert (final["state"], final["stop_reason"]) == ("failed", "not_ready")


def test_a_signal_while_waiting_stops_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "W3"
    write_id_prompts(folder, 5)
    with running_simulator(tmp_path / "sim", "--speed", "1", "--warmup-s", "600") as sim:
        runner = start_runner(folder, sim.url)
        wait_for_status(folder, lambda s: s["state"] == "waiting_for_server")
        runner.send_signal(signal.SIGINT)
        code = runner.wait(30)

    assert code == 3
    assert (status(folder)["state"], status(folder)["stop_reason"]) == ("stopped", "signal")
