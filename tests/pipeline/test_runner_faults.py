"""Signals and server faults: nothing generated is lost, nothing is done twice."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

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

SLOW = ("--speed", "2", "--mean-tokens", "300", "--sd-tokens", "50")


@pytest.mark.slow
def test_sigint_drains_in_flight_requests_and_keeps_them(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    write_id_prompts(folder, 200)
    with running_simulator(tmp_path / "sim", *SLOW) as sim:
        runner = start_runner(folder, sim.url, "--concurrency", "8")
        wait_for_status(folder, lambda s: s["in_flight"] >= 4)
        runner.send_signal(signal.SIGINT)
        wait_for_status(folder, lambda s: s["state"] in ("draining", "stopped"))
        code = runner.wait(RUN_TIMEOUT_S)

    final = status(folder)
    assert code == 3, (folder / "runner.log").read_text()
    assert (final["state"], final["stop_reason"]) == ("stopped", "signal")
    assert final["cancelled_requests"] == 0
    assert final["completed"] == final["dispatched"] >= 4
    assert sum(response_ids(folder).values()) == final["completed"]


@pytest.mark.slow
def test_a_second_sigint_cancels_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "B2"
    write_id_prompts(folder, 200)
    with running_simulator(tmp_path / "sim", "--speed", "0.2", "--mean-tokens", "2000") as sim:
        runner = start_runner(folder, sim.url, "--concurrency", "8", "--drain-timeout", "600")
        wait_for_status(folder, lambda s: s["in_flight"] == 8)
        runner.send_signal(signal.SIGINT)
        wait_for_status(folder, lambda s: s["state"] == "draining")
        runner.send_signal(signal.SIGINT)
        code = runner.wait(30)

    final = status(folder)
    assert code == 3
    assert final["cancelled_requests"] + final["discarded_tokens"] > 0
    assert final["completed"] == sum(response_ids(folder).values())
    assert "second SIGINT" in (folder / "runner.log").read_text()


@pytest.mark.slow
def test_http_500s_are_retried_until_every_prompt_is_done(tmp_path: Path) -> None:
    folder = tmp_path / "B3"
    ids = write_id_prompts(folder, 200)
    with running_simulator(
        tmp_path / "sim", "--speed", "100", "--mean-tokens", "50", "--error-rate", "0.1"
    ) as sim:
        result = run_runner(folder, sim.url, "--concurrency", "16")

    assert result.returncode == 0, result.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert status(folder)["retries"] >= 5
    assert status(folder)["errors"] == 0


@pytest.mark.slow
def test_an_outage_pauses_dispatch_and_the_run_completes(tmp_path: Path) -> None:
    folder = tmp_path / "B4"
    ids = write_id_prompts(folder, 300)
    with running_simulator(tmp_path / "sim", "--speed", "20", "--mean-tokens", "100") as sim:
        runner = start_runner(folder, sim.url, "--concurrency", "16")
        wait_for_status(folder, lambda s: s["responses"] >= 20)
        sim.set_faults(refuse_for_s=30)  # 30 simulated seconds: 1.5 s at speed 20
        code = runner.wait(RUN_TIMEOUT_S)

    log = (folder / "runner.log").read_text()
    assert code == 0, log
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert "unhealthy" in log
    assert "healthy again" in log
    assert status(folder)["retries"] > 0


def test_hanging_requests_time_out_and_are_retried(tmp_path: Path) -> None:
    folder = tmp_path / "B5"
    ids = write_id_prompts(folder, 60)
    with running_simulator(
        tmp_path / "sim", "--speed", "100", "--mean-tokens", "50", "--hang-rate", "0.1"
    ) as sim:
        result = run_runner(folder, sim.url, "--concurrency", "16", "--request-timeout", "1")

    assert result.returncode == 0, result.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert status(folder)["retries"] >= 1


def test_context_too_long_goes_to_errors_and_the_run_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "B6"
    write_id_prompts(folder, 10)
    with (folder / "prompts.jsonl").open("a") as handle:
        handle.write('{"id": "huge", "input_ids": ' + str([1] * 5000) + "}\n")
    with running_simulator(tmp_path / "sim", "--speed", "100", "--context-length", "4096") as sim:
        result = run_runner(folder, sim.url, "--max-new-tokens", "100")

    assert result.returncode == 0, result.stderr
    assert "huge" not in response_ids(folder)
    assert len(response_ids(folder)) == 10
    errors = (folder / "errors.jsonl").read_text()
    assert '"id":"huge"' in errors
    assert "context length" in errors
    assert '"permanent":true' in errors


def test_length_capped_answers_are_counted_and_can_be_dropped(tmp_path: Path) -> None:
    kept, dropped = tmp_path / "kept", tmp_path / "dropped"
    write_id_prompts(kept, 60)
    write_id_prompts(dropped, 60)
    with running_simulator(
        tmp_path / "sim", "--speed", "100", "--mean-tokens", "50", "--runaway-share", "0.3"
    ) as sim:
        assert run_runner(kept, sim.url, "--max-new-tokens", "200").returncode == 0
        assert (
            run_runner(dropped, sim.url, "--max-new-tokens", "200", "--drop-truncated").returncode
            == 0
        )

    truncated = status(kept)["truncated"]
    assert truncated > 5
    assert len(response_ids(kept)) == 60
    assert status(dropped)["truncated"] == truncated, "the same seed caps the same prompts"
    assert len(response_ids(dropped)) == 60 - truncated
    assert (dropped / "errors.jsonl").read_text().count("max_new_tokens") == truncated


@pytest.mark.slow
def test_the_server_dying_for_good_fails_the_run_after_the_timeout(tmp_path: Path) -> None:
    folder = tmp_path / "B7"
    write_id_prompts(folder, 50)
    with running_simulator(tmp_path / "sim", "--speed", "100", "--die-after", "10") as sim:
        result = run_runner(folder, sim.url, "--server-down-timeout", "2")

    assert result.returncode == 1
    assert "no SGLang server healthy for 2 s" in result.stderr
    final = status(folder)
    assert (final["state"], final["stop_reason"]) == ("failed", "server_down")
    assert final["completed"] == sum(response_ids(folder).values())
