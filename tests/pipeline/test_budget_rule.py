"""One rule for "done with its budget": a run ends at its budget or when its prompts run out.

A dataset a few tokens under its budget with prompts left is not done: the gate must send one
more request, so a rerun always makes progress instead of exiting at once having written nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.pipeline.inference.budget import BudgetGate
from agent.protocol import generation_done
from tests.support.runner_files import response_tokens, run_runner, status, write_id_prompts
from tests.support.simulator_process import SimulatorProcess

BUDGET = 100_000


def write_done_responses(folder: Path, tokens: list[int]) -> None:
    """Responses for p0, p1, ... with these completion tokens, as the runner writes them."""
    with (folder / "raw_responses.jsonl").open("w") as handle:
        for number, count in enumerate(tokens):
            record = {"id": f"p{number}", "output_ids": [7] * count, "completion_tokens": count}
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")


def test_the_rule() -> None:
    assert not generation_done(99_971, BUDGET, prompts_left=300)
    assert generation_done(BUDGET, BUDGET, prompts_left=300)
    assert generation_done(12, BUDGET, prompts_left=0)
    assert not generation_done(10**9, None, prompts_left=1)


def test_the_gate_sends_one_more_when_a_few_tokens_short_with_nothing_in_flight() -> None:
    gate = BudgetGate(BUDGET, 4096.0)
    gate.resume([500] * 199 + [471])  # 99,971 tokens, mean ~500
    assert not gate.reached
    assert gate.may_dispatch(0.0)
    gate.sent("last", 0.0)
    assert not gate.may_dispatch(0.0), "one in flight is expected to cover the 29 tokens left"


def test_a_rerun_29_tokens_under_its_budget_makes_progress_and_ends_at_it(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B1_short"
    write_id_prompts(folder, 400)
    write_done_responses(folder, [500] * 199 + [471])

    result = run_runner(folder, simulator.url, "--token-budget", str(BUDGET))

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["dispatched"] >= 1, "a rerun under its budget with prompts left sent nothing"
    assert final["stop_reason"] == "budget"
    assert response_tokens(folder) == final["tokens"] >= BUDGET
    again = run_runner(folder, simulator.url, "--token-budget", str(BUDGET))
    assert again.returncode == 0, again.stderr
    assert status(folder)["dispatched"] == 0, "a dataset at its budget is done"


def test_a_run_whose_last_prompts_failed_for_good_is_done(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B2_failed"
    write_id_prompts(folder, 3)
    write_done_responses(folder, [10, 10])
    (folder / "errors.jsonl").write_text(json.dumps({"id": "p2", "permanent": True}) + "\n")

    result = run_runner(folder, simulator.url, "--token-budget", str(BUDGET))

    assert result.returncode == 0, result.stderr
    assert (status(folder)["dispatched"], status(folder)["stop_reason"]) == (0, "exhausted")
