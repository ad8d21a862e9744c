"""Conversations as a hostile tester writes them: odd stops, odd tokenizers, odd records.

The history of a model that stops on a token other than its tokenizer's EOS holds one end of turn;
a tokenizer without offsets splices as one with them; a record that only looks like a turn is a
plain record; one broken conversation costs that conversation, never the export.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.datasets.tracker import ResponseCounter
from agent.pipeline.export.__main__ import main
from agent.pipeline.inference.conversations import conversations_of
from agent.pipeline.inference.prompts import Prompt, PromptsError
from agent.pipeline.inference.turns import history_text, plan_conversation, turn_prompt
from tests.support.export_data import KEEPS_TURNS, build_think_tokenizer, read_jsonl, write_jsonl

CHAT = [{"role": "user", "content": "why is the sum"}, {"role": "assistant", "content": "w1"},
        {"role": "user", "content": "and so"}]  # fmt: skip


@pytest.fixture
def tokenizer_and_vocab(tmp_path: Path) -> tuple[Any, dict[str, int]]:
    from transformers import AutoTokenizer

    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    return AutoTokenizer.from_pretrained(str(tmp_path / "tok")), vocab


def test_a_stop_token_that_is_not_eos_is_written_once_in_the_history(
    tokenizer_and_vocab: tuple[Any, dict[str, int]],
) -> None:
    tokenizer, vocab = tokenizer_and_vocab
    tokenizer.eos_token = "</s>"  # Gemma and Llama 3 stop a turn on a token that is not EOS
    answer = [vocab["w3"], vocab["w4"], vocab["<|im_end|>"]]
    built = turn_prompt(tokenizer, plan_conversation(CHAT), [answer], 1, {})

    text = tokenizer.decode(built.input_ids)
    assert "<|im_end|> <|im_end|>" not in text
    [span] = built.spans
    assert span is not None
    assert built.input_ids[span[0] : span[1]] == answer


class NoOffsets:
    """A tokenizer that gives no offsets (a slow or remote-code one), else the real one."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, text: str, **kwargs: Any) -> Any:
        if kwargs.get("return_offsets_mapping"):
            raise NotImplementedError("return_offset_mapping is not available")
        return self.inner(text, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_tokenizer_without_offsets_splices_the_same_ids(
    tokenizer_and_vocab: tuple[Any, dict[str, int]],
) -> None:
    tokenizer, vocab = tokenizer_and_vocab
    answers = [[vocab["w3"], vocab["<|im_end|>"]], [vocab["sum"], vocab["w9"]]]
    chat = [*CHAT, {"role": "assistant", "content": "w2"}, {"role": "user", "content": "so"}]
    plan = plan_conversation(chat)
    with_offsets = turn_prompt(tokenizer, plan, answers, 2, {})
    without = turn_prompt(NoOffsets(tokenizer), plan, answers, 2, {})
    assert without == with_offsets
    assert [with_offsets.input_ids[s[0] : s[1]] for s in with_offsets.spans if s] == answers


def test_reasoning_a_length_cut_left_open_is_dropped_from_the_history(
    tokenizer_and_vocab: tuple[Any, dict[str, int]],
) -> None:
    tokenizer, _ = tokenizer_and_vocab
    assert history_text(tokenizer, "so <think> w1 w2", drop_reasoning=True) == "so"
    assert history_text(tokenizer, "<think> w1 </think> the sum", drop_reasoning=True) == "the sum"
    assert history_text(tokenizer, "<think> w1", drop_reasoning=False) == "<think> w1"


def test_tool_conversations_and_ids_too_long_for_a_turn_are_not_regenerated() -> None:
    tools: list[dict[str, Any]] = [CHAT[0], {"role": "assistant", "content": "", "tool_calls": [{"id": "t"}]},
             {"role": "tool", "content": "4"}, {"role": "user", "content": "so"}]  # fmt: skip
    assert conversations_of([Prompt("t", 1, messages=tools)], "all") == {}
    with pytest.raises(PromptsError, match="give it a shorter id"):
        conversations_of([Prompt("x" * 1020, 1, messages=CHAT)], "all")


def line(record_id: str, output: list[int], **fields: Any) -> dict[str, Any]:
    return {"id": record_id, "output_ids": output, "completion_tokens": len(output),
            "finish_reason": "stop", **fields}  # fmt: skip


def turn(name: str, number: int, output: list[int], **fields: Any) -> dict[str, Any]:
    return line(f"{name}#turn{number}", output, conversation=name, turn=number, turns=2, **fields)


def test_one_broken_conversation_costs_itself_never_the_export(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    ok = [vocab["w3"], vocab["<|im_end|>"]]
    names = ("good", "huge", "kwargs", "dup")
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl",
                [{"id": n, "messages": CHAT} for n in (*names, "plain")])  # fmt: skip
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", [
        turn("good", 1, ok), turn("good", 2, ok),
        turn("huge", 1, [1099511627776]), turn("huge", 2, ok),
        turn("kwargs", 1, ok, template_kwargs={"tokenize": True}), turn("kwargs", 2, ok),
        turn("dup", 1, ok), turn("dup", 2, ok), turn("dup", 2, ok),
        line("plain", ok, conversation="plain", turn="1", turns=True),  # looks like one; is not
    ])  # fmt: skip
    code = main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 0

    records = {r["id"] for r in read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")}
    assert records == {"good", "dup", "plain"}
    report = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    assert report["out_of_vocab"]["first"].startswith("huge#turn1: token id 1099511627776")
    assert report["encode_failed"]["first"].startswith("kwargs")
    assert report["duplicates_skipped"] == 1


def test_the_agent_counts_a_record_that_only_looks_like_a_turn_as_a_response(
    tmp_path: Path,
) -> None:
    path = tmp_path / "raw_responses.jsonl"
    lines = [line("a", [1], conversation="a"), line("b#turn1", [1], conversation="b", turn=1),
             line("c#turn2", [1], conversation="c", turn=2, turns=1)]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    counter = ResponseCounter(path)
    counter.update()
    assert (counter.responses, counter.turn_records, counter.conversations_done) == (3, 0, 0)


def test_dropped_reasoning_of_a_plain_answer_gets_no_loss(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    said = [vocab[w] for w in "<think> w1 </think> the sum <|im_end|>".split()]
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": "p", "messages": CHAT[:1]}])
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", [line("p", said, reasoning="drop")])
    main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
          "--out", str(tmp_path / "o"), "--chat-template", "lfm"])  # fmt: skip

    [record] = read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")
    trained = [i for i, bit in zip(record["input_ids"], record["loss_mask"], strict=True) if bit]
    assert trained == [vocab["the"], vocab["sum"], vocab["<|im_end|>"]]
    report = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    [why] = report["conversations_left_out"]
    assert why.startswith("--reasoning drop")
