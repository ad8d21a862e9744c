"""Reasoning and sampling under control: sent in each server's form, recorded, refused where a
tokenizer or the flags themselves cannot honour them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.datasets.detail import dataset_detail
from agent.datasets.runner_status import generation_settings
from agent.pipeline.inference.backends.base import PromptRequest, Sampling
from agent.pipeline.inference.backends.chat import ChatBackend
from agent.pipeline.inference.backends.completions import CompletionsBackend
from agent.pipeline.inference.backends.native import SglangBackend
from agent.pipeline.inference.options import parse_options
from agent.pipeline.inference.prompts import Prompt
from agent.pipeline.inference.turn_requests import THINKS_ANYWAY
from console.model.generation_view import generation_line
from tests.support.export_data import KEEPS_TURNS, build_think_tokenizer, write_jsonl
from tests.support.runner_files import run_runner, status
from tests.support.simulator_process import running_simulator

BASE = ["--server", "http://127.0.0.1:1", "--dataset-dir", "/tmp/B1"]
SIM = ("--speed", "100", "--mean-tokens", "12", "--sd-tokens", "4")
WORDS = ("--vocab-size", "58", "--stop-id", "4")
SWITCHED = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
"""Qwen3's switch: with thinking off the template writes an empty think block itself."""


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--top-k=0"], "must be -1 (off) or at least 1"),
        (["--min-p=1.5"], "must be from 0 to 1"),
        (["--seed=-1"], "must be from 0 to 2**63-1"),
        (["--chat-template-kwargs=[1]"], "must be a JSON object"),
        (['--chat-template-kwargs={"a": NaN}'], "not JSON"),
        (["--chat-template-kwargs={"], "not JSON"),
        (["--reasoning=keep", '--chat-template-kwargs={"enable_thinking": false}'],
         "--reasoning keep sets enable_thinking to true"),
        (["--turns=some"], "invalid choice"),
    ],
)  # fmt: skip
def test_flags_no_run_can_honour_are_refused_naming_why(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_options([*BASE, *flags])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_reasoning_sets_the_templates_switch_and_keeps_other_arguments() -> None:
    options = parse_options(
        [*BASE, "--reasoning", "disable", "--chat-template-kwargs", '{"reasoning_effort": "low"}']
    )
    assert options.template_kwargs == {"reasoning_effort": "low", "enable_thinking": False}
    assert parse_options(BASE).template_kwargs == {}


def request(record_id: str) -> PromptRequest:
    return PromptRequest(Prompt(record_id, 1, input_ids=[1, 2]), [1, 2], f"{record_id}-r")


def test_sampling_goes_in_each_servers_own_fields_and_only_when_asked() -> None:
    asked = Sampling(16, 0.7, 0.9, None, top_k=20, min_p=0.05, seed=7,
                     template_kwargs={"enable_thinking": False})  # fmt: skip
    plain = Sampling(16, 0.7, 0.9)
    native = SglangBackend(None, 1.0, None, asked).payload(request("a"))["sampling_params"]  # type: ignore[arg-type]
    assert (native["top_k"], native["min_p"]) == (20, 0.05)
    assert native["sampling_seed"] == asked.seed_for("a") != asked.seed_for("b")
    assert asked.seed_for("a") == Sampling(1, 0, 1, seed=7).seed_for("a")  # any order, any retry
    completions = CompletionsBackend(None, 1.0, None, asked).payload(request("a"))  # type: ignore[arg-type]
    assert (completions["top_k"], completions["min_p"], completions["seed"]) == (
        20, 0.05, asked.seed_for("a"),
    )  # fmt: skip
    chat = ChatBackend(None, 1.0, None, asked, None).payload([], record_id="a")  # type: ignore[arg-type]
    assert chat["chat_template_kwargs"] == {"enable_thinking": False}
    assert chat["seed"] == asked.seed_for("a")
    for body in (
        SglangBackend(None, 1.0, None, plain).payload(request("a"))["sampling_params"],  # type: ignore[arg-type]
        CompletionsBackend(None, 1.0, None, plain).payload(request("a")),  # type: ignore[arg-type]
        ChatBackend(None, 1.0, None, plain, None).payload([]),  # type: ignore[arg-type]
    ):
        assert not {"top_k", "min_p", "seed", "sampling_seed", "chat_template_kwargs"} & set(body)


def chats(folder: Path, count: int) -> None:
    write_jsonl(folder / "prompts.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"why is the sum w{i}"}]}
        for i in range(count)
    ])  # fmt: skip


