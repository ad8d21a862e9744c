"""Each answer checked against what a response line may hold before a token of it counts.

A negative, boolean or huge token count, ids that are not token ids, a count that disagrees with
the ids, a reply the HTTP client could not read, or a record that is no response line by the
reader's one definition (a NaN in it, a line past the limit): a TransientError, so the prompt is
tried again and, past --max-retries, marked in errors.jsonl with the reason. Nothing of such an
answer is counted or written.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from agent.datasets.response_lines import MAX_RESPONSE_TOKENS
from agent.pipeline.inference.backends.base import Backend, Generation, PromptRequest
from agent.pipeline.inference.client import Server, TransientError
from agent.pipeline.inference.prompts import Prompt
from agent.pipeline.inference.response_line import NotAResponseError, encoded_line, response_line

MAX_TOKEN_ID = 2**31 - 1
"""Token ids are int32 on every server we speak to; whether one is in the vocabulary is vocab's."""
NOT_USABLE = "the server's answer is not usable"
SHAPE_ERRORS = (KeyError, TypeError, AttributeError, IndexError, ValueError, RecursionError)
"""What a backend raises reading a field of the wrong type, or a missing one."""


async def usable_answer(client: Backend, server: Server, request: PromptRequest) -> Generation:
    """One answer from `server`, checked; an answer of the wrong shape is a TransientError too.

    A backend reads the fields it knows; a peer that puts a string where a list belongs, or
    leaves out a field, makes it raise one of the errors caught here, which names the field.
    """
    try:
        answer = await client.generate(server, request)
    except SHAPE_ERRORS as exc:
        raise TransientError(f"{NOT_USABLE}: {type(exc).__name__}: {exc}") from None
    except aiohttp.ClientError as exc:  # a reply HTTP itself could not make sense of
        raise TransientError(f"{NOT_USABLE}: {type(exc).__name__}: {exc}") from None
    return checked(answer)


def checked(answer: Generation) -> Generation:
    """The answer, or TransientError naming what makes it no response a line may hold."""
    problem = _problem(answer)
    if problem is not None:
        raise TransientError(f"{NOT_USABLE}: {problem}")
    return answer


def writable_line(
    prompt: Prompt, answer: Generation, latency_s: float, api: str, tokenizer_stamp: str | None,
    fields: dict[str, Any] | None = None,
) -> bytes:  # fmt: skip
    """The answer's response line, checked by the reader's definition; TransientError if refused.

    `fields` are the record's generation settings and, for a conversation's turn, its place.
    """
    try:
        record = response_line(prompt, answer, latency_s, api, tokenizer_stamp) | (fields or {})
        return encoded_line(record)
    except NotAResponseError as exc:
        raise TransientError(f"{NOT_USABLE}: {exc}") from None


def _problem(answer: Generation) -> str | None:
    ids: Any = answer.output_ids  # typed by the backend, filled from a peer's JSON
    tokens: Any = answer.completion_tokens
    if not isinstance(ids, list):
        return f"output_ids is {type(ids).__name__}, not a list"
    bad_id = _bad_token_id(ids)
    if bad_id is not None:
        return f"output_ids holds {bad_id}, not a token id"
    if type(tokens) is not int or not 0 <= tokens <= MAX_RESPONSE_TOKENS:
        return (
            f"completion_tokens is {_short(tokens)}, not a count from 0 to {MAX_RESPONSE_TOKENS:,}"
        )
    if tokens != len(ids):
        return f"completion_tokens {tokens:,} for {len(ids):,} output ids"
    prompt: Any = answer.prompt_tokens
    if prompt is not None and (type(prompt) is not int or prompt < 0):
        return f"prompt_tokens is {_short(prompt)}, not a count"
    prompt_ids: Any = answer.prompt_ids
    if prompt_ids is not None and (bad := _bad_token_id(prompt_ids)) is not None:
        return f"prompt_ids holds {bad}, not a token id"
    return None


def _bad_token_id(ids: Any) -> str | None:
    """The first element of `ids` that is no token id (an int from 0 to MAX_TOKEN_ID), shown short."""
    if not isinstance(ids, list):
        return _short(ids)
    for token_id in ids:
        if type(token_id) is not int or not 0 <= token_id <= MAX_TOKEN_ID:
            return _short(token_id)
    return None


def _short(value: Any) -> str:
    """A peer's value for a message: its type and at most 40 characters of it."""
    text = repr(value) if not isinstance(value, (dict, list)) else f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."
