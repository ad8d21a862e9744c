"""The runner against each server as it really is: vLLM 0.34 with its dev mode and its context
refusals, and a text-only API that must be asked to re-encode.

Each runs the real runner against the simulator flavour that copies the server (see
tests/simulator/test_vllm_facts.py for the simulator's side of each fact); the router cases are
in test_runner_router.py, against the real sglang-router.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.inference.error_marks import clear_permanent_marks, prompt_kind
from tests.support.export_data import build_think_tokenizer, write_jsonl
from tests.support.runner_files import response_ids, run_runner, status
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "100", "--mean-tokens", "40", "--sd-tokens", "15", "--seed", "7")
WORDY = ("--vocab-size", "41")
"""Simulated ids 0..39 (and EOS 40), whose text `wK` the think tokenizer knows word for word."""


def records(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "raw_responses.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {record["id"]: record for record in map(json.loads, lines)}


def marks(folder: Path) -> list[dict[str, Any]]:
    path = folder / "errors.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def write_chat(folder: Path, count: int) -> None:
    write_jsonl(folder / "prompts.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"why is the sum so w{i}"}]}
        for i in range(count)
    ])  # fmt: skip


@pytest.fixture
def think_tokenizer(tmp_path: Path) -> Path:
    build_think_tokenizer(tmp_path / "tok")
    return tmp_path / "tok"


def test_a_vllm_in_dev_mode_gives_exact_chat_ids_not_sglangs_ask(
    tmp_path: Path, think_tokenizer: Path
) -> None:
    """Its /server_info answers 200, with vLLM's keys: return_token_ids is what it needs."""
    folder = tmp_path / "d"
    write_chat(folder, 6)
    args = ("--flavor", "vllm", "--vllm-dev-mode", "--reasoning")
    with running_simulator(tmp_path / "vl", *FAST, *WORDY, *args) as sim:
        result = run_runner(folder, sim.url, "--api", "openai-chat",
                            "--tokenizer", str(think_tokenizer), "--max-new-tokens", "100")  # fmt: skip

    assert result.returncode == 0, result.stderr
    kept = records(folder)
    assert len(kept) == 6
    assert {record["tokens"] for record in kept.values()} == {"exact"}
    assert all(record["prompt_ids"] for record in kept.values()), "vLLM's, not SGLang's sglext"
    assert status(folder)["reencoded"] == 0


def test_a_text_only_answer_stops_the_run_unless_reencode_is_asked_for(
    tmp_path: Path, think_tokenizer: Path
) -> None:
    folder = tmp_path / "d"
    write_chat(folder, 6)
    args = ("--api", "openai-chat", "--tokenizer", str(think_tokenizer), "--max-new-tokens", "60")
    with running_simulator(tmp_path / "h", *FAST, *WORDY, "--flavor", "hosted") as sim:
        refused = run_runner(folder, sim.url, *args)
        written_after_refusal = records(folder)
        asked = run_runner(folder, sim.url, *args, "--reencode")

    assert refused.returncode == 2, refused.stderr
    [line] = [line for line in refused.stderr.splitlines() if line.startswith("runner:")]
    assert "answered text only" in line
    assert "add --reencode" in line
    assert written_after_refusal == {}, "nothing re-encoded behind the user's back"
    assert marks(folder) == [], "the server's way of answering is no prompt's fault"
    assert asked.returncode == 0, asked.stderr
    assert {record["tokens"] for record in records(folder).values()} == {"reencoded"}


