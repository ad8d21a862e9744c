"""SpecForge 0.2.0's registered chat templates that its general and thinking parsers use.

Copied as facts from `specforge/data/template.py` (the `TEMPLATE_REGISTRY.register` calls); the
tests compare this table with SpecForge's own registry, so a drift shows at once. Left out: the
templates whose parser is not the general one (gpt-oss: openai-harmony, glm-5.2: glm) or whose
loss spans are found another way (longcat, inkling-thinking), and deepseek-r1-distill, whose end
of turn is None (SpecForge's own pattern fails on it).

What decides the rendering (`specforge/data/parse.py`, GeneralParser.parse):
- `system_prompt`: added as a system message when a conversation has none (non-empty only);
- `assistant_header` to `end_of_turn` (inclusive) is each assistant span that gets loss;
- `thinking`: the thinking parser, which renders with `add_special_tokens=False` and, where the
  template enables thinking (`enable_thinking`), `enable_thinking=True`;
- `ignore`: texts whose tokens get no loss wherever they appear.
"""

from __future__ import annotations

from dataclasses import dataclass

_HELPFUL = "You are a helpful assistant."
_LLAMA3_SYSTEM = (
    "You are a helpful, respectful and honest assistant. Always answer as helpfully as possible, "
    "while being safe.  Your answers should not include any harmful, unethical, racist, sexist, "
    "toxic, dangerous, or illegal content. Please ensure that your responses are socially "
    "unbiased and positive in nature.\n\nIf a question does not make any sense, or is not "
    "factually coherent, explain why instead of answering something not correct. If you don't "
    "know the answer to a question, please don't share false information."
)
_QWEN_HEADER, _QWEN_END = "<|im_start|>assistant\n", "<|im_end|>\n"


@dataclass(frozen=True, slots=True)
class SpecForgeTemplate:
    """One registered template, as far as it shapes what SpecForge trains on."""

    name: str
    assistant_header: str
    end_of_turn: str
    system_prompt: str = ""
    thinking: bool = False
    enable_thinking: bool = False
    ignore: tuple[str, ...] = ()


SPECFORGE_TEMPLATES: dict[str, SpecForgeTemplate] = {
    template.name: template
    for template in (
        SpecForgeTemplate(
            "llama3", "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>",
            _LLAMA3_SYSTEM,
        ),
        SpecForgeTemplate("llama4", "<|header_start|>assistant<|header_end|>\n\n", "<|eot|>", _HELPFUL),
        SpecForgeTemplate("qwen", _QWEN_HEADER, _QWEN_END, _HELPFUL),
        SpecForgeTemplate("lfm", _QWEN_HEADER, _QWEN_END, ""),
        SpecForgeTemplate("phi3", "<|assistant|>\n", "<|end|>\n", _HELPFUL),
        SpecForgeTemplate("phi4", "<|im_start|>assistant<|im_sep|>", "<|im_end|>", _HELPFUL),
        SpecForgeTemplate("phi4-mini", "<|assistant|>", "<|end|>", _HELPFUL),
        SpecForgeTemplate(
            "gpt-oss-naive", "<|start|>assistant<|channel|>analysis<|message|>", "<|end|>"
        ),
        SpecForgeTemplate("qwen3-thinking", _QWEN_HEADER, _QWEN_END, _HELPFUL, thinking=True, enable_thinking=True),
        SpecForgeTemplate(
            "qwen3-instruct", _QWEN_HEADER, _QWEN_END, _HELPFUL, ignore=("<think>\n\n</think>\n\n",)
        ),
        SpecForgeTemplate(
            "qwen3-next-thinking", _QWEN_HEADER + "<think>\n", _QWEN_END, _HELPFUL, thinking=True, enable_thinking=True
        ),
        SpecForgeTemplate(
            "kimi-k2-thinking", "<|im_assistant|>assistant<|im_middle|>", "<|im_end|>", _HELPFUL,
            thinking=True, enable_thinking=True,
        ),
        SpecForgeTemplate(
            "kimi-k2-instruct", "<|im_assistant|>assistant<|im_middle|>", "<|im_end|>", _HELPFUL
        ),
        SpecForgeTemplate(
            "kimi-k3-thinking",
            '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>', "<|end_of_msg|>",
            thinking=True, ignore=("<|end_of_msg|>",),
        ),
        SpecForgeTemplate("deepseek-v3", "<｜Assistant｜>", "<｜end▁of▁sentence｜>", _HELPFUL),
        SpecForgeTemplate("deepseek-v2", "Assistant: ", "<｜end▁of▁sentence｜>"),
        SpecForgeTemplate("ling-flash-2.0", "<role>ASSISTANT</role>", "<|role_end|>", _HELPFUL),
        SpecForgeTemplate("deepseek-v32", "<｜Assistant｜>", "<｜end▁of▁sentence｜>", thinking=True, enable_thinking=True),
        SpecForgeTemplate("gemma", "<start_of_turn>model\n", "<end_of_turn>\n", _HELPFUL),
        SpecForgeTemplate("longcat_xml", "<longcat_assistant>", "</longcat_s>", _HELPFUL),
        SpecForgeTemplate("qwen3.5", _QWEN_HEADER + "<think>\n", _QWEN_END, thinking=True, enable_thinking=True),
    )
}  # fmt: skip


def specforge_template(name: str) -> SpecForgeTemplate:
    """The template registered under `name`; KeyError listing the names known when there is none."""
    try:
        return SPECFORGE_TEMPLATES[name]
    except KeyError:
        known = ", ".join(sorted(SPECFORGE_TEMPLATES))
        raise KeyError(
            f"SpecForge has no chat template {name!r} this export renders; known: {known}"
        ) from None


def same_turns_without_system(template: SpecForgeTemplate) -> list[str]:
    """Templates that mark turns as `template` does but add no system prompt of their own."""
    return sorted(
        other.name
        for other in SPECFORGE_TEMPLATES.values()
        if not other.system_prompt and _turns(other) == _turns(template)
    )


def ends_without_more(template: SpecForgeTemplate) -> list[str]:
    """Templates that mark turns as `template` does but end an answer with less after it.

    Qwen's `<|im_end|>` and a newline: every SpecForge template for Qwen-style turns (qwen, lfm, qwen3-*)
    puts loss on the newline, which the model never generated, so none is exact for such a target.
    """
    return sorted(
        other.name
        for other in SPECFORGE_TEMPLATES.values()
        if other.assistant_header == template.assistant_header
        and len(other.end_of_turn) < len(template.end_of_turn)
        and template.end_of_turn.startswith(other.end_of_turn)
        and other.thinking == template.thinking
    )


def _turns(template: SpecForgeTemplate) -> tuple[object, ...]:
    return (
        template.assistant_header, template.end_of_turn, template.thinking,
        template.enable_thinking, template.ignore,
    )  # fmt: skip
