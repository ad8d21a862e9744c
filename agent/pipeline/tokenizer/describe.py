"""What a loaded tokenizer is: its class, vocab size, chat template and think marker.

`doctor` shows this for the host's configured tokenizer, so a user sees before a run that the
template opens the assistant turn the way the target model was trained (Kimi-K2.5 thinking:
`<|im_assistant|>assistant<|im_middle|><think>`).
"""

from __future__ import annotations

import re
from typing import Any

THINK_MARKER = re.compile(r"<\|?/?think(?:ing)?\|?>|◁/?think▷")
"""The reasoning markers in use: <think> (Kimi-K2, DeepSeek-R1, Qwen3), ◁think▷ (Kimi-VL)."""
SAMPLE_CHAT = [{"role": "user", "content": "2+2?"}]


def describe_tokenizer(tokenizer: Any) -> dict[str, Any]:
    """The facts doctor reports about `tokenizer` (an already loaded transformers tokenizer)."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    return {
        "class_name": type(tokenizer).__name__,
        "vocab_size": len(tokenizer),
        "has_chat_template": has_template,
        "think_marker": think_marker(tokenizer) if has_template else None,
    }


def think_marker(tokenizer: Any) -> str | None:
    """The think marker the chat template opens the assistant turn with, if it does."""
    try:
        opened = _render(tokenizer, add_generation_prompt=True)
        closed = _render(tokenizer, add_generation_prompt=False)
    except Exception:  # a template may refuse the sample chat; then there is nothing to report
        return None
    generation_prompt = opened[len(closed) :] if opened.startswith(closed) else opened
    found = THINK_MARKER.search(generation_prompt)
    return found[0] if found else None


def _render(tokenizer: Any, *, add_generation_prompt: bool) -> str:
    text = tokenizer.apply_chat_template(
        SAMPLE_CHAT, add_generation_prompt=add_generation_prompt, tokenize=False
    )
    return str(text)


def summary(facts: dict[str, Any]) -> str:
    """One line of the facts, as doctor prints them."""
    template = "no chat template"
    if facts["has_chat_template"]:
        marker = facts["think_marker"]
        template = "chat template, " + (
            f"assistant turn opens with {marker}" if marker else "no think marker"
        )
    return f"{facts['class_name']}, vocab {facts['vocab_size']:,}, {template}"
