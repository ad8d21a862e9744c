"""Refusing reasoning flags the run's tokenizer cannot honour, before anything is sent.

A chat template that never reads `enable_thinking` renders the same text with it on or off:
`--reasoning keep` or `disable` would then change nothing while the run records it as done, the
mismatch between generation and training that SpecForge #296 describes. `--reasoning drop` needs
think markers to find the reasoning by. Where the server renders (openai-chat with no tokenizer
here) the arguments are sent as given: only the server can tell.
"""

from __future__ import annotations

from typing import Any

from agent.pipeline.inference.generation_flags import THINKING_SWITCH
from agent.pipeline.inference.options import RunnerOptions
from agent.pipeline.inference.prompts import PromptsError
from agent.pipeline.tokenizer.think import think_opener

PROBE = [{"role": "user", "content": "2 + 2"}]


def refuse_unhonoured(options: RunnerOptions, tokenizer: Any) -> None:
    """PromptsError naming the flag the tokenizer cannot honour, and what to do instead."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return
    if THINKING_SWITCH in options.template_kwargs and not _switch_read(tokenizer, options):
        flag = f"--reasoning {options.reasoning}" if options.reasoning else THINKING_SWITCH
        raise PromptsError(
            f"{flag}: the chat template of {options.tokenizer} renders the same text with "
            f"{THINKING_SWITCH} on and off, so it would change nothing. Leave it out, or pass "
            "the template's own switch with --chat-template-kwargs"
        )
    if options.reasoning == "drop" and think_opener(tokenizer) is None:
        raise PromptsError(
            f"--reasoning drop: the tokenizer at {options.tokenizer} has no think markers "
            "(<think>, ◁think▷ or <thinking> as single tokens), so there is no reasoning to drop"
        )


def _switch_read(tokenizer: Any, options: RunnerOptions) -> bool:
    """True when the template renders differently with thinking on and off (or cannot say)."""
    rendered = []
    for value in (True, False):
        arguments = options.template_kwargs | {THINKING_SWITCH: value}
        try:
            rendered.append(tokenizer.apply_chat_template(
                PROBE, add_generation_prompt=True, tokenize=False, **arguments
            ))  # fmt: skip
        except Exception:  # a template that refuses the probe: the prompts will tell
            return True
    return bool(rendered[0] != rendered[1])