def test_reencode_without_a_chat_api_and_a_tokenizer_is_a_usage_error(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    write_chat(folder, 1)
    wrong_api = run_runner(folder, "http://127.0.0.1:9", "--reencode", "--tokenizer", "x")
    no_tokenizer = run_runner(folder, "http://127.0.0.1:9", "--api", "openai-chat", "--reencode")

    for result in (wrong_api, no_tokenizer):
        assert result.returncode == 2
        assert "--reencode goes with --api openai-chat and a --tokenizer" in result.stderr


def test_vllms_too_long_prompts_are_marked_too_long_and_retry_errors_clears_them(
    tmp_path: Path,
) -> None:
    """vLLM 0.34: past the context (renderers/params.py:535-552), or exactly at it (0 left)."""
    folder = tmp_path / "d"
    prompts = [
        {"id": "fits", "input_ids": list(range(1, 11))},
        {"id": "past", "input_ids": list(range(1, 42))},
        {"id": "at", "input_ids": list(range(1, 41))},
    ]
    write_jsonl(folder / "prompts.jsonl", prompts)
    args = ("--api", "openai-completions", "--max-new-tokens", "20")
    with running_simulator(
        tmp_path / "vl", *FAST, "--flavor", "vllm", "--context-length", "40"
    ) as sim:
        first = run_runner(folder, sim.url, *args)
        marked = marks(folder)
        cleared = run_runner(folder, sim.url, *args, "--retry-errors", "too_long")

    assert first.returncode == 0, first.stderr
    assert set(response_ids(folder)) == {"fits"}
    by_id = {mark["id"]: mark for mark in marked}
    assert (by_id["past"]["kind"], by_id["at"]["kind"]) == ("too_long", "too_long")
    assert "maximum context length is 40 tokens" in by_id["past"]["reason"]
    assert "max_tokens must be at least 1, got 0" in by_id["at"]["reason"]
    assert "2 permanent mark(s) cleared" in cleared.stderr
    assert {mark["id"] for mark in marks(folder) if mark["permanent"]} == {"past", "at"}, (
        "tried again, and refused again for the same reason"
    )


def test_vllms_max_tokens_past_the_context_stops_the_run_and_marks_nothing(
    tmp_path: Path,
) -> None:
    """renderers/params.py:272-284: no prompt can pass, so none is marked failed."""
    folder = tmp_path / "d"
    write_jsonl(folder / "prompts.jsonl", [{"id": f"p{i}", "input_ids": [1, i]} for i in range(8)])
    with running_simulator(
        tmp_path / "vl", *FAST, "--flavor", "vllm", "--context-length", "40"
    ) as sim:
        result = run_runner(
            folder, sim.url, "--api", "openai-completions", "--max-new-tokens", "41"
        )

    assert result.returncode == 2, result.stderr
    assert "max_tokens=41 cannot be greater than max_model_len=40" in result.stderr
    assert marks(folder) == []
    assert status(folder)["stop_reason"] == "rejected"


VLLM_TOO_LONG = [
    "This model's maximum context length is 40 tokens. However, your prompt contains 41 input "
    "tokens, which exceeds this limit even without any output tokens. Please reduce the length "
    "of the input prompt.",  # 0.33/0.34, renderers/params.py:535-552
    "This model's maximum context length is 40 tokens. However, your prompt contains 400 "
    "characters (more than 160 characters, which is the upper bound for 40 input tokens). "
    "Please reduce the length of the input prompt.",  # before tokenizing, params.py:398-412
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(1000 in the messages, 4000 in the completion). Please reduce the length of the messages "
    "or completion.",  # vLLM 0.20 and before: prompt + max_tokens refused, not clamped
    "max_tokens must be at least 1, got 0.",  # a prompt exactly at the context
    "Input length (41) exceeds model's maximum context length (40).",  # api_utils.py:247-251
]


@pytest.mark.parametrize("message", VLLM_TOO_LONG)
def test_each_vllm_too_long_wording_is_kind_too_long(message: str) -> None:
    assert prompt_kind(f"HTTP 400: {message}") == "too_long"


@pytest.mark.parametrize(
    "message",
    [
        "max_tokens=41 cannot be greater than max_model_len=40. Please request fewer output tokens.",
        "max_tokens must be at least 1, got -3.",
        "top_p must be in (0, 1], got 1.5.",
    ],
)
def test_the_runs_own_refusals_are_not_too_long(message: str) -> None:
    assert prompt_kind(f"HTTP 400: {message}") == "rejected"


def test_retry_errors_too_long_clears_the_marks_older_runners_wrote_as_rejected(
    tmp_path: Path,
) -> None:
    path = tmp_path / "errors.jsonl"
    old = [
        {
            "id": "a",
            "reason": f"HTTP 400: {VLLM_TOO_LONG[0]}",
            "kind": "rejected",
            "permanent": True,
        },
        {"id": "b", "reason": "HTTP 400: something else", "kind": "rejected", "permanent": True},
    ]
    write_jsonl(path, old)

    assert clear_permanent_marks(path, ("too_long",)) == 1
    assert [mark["id"] for mark in marks(tmp_path)] == ["b"]
