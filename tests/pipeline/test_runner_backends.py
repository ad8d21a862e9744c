"""The runner through each backend: native /generate, /v1/completions and /v1/chat/completions."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agent.datasets.detail import dataset_detail
from agent.protocol import DatasetProgress
from agent.simulator.openai_requests import text_ids
from console.model.api_usage_view import hosted_lines
from tests.support.export_data import DROPS_THINK, KEEPS_THINK, build_think_tokenizer, write_jsonl
from tests.support.runner_files import response_tokens, run_runner, runner_command, status
from tests.support.simulator_process import agent_env, running_simulator

FAST = ("--speed", "100", "--mean-tokens", "40", "--sd-tokens", "15", "--seed", "7")
WORDY = ("--vocab-size", "41")
"""Simulated ids 0..39 (and EOS 40), whose text `wK` the think tokenizer knows word for word."""
QUESTIONS = ["why is the sum so", "the answer is", "why and so", "sum of the answer"]


def records(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "raw_responses.jsonl").read_text().splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def write_chat_prompts(folder: Path, count: int) -> list[list[dict[str, str]]]:
    conversations = [
        [{"role": "user", "content": f"{QUESTIONS[i % len(QUESTIONS)]} w{i % 40}"}]
        for i in range(count)
    ]
    write_jsonl(folder / "prompts.jsonl", [
        {"id": f"c{i}", "messages": messages} for i, messages in enumerate(conversations)
    ])  # fmt: skip
    return conversations


def ask(url: str, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """The simulator's answer to one conversation, asked directly (it is deterministic)."""
    body = json.dumps({"messages": messages, "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def test_native_and_completions_record_the_same_ids_for_the_same_seed_and_prompts(
    tmp_path: Path,
) -> None:
    native, openai = tmp_path / "native", tmp_path / "openai"
    for folder in (native, openai):
        folder.mkdir()
        write_jsonl(folder / "prompts.jsonl", [
            {"id": f"p{i}", "input_ids": [1, 2, 3 + i]} for i in range(30)
        ])  # fmt: skip
    with running_simulator(tmp_path / "sg", *FAST) as sim:
        assert run_runner(native, sim.url, "--max-new-tokens", "120").returncode == 0
    with running_simulator(tmp_path / "vl", *FAST, "--flavor", "vllm") as sim:
        result = run_runner(
            openai, sim.url, "--api", "openai-completions", "--max-new-tokens", "120"
        )

    assert result.returncode == 0, result.stderr
    by_native, by_openai = records(native), records(openai)
    assert set(by_openai) == set(by_native)
    for prompt_id, record in by_openai.items():
        assert record["output_ids"] == by_native[prompt_id]["output_ids"], prompt_id
        assert record["finish_reason"] == by_native[prompt_id]["finish_reason"]
        assert record["prompt_ids"] == [1, 2, 3 + int(prompt_id[1:])]
        assert record["tokens"] == "exact"
        assert record["usage"]["completion_tokens"] == len(record["output_ids"])
    final = status(openai)
    assert final["api"] == "openai-completions"
    assert final["tokens"] == response_tokens(openai)


def test_completions_keep_the_budget(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    write_jsonl(
        folder / "prompts.jsonl", [{"id": f"p{i}", "input_ids": [4, i]} for i in range(300)]
    )
    with running_simulator(tmp_path / "vl", *FAST, "--flavor", "vllm") as sim:
        result = run_runner(
            folder, sim.url, "--api", "openai-completions", "--token-budget", "2000",
            "--max-new-tokens", "100", "--concurrency", "16",
        )  # fmt: skip

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["stop_reason"] == "budget"
    assert final["tokens"] == response_tokens(folder)
    assert 2000 <= final["tokens"] <= 2000 + 100


def test_a_refused_key_names_openai_api_key_and_a_good_one_passes(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    write_jsonl(folder / "prompts.jsonl", [{"id": "p0", "input_ids": [1, 2]}])
    args = ("--api", "openai-completions", "--max-new-tokens", "20")
    with running_simulator(
        tmp_path / "vl", *FAST, "--flavor", "vllm", "--api-key", "s3cret"
    ) as sim:
        env = {
            k: v for k, v in agent_env().items() if k not in ("OPENAI_API_KEY", "SGLANG_API_KEY")
        }
        refused = subprocess.run(
            runner_command(folder, sim.url, *args), env=env | {"SGLANG_API_KEY": "s3cret"},
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        passed = subprocess.run(
            runner_command(folder, sim.url, *args), env=env | {"OPENAI_API_KEY": "s3cret"},
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip

    assert refused.returncode == 2, refused.stderr
    assert "OPENAI_API_KEY" in refused.stderr
    assert "SGLANG_API_KEY" not in refused.stderr
    assert passed.returncode == 0, passed.stderr
    assert "p0" in records(folder)


@pytest.fixture
def think_tokenizer(tmp_path: Path) -> tuple[Path, Any]:
    from transformers import AutoTokenizer

    folder = tmp_path / "tok"
    build_think_tokenizer(folder, KEEPS_THINK)
    return folder, AutoTokenizer.from_pretrained(str(folder))


@pytest.mark.slow
def test_chat_with_ids_records_them_exactly(
    tmp_path: Path, think_tokenizer: tuple[Path, Any]
) -> None:
    folder = tmp_path / "d"
    write_chat_prompts(folder, 12)
    with running_simulator(
        tmp_path / "vl", *FAST, *WORDY, "--flavor", "vllm", "--reasoning"
    ) as sim:
        result = run_runner(
            folder, sim.url, "--api", "openai-chat", "--tokenizer", str(think_tokenizer[0]),
            "--max-new-tokens", "120",
        )  # fmt: skip

    assert result.returncode == 0, result.stderr
    kept = records(folder)
    assert len(kept) == 12
    for record in kept.values():
        assert record["tokens"] == "exact"
        assert record["usage"]["completion_tokens"] == len(record["output_ids"])
        assert record["prompt_ids"]
    assert status(folder)["reencoded"] == 0


@pytest.mark.slow
def test_chat_against_sglang_records_the_ids_native_generate_gives_for_the_same_seed(
    tmp_path: Path, think_tokenizer: tuple[Path, Any]
) -> None:
    """SGLang refuses return_token_ids in a chat stream: the ids come from its sglext chunk."""
    chat, native = tmp_path / "chat", tmp_path / "native"
    conversations = write_chat_prompts(chat, 12)
    write_jsonl(native / "prompts.jsonl", [
        {"id": f"c{i}", "input_ids": text_ids(json.dumps(messages, sort_keys=True))}
        for i, messages in enumerate(conversations)
    ])  # fmt: skip  # the simulated chat template: the same prompt ids as the chat sends
    with running_simulator(tmp_path / "sg", *FAST, *WORDY, "--reasoning") as sim:
        assert run_runner(native, sim.url, "--max-new-tokens", "120").returncode == 0
        result = run_runner(
            chat, sim.url, "--api", "openai-chat", "--tokenizer", str(think_tokenizer[0]),
            "--max-new-tokens", "120",
        )  # fmt: skip

    assert result.returncode == 0, result.stderr
    by_chat, by_native = records(chat), records(native)
    assert set(by_chat) == set(by_native)
    for prompt_id, record in by_chat.items():
        assert record["tokens"] == "exact", record
        assert record["output_ids"] == by_native[prompt_id]["output_ids"], prompt_id
        assert record["finish_reason"] == by_native[prompt_id]["finish_reason"]
        assert record["usage"]["completion_tokens"] == len(record["output_ids"])
    assert status(chat)["reencoded"] == 0


@pytest.mark.slow
def test_a_text_only_answer_is_the_tokenizers_own_encoding_of_the_turn(
    tmp_path: Path, think_tokenizer: tuple[Path, Any]
) -> None:
    path, tokenizer = think_tokenizer
    folder = tmp_path / "d"
    conversations = write_chat_prompts(folder, 12)
    with running_simulator(
        tmp_path / "h", *FAST, *WORDY, "--flavor", "hosted", "--reasoning"
    ) as sim:
        result = run_runner(folder, sim.url, "--api", "openai-chat", "--tokenizer", str(path),
                            "--max-new-tokens", "400", "--reencode")  # fmt: skip
        answers = [ask(sim.url, messages, 400) for messages in conversations]

    assert result.returncode == 0, result.stderr
    kept = records(folder)
    for index, answer in enumerate(answers):
        record, message = kept[f"c{index}"], answer["choices"][0]["message"]
        assert answer["choices"][0]["finish_reason"] == "stop"
        thought = message["reasoning"] and f"{message['reasoning']} </think>"  # "" when none
        turn = " ".join(filter(None, [thought, message["content"], "<|im_end|>"]))
        assert record["output_ids"] == tokenizer.encode(turn, add_special_tokens=False)
        assert record["tokens"] == "reencoded"
        rendered = tokenizer.apply_chat_template(conversations[index], add_generation_prompt=True)
        assert record["prompt_ids"] == list(
            rendered["input_ids"] if hasattr(rendered, "keys") else rendered
        )
        assert record["server_completion_tokens"] == answer["usage"]["completion_tokens"]
        assert record["reencoded_tokens"] == len(record["output_ids"])
    final = status(folder)
    assert final["reencoded"] == 12
    assert final["reencode_mismatch_share"] == 0.0


@pytest.mark.slow
def test_a_template_that_drops_the_think_markers_shows_in_the_mismatch_share_across_resumes(
    tmp_path: Path,
) -> None:
    tokenizer = tmp_path / "tok"
    build_think_tokenizer(tokenizer, DROPS_THINK)
    folder = tmp_path / "d"
    write_chat_prompts(folder, 8)
    args = ("--api", "openai-chat", "--tokenizer", str(tokenizer), "--max-new-tokens", "400",
            "--reencode")  # fmt: skip
    with running_simulator(
        tmp_path / "h", *FAST, *WORDY, "--flavor", "hosted", "--reasoning"
    ) as sim:
        first = run_runner(folder, sim.url, *args, "--max-samples", "3")
        second = run_runner(folder, sim.url, *args)

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    final = status(folder)
    assert final["reencoded"] == 5, "this run's"
    assert final["dataset_reencoded"] == 8
    assert final["dataset_reencode_mismatches"] == 8
    assert final["reencode_mismatch_share"] == 1.0
    costs = [record["usage"]["cost"] for record in records(folder).values()]
    assert final["dataset_cost"] == pytest.approx(sum(costs))
    assert final["cost"] < final["dataset_cost"]


@pytest.mark.slow
def test_a_429_storm_pauses_dispatch_fails_no_prompt_and_keeps_the_budget(
    tmp_path: Path, think_tokenizer: tuple[Path, Any]
) -> None:
    folder = tmp_path / "d"
    write_chat_prompts(folder, 200)
    with running_simulator(
        tmp_path / "h", *FAST, *WORDY, "--flavor", "hosted", "--rate-limit-rate", "0.5",
        "--retry-after", "0.2", "--stream-error-rate", "0.05",
    ) as sim:  # fmt: skip
        result = run_runner(
            folder, sim.url, "--api", "openai-chat", "--tokenizer", str(think_tokenizer[0]),
            "--token-budget", "1500", "--max-new-tokens", "100", "--concurrency", "8",
            "--max-retries", "3", "--reencode",
        )  # fmt: skip

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["stop_reason"] == "budget"
    assert final["errors"] == 0
    assert not (folder / "errors.jsonl").exists() or not (folder / "errors.jsonl").read_text()
    assert final["rate_limited"] > 0
    assert final["tokens"] == response_tokens(folder)
    assert 1500 <= final["tokens"] <= 1500 + 100
    kept = records(folder).values()
    assert final["cost"] == pytest.approx(sum(r["usage"]["cost"] for r in kept))
    assert "rate limited: dispatch paused" in result.stderr
    usage = dataset_detail("d", folder, "raw_responses.jsonl", 1).api_usage
    assert usage is not None, "the agent reads the hosted run's tallies"
    assert usage.cost_credits == pytest.approx(final["dataset_cost"])
    shown = hosted_lines([DatasetProgress("d", 200, 0, 0, None, api_usage=usage)], time.time())
    assert shown[0] == f"rate limit: {final['rate_limited']:,} × 429 this run · not paused"


@pytest.mark.slow
def test_an_error_inside_a_stream_is_retried_not_kept(
    tmp_path: Path, think_tokenizer: tuple[Path, Any]
) -> None:
    folder = tmp_path / "d"
    write_chat_prompts(folder, 20)
    with running_simulator(
        tmp_path / "h", *FAST, *WORDY, "--flavor", "hosted", "--stream-error-rate", "0.4"
    ) as sim:
        result = run_runner(
            folder, sim.url, "--api", "openai-chat", "--tokenizer", str(think_tokenizer[0]),
            "--max-new-tokens", "100", "--max-retries", "20", "--reencode",
        )  # fmt: skip

    assert result.returncode == 0, result.stderr
    final = status(folder)
    assert final["retries"] > 0
    assert "error inside the stream" in result.stderr
    assert len(records(folder)) == 20
    assert os.path.getsize(folder / "raw_responses.jsonl") > 0
