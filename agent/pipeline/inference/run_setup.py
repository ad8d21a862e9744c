"""What a run reads before its first request, and the backend that speaks the server's API.

The prompts, the tokenizer, and what earlier runs left: records (a torn tail repaired), permanent
failure marks and, for a text API, the cost and re-encodings so far.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

import aiohttp

from agent.pipeline.inference.backends import Backend, Sampling, make_backend
from agent.pipeline.inference.backends.reencode import Reencoder
from agent.pipeline.inference.conversations import (
    Conversation,
    conversations_of,
    resume_conversations,
)
from agent.pipeline.inference.error_marks import clear_permanent_marks
from agent.pipeline.inference.options import RunnerOptions
from agent.pipeline.inference.prompts import Prompt, PromptEncoder, read_prompts
from agent.pipeline.inference.reasoning_checks import refuse_unhonoured
from agent.pipeline.inference.records import ResumeState, permanently_failed_ids, recover
from agent.pipeline.inference.response_line import DatasetTally, tally_responses
from agent.pipeline.tokenizer.identity import tokenizer_digest

log = logging.getLogger("runner")


@dataclass
class Prepared:
    """The work of a run: every prompt, those still to do, and what resuming found."""

    prompts: list[Prompt]
    encoder: PromptEncoder
    resume: ResumeState
    earlier: DatasetTally
    """Cost and re-encodings of the records earlier runs left, for per-dataset totals."""
    todo: deque[Prompt]
    tokenizer_stamp: str | None = None
    """The tokenizer's digest each response line carries (None: every prompt came as ids)."""
    conversations: dict[str, Conversation] | None = None
    """The prompts regenerated turn by turn, by id."""
    broken: list[tuple[Prompt, str]] | None = None
    """Conversations whose records cannot be continued from, with why: marked failed for good."""


def prepare(options: RunnerOptions, name: str) -> Prepared:
    """Read prompts and records (repairing a torn tail); raises PromptsError on unusable input."""
    if options.retry_errors:
        cleared = clear_permanent_marks(options.errors_path, options.retry_errors)
        log.info("[%s] --retry-errors: %d permanent mark(s) cleared", name, cleared)
    prompts = read_prompts(options.prompts_path, options.max_samples)
    encoder = PromptEncoder(
        options.tokenizer, prompts, trust_remote_code=options.trust_remote_code,
        template_kwargs=options.template_kwargs,
    )  # fmt: skip
    refuse_unhonoured(options, encoder.tokenizer)
    conversations = conversations_of(prompts, options.turns)
    resume = recover(options.responses_path, repair=options.repair)
    earlier = tally_responses(options.responses_path) if options.api != "sglang" else DatasetTally()
    broken = resume_conversations(conversations, resume.done_ids, options.responses_path)
    skip = resume.done_ids | permanently_failed_ids(options.errors_path)
    skip |= {prompt.id for prompt, _ in broken}
    skip |= {key for key, conversation in conversations.items() if conversation.done}
    todo = deque(p for p in prompts if p.id not in skip)
    log.info(
        "[%s] %d prompts, %d done before (%d tokens), %d to go; torn tail moved: %d bytes",
        name, len(prompts), len(resume.done_ids), resume.tokens, len(todo),
        resume.torn_bytes_moved,
    )  # fmt: skip
    tokenizer = encoder.tokenizer
    stamp = tokenizer_digest(tokenizer) if tokenizer is not None else None
    return Prepared(prompts, encoder, resume, earlier, todo, stamp, conversations, broken)


def backend_for(
    options: RunnerOptions,
    session: aiohttp.ClientSession,
    api_key: str | None,
    encoder: PromptEncoder,
) -> Backend:
    """The client of the run's API; text answers re-encoded with the tokenizer if --reencode."""
    sampling = Sampling(
        options.max_new_tokens, options.temperature, options.top_p, options.model,
        options.top_k, options.min_p, options.seed, options.template_kwargs,
    )  # fmt: skip
    tokenizer = encoder.tokenizer
    reencoder = Reencoder(tokenizer, options.template_kwargs) if tokenizer is not None else None
    return make_backend(
        options.api, session, options.request_timeout_s, api_key, sampling, reencoder,
        options.reencode,
    )  # fmt: skip
