"""Tokenizers and datasets for the export tests, made here with `tokenizers`: no download.

A word-level tokenizer with think markers, saved for transformers, under a chat template that
opens the assistant turn with `<think>` (as Kimi-K2.5 and DeepSeek-R1 do) and either keeps an
assistant turn as it is (KEEPS_THINK) or keeps only what follows `</think>` (DROPS_THINK, as
DeepSeek-R1's template does with past turns): the bug class that made a 25K-sample run useless.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

SPECIALS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
WORDS = ["user", "system", "assistant", "the", "sum", "of", "is", "and", "so", "answer", "why"]
WORDS += [f"w{i}" for i in range(40)]
_TURN = "<|im_start|>{{ m['role'] }} {{ %s }}<|im_end|> "
KEEPS_THINK = (
    "{% for m in messages %}" + _TURN % "m['content']" + "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant <think> {% endif %}"
)
_LINE_TURN = "<|im_start|>{{ m['role'] }}\n{{ %s }}<|im_end|>\n"
KEEPS_TURNS = (
    "{% for m in messages %}" + _LINE_TURN % "m['content']" + "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's turn shape (a header line, the end of turn, a newline), so SpecForge's qwen and lfm
templates find the assistant spans; the model opens its own think block."""
DROPS_TURNS = (
    "{% for m in messages %}{% if m['role'] == 'assistant' %}"
    + _LINE_TURN % "m['content'].split('</think>')[-1].strip()"
    + "{% else %}"
    + _LINE_TURN % "m['content']"
    + "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DROPS_THINK = (
    "{% for m in messages %}{% if m['role'] == 'assistant' %}"
    + _TURN % "m['content'].split('</think>')[-1].strip()"
    + "{% else %}"
    + _TURN % "m['content']"
    + "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant <think> {% endif %}"
)


def build_think_tokenizer(
    folder: Path, template: str = KEEPS_THINK, words: list[str] = WORDS, newlines: bool = False,
    thinking: bool = True,
) -> dict[str, int]:  # fmt: skip
    """Write the tokenizer to `folder`; returns its vocabulary (token -> id).

    Other `words` (the same ones in another order, say) make another model's tokenizer.
    `newlines`: a newline is a token of its own, as in Qwen's byte-level BPE (else whitespace).
    `thinking` False: no think markers at all (a model that does not reason).
    """
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = SPECIALS if thinking else SPECIALS[:5]
    vocab = {token: index for index, token in enumerate(specials + words + ["\n"] * newlines)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = (
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex("\n"), "isolated"),
            pre_tokenizers.Split(Regex(" +"), "removed"),
        ])
        if newlines else pre_tokenizers.WhitespaceSplit()
    )  # fmt: skip
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="<|im_end|>",
        pad_token="</s>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"][: 3 if thinking else 1],
    )  # fmt: skip
    tokenizer.chat_template = template
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(folder))
    return vocab


def ids_of(vocab: dict[str, int], text: str) -> list[int]:
    """The ids of whitespace-separated tokens."""
    return [vocab[token] for token in text.split()]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """One JSON object a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def response(
    answer_id: str, output: list[int], finish: str = "stop", **extra: Any
) -> dict[str, Any]:
    """A response line as the runner writes it."""
    return {"id": answer_id, "output_ids": output, "completion_tokens": len(output),
            "finish_reason": finish, **extra}  # fmt: skip


def answered_by_two_tokenizers(
    folder: Path, prompts: int, late: int
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`folder/datasets/B1`, whose last `late` of `prompts` chats a real runner answered under
    another tokenizer (`folder/theirs`: the same words under other ids, so equal lengths) than
    the rest (`folder/ours`), against the simulator; the two runs, as they ended."""
    from tests.support.runner_files import run_runner
    from tests.support.simulator_process import running_simulator

    build_think_tokenizer(folder / "ours", KEEPS_TURNS)
    build_think_tokenizer(folder / "theirs", KEEPS_TURNS, WORDS[::-1])
    dataset = folder / "datasets" / "B1"
    chat = [{"role": "user", "content": "why is the sum"}]
    write_jsonl(dataset / "prompts.jsonl",
                [{"id": f"p{i:03d}", "messages": chat} for i in range(prompts)])  # fmt: skip
    with running_simulator(folder / "sim", "--speed", "100", "--mean-tokens", "6",
                           "--sd-tokens", "2", "--vocab-size", "58", "--seed", "5") as sim:  # fmt: skip
        first = run_runner(dataset, sim.url, "--tokenizer", str(folder / "ours"),
                           "--max-samples", str(prompts - late))  # fmt: skip
        later = run_runner(dataset, sim.url, "--tokenizer", str(folder / "theirs"))
    return first, later