def test_a_template_that_ignores_the_switch_refuses_reasoning_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS, newlines=True)
    build_think_tokenizer(tmp_path / "plain", KEEPS_TURNS, newlines=True, thinking=False)
    chats(tmp_path / "d", 3)
    for tokenizer, mode, said in (
        ("tok", "keep", "renders the same text with enable_thinking on and off"),
        ("tok", "disable", "renders the same text with enable_thinking on and off"),
        ("plain", "drop", "has no think markers"),
    ):
        result = run_runner(tmp_path / "d", "http://127.0.0.1:9", "--tokenizer",
                            str(tmp_path / tokenizer), "--reasoning", mode)  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert said in result.stderr
        assert not (tmp_path / "d" / "raw_responses.jsonl").exists()


def seed_that_thinks_often(token: int) -> str:
    """A simulator seed under which `token` is among the ids its answers hold most often."""
    from collections import Counter

    from agent.simulator.tokens import LengthProfile, TokenSource

    for seed in range(100):
        source = TokenSource(58, seed, stop_id=4)
        drawn = Counter(
            i
            for k in range(50)
            for i in source.plan(b"%d" % k, 24, LengthProfile(12, 4)).output_ids
        )
        if token in [i for i, _ in drawn.most_common(5)]:
            return str(seed)
    raise AssertionError("no seed found")


def read_records(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "raw_responses.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_thinking_disabled_renders_the_templates_switch_and_drops_answers_that_think(
    tmp_path: Path,
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", SWITCHED, newlines=True)
    folder = tmp_path / "d"
    chats(folder, 30)
    seed = seed_that_thinks_often(vocab["<think>"])
    with running_simulator(
        tmp_path / "sim", *SIM, "--seed", seed, *WORDS, "--flavor", "vllm"
    ) as sim:
        result = run_runner(
            folder, sim.url, "--api", "openai-completions", "--tokenizer", str(tmp_path / "tok"),
            "--reasoning", "disable", "--top-k", "20", "--min-p", "0.05", "--seed", "11",
            "--max-new-tokens", "24",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr

    kept = read_records(folder)
    closed = [vocab["<think>"], vocab["\n"], vocab["\n"], vocab["</think>"], vocab["\n"],
              vocab["\n"]]  # fmt: skip
    for record in kept:
        assert record["prompt_ids"][-len(closed) :] == closed
        assert vocab["<think>"] not in record["output_ids"]
        assert (record["reasoning"], record["template_kwargs"]) == (
            "disable", {"enable_thinking": False},
        )  # fmt: skip
    marks = [json.loads(line) for line in (folder / "errors.jsonl").read_text().splitlines()]
    assert marks
    assert all(m["reason"].endswith(THINKS_ANYWAY) and m["permanent"] for m in marks)
    assert len(kept) + len(marks) == 30
    sampling = status(folder)["sampling"]
    assert (sampling["top_k"], sampling["min_p"], sampling["seed"]) == (20, 0.05, 11)
    assert sampling["reasoning"] == "disable"
    assert sampling["turns"] == "all"
    line = generation_line(dataset_detail("d", folder, "raw_responses.jsonl", 5))
    assert line == (
        "generation: temperature 0.0 · top_p 1.0 · top_k 20 · min_p 0.05 · seed 11 · turns all · "
        'reasoning disable · template {"enable_thinking":false}'
    )


def test_a_peers_odd_settings_are_bounded_or_left_out() -> None:
    odd: dict[object, object] = {"seed": None, "turns": "x" * 10_000, "bad": float("nan"),
                                 7: "x", "deep": [[[1]]]}  # fmt: skip
    settings = generation_settings(odd | {f"k{i}": i for i in range(40)})
    assert "seed" not in settings
    assert "bad" not in settings
    assert len(settings["turns"]) <= 256
    assert settings["deep"] == "[[[1]]]"
    assert len(settings) <= 16
    assert generation_settings(["not", "a", "dict"]) == {}
