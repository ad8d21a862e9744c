"""Each answer checked against what a response line may hold before a token of it counts (#28).

A negative, boolean or huge token count, ids that are not token ids, a count that disagrees with
the ids, or extras that cannot be written as JSON (a NaN) or would make a line no reader accepts:
a TransientError, so the prompt is tried again and, past --max-retries, marked in errors.jsonl
with the reason. Nothing of such an answer is counted or written.
"""

from __future__ import annotations

import json
from typing import Any

from agent.datasets.response_lines import MAX_LINE_BYTES
from agent.pipeline.inference.backends.base import Backend, Generation, PromptRequest
from agent.pipeline.inference.client import Server, TransientError

MAX_TOKEN_ID = 2**31 - 1


async def usable_answer(client: Backend, server: Server, request: PromptRequest) -> Generation:
    """One answer from `server`, checked; an answer of the wrong shape is a TransientError too.

    A backend reads the fields it knows; a peer that puts a string where a list belongs, or
    leaves out a field, makes it raise one of the errors caught here, which names the field.
    """
    try:
        answer = await client.generate(server, request)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise TransientError(
            f"the server's answer is not usable: {type(exc).__name__}: {exc}"
        ) from None
    return checked(answer)


def checked(answer: Generation) -> Generation:
    """The answer, or TransientError naming what makes it no response a line may hold."""
    problem = _problem(answer)
    if problem is not None:
        raise TransientError(f"the server's answer is not usable: {problem}")
    return answer


def _problem(answer: Generation) -> str | None:
    ids: Any = answer.output_ids  # typed by the backend, filled from a peer's JSON
    tokens: Any = answer.completion_tokens
    if not isinstance(ids, list):
        return f"output_ids is {type(ids).__name__}, not a list"
    for token_id in ids:
        if type(token_id) is not int or not 0 <= token_id <= MAX_TOKEN_ID:
            return f"output_ids holds {token_id!r}, not a token id"
    if type(tokens) is not int or tokens < 0:
        return f"completion_tokens is {tokens!r}, not a count"
    if tokens != len(ids):
        return f"completion_tokens {tokens:,} for {len(ids):,} output ids"
    prompt: Any = answer.prompt_tokens
    if prompt is not None and (type(prompt) is not int or prompt < 0):
        return f"prompt_tokens is {prompt!r}, not a count"
    try:
        extras = json.dumps(answer.record_fields, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"its fields cannot be written as JSON ({exc})"
    if len(extras) > MAX_LINE_BYTES // 2:
        return f"its fields take {len(extras):,} bytes, too many for one response line"
    return None
