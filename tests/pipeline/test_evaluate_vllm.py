"""The evaluation on vLLM (the simulator's vLLM flavour here; the real one in test_real_vllm.py).

Requests go to /v1/completions with the prompt's ids; the accept length is the change of vLLM's
drafter counters over each level; the cache is reset where vLLM allows it (dev mode) and the
level is said to run warm where it does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.pipeline.evaluate.vllm_state import NOT_IN_DEV_MODE
from tests.support.pipeline_runs import TARGET, eval_json, evaluate
from tests.support.simulator_process import running_simulator

VLLM = ("--flavor", "vllm", "--context-length", "4000")
DRAFTER = ("--speculative-accept-length", "2.5", "--speculative-num-draft-tokens", "4")


@pytest.mark.slow
def test_a_vllm_drafter_is_measured_by_its_counters_against_a_vllm_baseline(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "d", *TARGET, *VLLM, *DRAFTER, "--dp-size", "2",
                           "--vllm-dev-mode") as drafter, \
            running_simulator(tmp_path / "b", *TARGET, *VLLM, "--vllm-dev-mode") as baseline:  # fmt: skip
        ran = evaluate(tmp_path, drafter.url, baseline.url, "--ignore-eos")
    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    for level in record["levels"]:
        assert level["accept_length"] == pytest.approx(2.5, abs=0.1), "both engines counted"
        assert level["accept_length_decode_steps"] == level["accept_length"]
        assert level["spec_accept_rate"] == pytest.approx(1.5 / 3, abs=0.05)
        assert len(level["spec_position_acceptance"]) == 3
        assert level["warm_cache"] is False, "dev mode: the prefix cache was reset"
        assert level["speedup"] > 1.2
    assert record["verdict"].startswith(f"{record['levels'][0]['speedup']:.2f}× at concurrency 1")
    assert record["details"][0]["baseline"]["accept_length"] is None


@pytest.mark.slow
def test_without_dev_mode_the_level_is_said_to_run_warm(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "d", *TARGET, *VLLM, *DRAFTER) as drafter:
        ran = evaluate(tmp_path, drafter.url, None)
    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    assert all(level["warm_cache"] for level in record["levels"])
    assert record["details"][0]["server"]["flush_error"] == NOT_IN_DEV_MODE
    assert "ran on a warm cache (the cache was not flushed)" in record["verdict"]
    assert record["levels"][0]["accept_length"] == pytest.approx(2.5, abs=0.1)


@pytest.mark.slow
def test_a_vllm_without_a_drafter_says_so(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "d", *TARGET, *VLLM) as plain:
        ran = evaluate(tmp_path, plain.url, None)
    assert ran.returncode == 0, ran.stderr
    detail = eval_json(tmp_path)["details"][0]["server"]
    assert detail["accept_length"] is None
    assert detail["decode_steps_unavailable"] == "vLLM counts no drafts: no drafter on this server"
