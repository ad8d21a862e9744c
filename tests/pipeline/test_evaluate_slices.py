"""The drafter per domain and per prompt length, each slice measured on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.pipeline.evaluate.figures import ServerFigures
from agent.pipeline.evaluate.slices import Slice, SliceResult, losing_words, slice_row
from tests.support.export_data import write_jsonl
from tests.support.pipeline_runs import eval_json, evaluate
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "4", "--mean-tokens", "400", "--sd-tokens", "1", "--seed", "4",
        "--vocab-size", "1000", "--context-length", "4000")  # fmt: skip
NO_GAIN = ("--speculative-accept-length", "1", "--speculative-step-overhead", "0.25")
"""A drafter that accepts nothing: each step costs 1.25 plain ones, so 0.8× everywhere."""


def domains(tmp_path: Path) -> list[str]:
    write_jsonl(tmp_path / "code.jsonl", [{"id": i, "input_ids": [5, 6, i + 7]} for i in range(4)])
    write_jsonl(tmp_path / "long.jsonl",
                [{"id": i, "input_ids": [i + 1] * 600} for i in range(4)])  # fmt: skip
    write_jsonl(tmp_path / "tiny.jsonl", [{"id": 0, "input_ids": [9, 9]}])
    return ["--domain", f"code={tmp_path / 'code.jsonl'}", "--domain",
            f"long={tmp_path / 'long.jsonl'}", "--domain", f"tiny={tmp_path / 'tiny.jsonl'}",
            "--domain", f"gone={tmp_path / 'held_out' / 'gone.jsonl'}",
            "--length-buckets", "512", "--slice-prompts", "4", "--slice-concurrency", "2"]  # fmt: skip


@pytest.mark.slow
def test_each_domain_and_length_is_measured_and_the_losers_named(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "d", *FAST, *NO_GAIN) as drafter, \
            running_simulator(tmp_path / "b", *FAST) as baseline:  # fmt: skip
        ran = evaluate(tmp_path, drafter.url, baseline.url, "--max-new-tokens", "32",
                       "--ignore-eos", *domains(tmp_path))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    record = eval_json(tmp_path)
    assert [d["name"] for d in record["domains"]] == ["code", "long"]
    assert [b["name"] for b in record["lengths"]] == ["0-511 tokens", "512+ tokens"]
    assert record["lengths"][1]["mean_prompt_tokens"] == 600
    assert record["lengths"][0]["prompts"] == 4, "at most --slice-prompts"
    for row in record["domains"] + record["lengths"]:
        assert row["concurrency"] == 2
        assert 0.5 < row["speedup"] < 0.95, row  # 0.8 unloaded; below SLOWER on any machine
        assert row["accept_length"] == pytest.approx(1.0, abs=0.05)
    assert record["slices_left_out"] == [
        f"domain gone: no file {tmp_path / 'held_out' / 'gone.jsonl'} (the export holds none out "
        "of a dataset under 100 prompts)",
        "domain tiny: 1 prompt(s), fewer than concurrency 2",
    ]
    assert "; loses on domain code (0." in record["verdict"]
    assert "512+ tokens (0." in record["verdict"]
    assert "evaluate: domain long: concurrency 2:" in ran.stderr


def test_a_domain_given_twice_or_without_a_file_is_refused(tmp_path: Path) -> None:
    twice = evaluate(tmp_path, "http://127.0.0.1:9", None, "--domain", "a=x.jsonl", "--domain",
                     "a=y.jsonl")  # fmt: skip
    assert twice.returncode == 2
    assert "--domain a given twice: one file per domain" in twice.stderr
    bare = evaluate(tmp_path, "http://127.0.0.1:9", None, "--domain", "math")
    assert bare.returncode == 2
    assert "'math' is not NAME=FILE" in bare.stderr


def test_a_slice_whose_requests_failed_compares_no_speed() -> None:
    failing = ServerFigures(0.0, 0.0, 0.0, None, None, 4, 4, "HTTP 400: past the context")
    fine = ServerFigures(100.0, 0.1, 0.2, None, None, 4, 0, None)
    one = Slice("length", "8,192+ tokens", [[1] * 9000] * 4)
    row = slice_row(SliceResult(one, 1, failing, fine))
    assert row["speedup"] is None
    assert row["first_error"] == "HTTP 400: past the context"
    assert losing_words([row], 0.95) == "; requests failed on 8,192+ tokens (details say why)"
