"""A small tokenizer with a chat template, built with `tokenizers` and saved for `transformers`.

The demo and the tests load it back through `AutoTokenizer.from_pretrained`, exactly as the runner
loads a real model's tokenizer on a GPU box. Its word ids line up with the simulator's output ids:
the simulated token `k` decodes to the word `wk`.
"""

from __future__ import annotations

import string
from pathlib import Path

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
COMMON_WORDS = (
    "system user assistant the a an of to and in is it that for on with as was by be this are or "
    "from at which but not have has had you your we our they their can will would should could "
    "what how why when where who explain write summarize translate solve prove compute list give "
    "question answer problem step code function python math story poem email essay data model"
).split()
END_OF_TURN = "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's turn shape (newlines are whitespace to this tokenizer), so SpecForge's `lfm` template,
Qwen's turns without a system prompt of its own, trains on exactly what the simulator produced
when its answers stop with this tokenizer's end of turn (`--stop-id`, end_of_turn_id)."""


def end_of_turn_id() -> int:
    """The id of the end of turn: what the simulator's stopped answers end with in the demo."""
    return SPECIAL_TOKENS.index(END_OF_TURN)


def build_tokenizer(out_dir: Path, vocab_size: int = 32000) -> Path:
    """Write a word-level tokenizer of `vocab_size` ids to `out_dir`; returns the folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # Each word once: "a" is a letter and a word, and a second entry left the first id unmapped,
    # a hole in the ids the simulator samples (the demo's round trip failed on it).
    listed = [*SPECIAL_TOKENS, *string.ascii_letters, *string.digits, *string.punctuation]
    words = list(dict.fromkeys(listed + COMMON_WORDS))
    words += [f"w{i}" for i in range(len(words), vocab_size)]
    vocab = {word: index for index, word in enumerate(words[:vocab_size])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        pad_token="</s>", additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )  # fmt: skip
    tokenizer.chat_template = CHAT_TEMPLATE
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(out_dir))
    return out_dir


if __name__ == "__main__":
    import sys

    build_tokenizer(Path(sys.argv[1]))
