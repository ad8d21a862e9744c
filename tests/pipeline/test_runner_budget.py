"""The runner stops at the budget, keeps everything with finish, and reports discards with cancel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.runner_files import (
    response_ids,
    response_tokens,
    run_runner,
    status,
    write_id_prompts,
)
from tests.support.simulator_process import SimulatorProcess, running_simulator

MAX_NEW = 400


@pytest.mark.parametrize("concurrency", [1, 64])
@pytest.mark.slow
def test_finish_lands_within_one_response_of_the_budget(
    simulator: SimulatorProcess, tmp_path: Path, concurrency: int
) -> None:
    folder = tmp_path / "B1_sharegpt"
    write_id_prompts(folder, 2000)
    budget = 30_000

    result = run_runner(
        folder, simulator.url, "--token-budget", str(budget), "--concurrency", str(concurrency),
        "--max-new-tokens", str(MAX_NEW),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["stop_reason"] == "budget"
    assert final["state"] == "stopped"
    on_disk = response_tokens(folder)
    assert final["tokens"] == on_disk
    assert abs(on_disk - budget) <= MAX_NEW, on_disk
    assert final["discarded_tokens"] == 0
    assert final["cancelled_requests"] == 0
    assert final["completed"] == final["dispatched"], "finish keeps every request it sent"
    assert max(response_ids(folder).values()) == 1
    last = result.stderr.strip().splitlines()[-1]
    said = f"ended: its token budget is met ({final['tokens']:,} of {budget:,} tokens)"
    assert said in last, "the runner's last line says why it ended"


def test_a_run_out_of_prompts_says_so_last(simulator: SimulatorProcess, tmp_path: Path) -> None:
    folder = tmp_path / "B2_small"
    write_id_prompts(folder, 5)
    result = run_runner(folder, simulator.url, "--token-budget", "10000000")
    assert result.returncode == 0, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "ended: no prompt is left to answer; 5 response(s) written this run" in last


@pytest.mark.parametrize(
    ("prompts", "speed", "budget", "most", "runner_args"),
    [
        pytest.param(
            500, ("--speed", "5", "--mean-tokens", "300", "--sd-tokens", "150"), 3000, 3000 + 1000,
            ("--concurrency", "32", "--max-new-tokens", "1000"), id="in-flight-work-is-aborted",
        ),
        # A batch of equal answers ends together, as on a real vLLM: each one that came back after
        # the budget was met was still written, so cancel overshot as much as finish; now the
        # answers past the one that met the budget are cut.
        pytest.param(
            64, ("--speed", "20", "--mean-tokens", "100", "--sd-tokens", "0"), 150, 200,
            ("--concurrency", "16"), id="answers-finishing-with-the-one-at-the-budget-are-cut",
        ),
    ],
)  # fmt: skip
def test_cancel_cuts_within_one_response_of_the_budget_and_reports_it(
    tmp_path: Path,
    prompts: int,
    speed: tuple[str, ...],
    budget: int,
    most: int,
    runner_args: tuple[str, ...],
) -> None:
    folder = tmp_path / "B2"
    write_id_prompts(folder, prompts)
    with running_simulator(tmp_path / "sim", *speed) as sim:
        result = run_runner(
            folder, sim.url, "--token-budget", str(budget), "--on-budget", "cancel", *runner_args
        )

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["stop_reason"] == "budget"
    assert budget <= final["tokens"] <= most, "cut within one response of the budget"
    assert final["tokens"] == response_tokens(folder)
    assert final["discarded_tokens"] + final["cancelled_requests"] > 0
    assert final["completed"] + final["errors"] < final["dispatched"]
    assert "cancelling" in result.stderr


def test_without_budget_it_runs_the_sample_cap_and_stops_exhausted(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B3"
    ids = write_id_prompts(folder, 50)

    result = run_runner(folder, simulator.url, "--max-samples", "30", "--concurrency", "8")

    assert result.returncode == 0, result.stderr
    assert set(response_ids(folder)) == set(ids[:30])
    assert status(folder)["stop_reason"] == "exhausted"


def test_a_finished_dataset_resumes_to_nothing(simulator: SimulatorProcess, tmp_path: Path) -> None:
    folder = tmp_path / "B4"
    ids = write_id_prompts(folder, 20)
    assert run_runner(folder, simulator.url).returncode == 0
    again = run_runner(folder, simulator.url)
    assert again.returncode == 0, again.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert status(folder)["dispatched"] == 0
