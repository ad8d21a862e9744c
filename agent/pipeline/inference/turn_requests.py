"""What the runner sends for a prompt: its own ids, or the next turn of its conversation.

Every record carries how it was generated where that changes its ids (the template's arguments,
the reasoning mode), so the export renders each prompt as it was sent; a turn's record also says
which conversation and turn it is, and where the earlier answers sit in its prompt.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agent.pipeline.inference.conversations import Conversation
from agent.pipeline.inference.options import RunnerOptions
from agent.pipeline.inference.prompts import Prompt, PromptEncoder
from agent.pipeline.inference.turns import history_answers, turn_messages, turn_prompt
from agent.pipeline.tokenizer.think import think_opener

THINKS_ANYWAY = (
    "the answer opens a think block although --reasoning disable turned thinking off: not kept "
    "(as SpecForge's disable mode skips it)"
)


@dataclass(frozen=True, slots=True)
class Asked:
    """One request: what is sent and recorded, its ids, and the record's extra fields."""

    prompt: Prompt
    input_ids: list[int]
    fields: dict[str, Any]


class TurnRequests:
    """Builds each request of a run, with its tokenizer and generation settings."""

    def __init__(self, encoder: PromptEncoder, options: RunnerOptions) -> None:
        self.encoder = encoder
        self.template_kwargs = options.template_kwargs
        self.drop_reasoning = options.reasoning == "drop"
        self.provenance: dict[str, Any] = {}
        if options.template_kwargs:
            self.provenance["template_kwargs"] = options.template_kwargs
        if options.reasoning is not None:
            self.provenance["reasoning"] = options.reasoning
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turns")
        tokenizer = encoder.tokenizer
        disabled = options.reasoning == "disable" and tokenizer is not None
        self.opener = think_opener(tokenizer) if disabled else None

    def request(self, prompt: Prompt, conversation: Conversation | None) -> Asked:
        """The prompt's request, or its conversation's next turn."""
        if conversation is None:
            return Asked(prompt, self.encoder.input_ids(prompt), dict(self.provenance))
        tokenizer, turn, plan = self.encoder.tokenizer, conversation.turns_done, conversation.plan
        built = turn_prompt(
            tokenizer, plan, conversation.answers, turn, self.template_kwargs, self.drop_reasoning
        )
        shown = history_answers(tokenizer, conversation.answers, self.drop_reasoning)
        asked = Prompt(conversation.record_id(turn), prompt.line_no,
                       messages=turn_messages(plan, shown, turn))  # fmt: skip
        fields = self.provenance | {
            "conversation": prompt.id,
            "turn": turn + 1,
            "turns": plan.turns,
            "turn_spans": [list(span) if span else None for span in built.spans],
        }
        return Asked(asked, built.input_ids, fields)

    async def request_for(self, prompt: Prompt, conversation: Conversation | None) -> Asked:
        """`request`; a conversation's turn off the event loop (it renders the whole history).

        One thread for all: a tokenizer is not to be used by two threads at once.
        """
        if conversation is None:
            return self.request(prompt, None)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.worker, self.request, prompt, conversation)

    def close(self) -> None:
        """Let the worker thread go."""
        self.worker.shutdown(wait=False)

    def refusal(self, output_ids: list[int]) -> str | None:
        """Why an answer is not kept under the run's reasoning mode, or None."""
        if self.opener is not None and self.opener in output_ids:
            return THINKS_ANYWAY
        return None
