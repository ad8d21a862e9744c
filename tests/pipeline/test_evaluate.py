"""The drafter evaluation against two real simulators: one with a drafter, one without."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.pipeline_runs import TARGET, eval_json, evaluate
from tests.support.simulator_process import running_simulator

TOLERANCE = 0.15


@pytest.mark.slow
def test_accept_length_3_against_no_drafter(tmp_path: Path) -> None:
    """Alone, a request decodes A / (1 + overhead) = 3 / 1.25 = 2.4 times faster."""
    with running_simulator(tmp_path / "d", *TARGET, "--speculative-accept-length", "3") as drafter, \
            running_simulator(tmp_path / "b", *TARGET) as baseline:  # fmt: skip
        ran = evaluate(tmp_path, drafter.url, baseline.url, "--stream", "--ignore-eos")

    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    levels = record["levels"]
    assert [level["concurrency"] for level in levels] == [1, 4]
    for level in levels:
        assert set(level) == {"concurrency", "tokens_per_s", "baseline_tokens_per_s", "speedup",
                              "accept_length", "latency_p50_s", "latency_p95_s",
                              "accept_length_decode_steps", "spec_accept_rate",
                              "spec_correct_drafts_histogram", "spec_position_acceptance",
                              "warm_cache"}  # fmt: skip
        # 128 tokens: the prefill's, then 127 in round(127 / 3) = 42 verify steps
        assert level["accept_length"] == round(128 / 42, 3)  # per request, as SpecForge
        # per decode pass, as bench_serving: the 127 decode tokens over the 42 steps the answers
        # give (the simulator's /server_info said its configured 3.0)
        assert level["accept_length_decode_steps"] == round(127 / 42, 3)
        assert level["spec_accept_rate"] == round((127 - 42) / (42 * 3), 4)
        assert level["spec_correct_drafts_histogram"] == [0, 0, 41 * 4, 1 * 4]
        assert level["warm_cache"] is False
        assert level["speedup"] == pytest.approx(2.4, rel=TOLERANCE)
        assert level["latency_p95_s"] >= level["latency_p50_s"] > 0
        assert level["speedup"] == pytest.approx(
            level["tokens_per_s"] / level["baseline_tokens_per_s"], rel=0.01
        )
    assert record["verdict"].startswith(f"{levels[0]['speedup']:.2f}× at concurrency 1, ")
    assert record["verdict"].endswith("faster than no drafter at every level")
    assert record["slower"] is False
    assert record["details"][0]["server"]["ttft_p50_s"] > 0
    assert record["details"][0]["server"]["cache_flushed"] is True
    assert record["details"][0]["baseline"]["cache_flushed"] is True
    assert record["settings"]["ignore_eos"] is True  # SGLang's parameter: the simulator takes it
    assert record["settings"]["warmup_prompts"] == 2  # prompts 5 and 6, never measured
    assert "evaluate: concurrency 1: " in ran.stderr


@pytest.mark.slow
def test_a_drafter_that_slows_decoding_gets_the_slower_verdict(tmp_path: Path) -> None:
    """Accept length 1.5 at twice the step cost: 0.75 of the plain speed."""
    slow = ("--speculative-accept-length", "1.5", "--speculative-step-overhead", "1.0")
    with running_simulator(tmp_path / "d", *TARGET, *slow) as drafter, \
            running_simulator(tmp_path / "b", *TARGET) as baseline:  # fmt: skip
        ran = evaluate(tmp_path, drafter.url, baseline.url, "--warmup", "1")  # the slowest test

    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    for level in record["levels"]:
        assert level["speedup"] == pytest.approx(0.75, rel=TOLERANCE)
        assert level["accept_length"] == pytest.approx(1.5, rel=0.05)
    assert "slower than no drafter at every level" in record["verdict"]
    assert record["slower"] is True


@pytest.mark.slow
def test_without_a_baseline_the_verdict_asks_for_one(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "d", *TARGET, "--speculative-accept-length", "2") as drafter:
        ran = evaluate(tmp_path, drafter.url, None)

    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    assert all(level["speedup"] is None for level in record["levels"])
    assert record["verdict"].startswith("accept length 2.0")
    assert record["verdict"].endswith("give --baseline to measure the speedup")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--concurrency", "1,64"], "concurrency 64 needs at least that many"),
        (["--concurrency", "0"], "'0' is not a whole number from 1"),
        (["--temperature", "9"], "--temperature 9 must be between 0 and 2"),
        (["--warmup", "-1"], "'-1' is not a whole number from 0"),
        (["--flush-timeout", "-1"], "--flush-timeout -1 must be between 0 and 3600"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    ran = evaluate(tmp_path, "http://127.0.0.1:9", None, *args)
    assert ran.returncode == 2
    assert words in ran.stderr


def test_a_server_that_never_comes_up_is_named(tmp_path: Path) -> None:
    ran = evaluate(tmp_path, "http://127.0.0.1:9", None, "--wait-for-server", "1")
    assert ran.returncode == 1
    assert "http://127.0.0.1:9 did not become ready within 1 s" in ran.stderr
    assert not (tmp_path / "out" / "eval.json").exists()
