"""Our rendering of a conversation row against SpecForge 0.2.0's own parser, id by id, mask by mask.

SpecForge is installed from the package index (requirements/trainers.in); its parser runs here on the
tokenizer the tests build, for the templates the export knows, and must give exactly what
agent/pipeline/export/specforge_render.py gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.export.specforge_render import render
from agent.pipeline.export.specforge_templates import (
    SPECFORGE_TEMPLATES,
    same_turns_without_system,
    specforge_template,
)
from tests.support.export_data import KEEPS_TURNS, build_think_tokenizer

SYSTEM = {"role": "system", "content": "so answer"}
USER = {"role": "user", "content": "why is the sum"}
CONVERSATIONS: list[list[dict[str, Any]]] = [
    [USER, {"role": "assistant", "content": "the sum is w7"}],
    [SYSTEM, USER, {"role": "assistant", "content": "<think> w1 w2 </think> the sum"}],
    [USER, {"role": "assistant", "content": "w1 w2"}, {"role": "user", "content": "and so"},
     {"role": "assistant", "content": "w3 w4 w5"}],
    [SYSTEM, USER, {"role": "assistant", "content": "<think> </think> w9"}],
]  # fmt: skip
TEMPLATES = ["qwen", "lfm", "qwen3-instruct", "qwen3-thinking"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tok") / "turns"
    build_think_tokenizer(folder, KEEPS_TURNS)
    return AutoTokenizer.from_pretrained(str(folder))


def specforge_parse(tokenizer: Any, name: str, conversation: list[dict[str, Any]], last: bool) -> tuple[list[int], list[int]]:  # fmt: skip
    from specforge.data.preprocessing import preprocess_conversations
    from specforge.data.template import TEMPLATE_REGISTRY

    result = preprocess_conversations(
        tokenizer, [conversation], TEMPLATE_REGISTRY.get(name), max_length=100_000,
        train_only_last_turn=last,
    )  # fmt: skip
    return result["input_ids"][0][0].tolist(), result["loss_mask"][0][0].tolist()


@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("last", [True, False])
def test_our_render_is_specforges_own_id_by_id(tokenizer: Any, name: str, last: bool) -> None:
    template = specforge_template(name)
    for conversation in CONVERSATIONS:
        ours = render(tokenizer, template, conversation, train_only_last_turn=last)
        ids, mask = specforge_parse(tokenizer, name, conversation, last)
        assert ours.input_ids == ids, (name, conversation)
        assert ours.loss_mask == mask, (name, conversation)
        assert (
            sum(mask) > 0
        )  # the spans were found: a test that could only pass on zeros proves nothing


def test_the_default_system_prompt_is_what_specforge_adds(tokenizer: Any) -> None:
    conversation = CONVERSATIONS[0]
    with_system = render(tokenizer, specforge_template("qwen"), conversation, True)
    without = render(tokenizer, specforge_template("lfm"), conversation, True)
    assert with_system.system_added
    assert not without.system_added
    assert len(with_system.input_ids) > len(without.input_ids)
    added = tokenizer.decode(with_system.input_ids[:8]).split()
    # "You are a helpful assistant." is five words this small vocabulary does not have
    assert added == ["<|im_start|>", "system", *["<unk>"] * 5, "<|im_end|>"]


def test_earlier_assistant_turns_get_loss_unless_only_the_last_is_trained(tokenizer: Any) -> None:
    multi = CONVERSATIONS[2]
    every = render(tokenizer, specforge_template("lfm"), multi, train_only_last_turn=False)
    last = render(tokenizer, specforge_template("lfm"), multi, train_only_last_turn=True)
    assert sum(every.loss_mask) == sum(last.loss_mask) + 3  # w1 w2 and the first end of turn


def test_the_table_is_specforges_registry() -> None:
    from specforge.data.template import TEMPLATE_REGISTRY

    for name, ours in SPECFORGE_TEMPLATES.items():
        theirs = TEMPLATE_REGISTRY.get(name)
        assert (theirs.parser_type, theirs.assistant_pattern_type) in {
            ("general", "general"), ("thinking", "general"),
        }, name  # fmt: skip
        assert ours.assistant_header == theirs.assistant_header, name
        assert ours.end_of_turn == theirs.end_of_turn_token, name
        assert ours.system_prompt == (theirs.system_prompt or ""), name
        assert ours.thinking == (theirs.parser_type == "thinking"), name
        assert ours.enable_thinking == theirs.enable_thinking, name
        assert ours.ignore == tuple(theirs.ignore_token or ()), name


def test_an_unknown_template_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: .*lfm"):
        specforge_template("qwen4")
    assert same_turns_without_system(specforge_template("qwen")) == ["lfm"]


def test_our_ids_rows_load_exactly_in_specforges_prompt_builder(tmp_path: Path) -> None:
    from specforge.data.prompt_builder import prepare_prompt_tasks

    path = tmp_path / "ids.jsonl"
    path.write_text('{"id":"a","input_ids":[5,6,7,8],"loss_mask":[0,0,1,1]}\n')
    [task] = prepare_prompt_tasks(
        path, None, chat_template=None, max_length=3, is_preformatted=False,
        train_only_last_turn=True, cache_dir=None, cache_key=None, num_proc=None,
    )  # fmt: skip
    assert task["payload"] == {"input_ids": [5, 6, 7], "loss_mask": [0, 0, 1]}  # cut at max_length
