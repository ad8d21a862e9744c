"""The JSON shapes of the OpenAI-compatible API as vLLM 0.33/0.34 and hosted APIs write them.

Pure functions, no I/O: the routes fill them in. Sources (openai-compat-wire.md, paths of vllm
0.33.0 under `vllm/entrypoints/openai/` unless noted):
- completion choice `{index, text, logprobs, finish_reason, stop_reason, token_ids,
  prompt_token_ids}` and usage (completion/protocol.py:675-722);
- chat: `message.reasoning` (chat_completion/protocol.py:86), `token_ids` per choice and
  `prompt_token_ids` at the top (protocol.py:128,155);
- errors `{"error": {message, type, param, code}}` (entrypoints/serve/engine/protocol.py:79);
  a hosted API's `{"error": {code, message, metadata}}` (OpenRouter's documentation);
- `/v1/models` entries with `max_model_len` (entrypoints/serve/engine/protocol.py:105).

SGLang 0.5.23 (openai-compat-wire.md §3, under `sglang/srt/entrypoints/openai/`): chat ids as
`response_token_ids` + `prompt_token_ids` per choice (protocol.py:963,1319), the stream's ids in
a trailing `sglext.output_ids` chunk (serving_chat.py:2716-2760), flat errors
`{"object": "error", message, type, param, code}` (protocol.py:106; serving_base.py:205).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    """One generated answer, split the way a reasoning parser splits it."""

    token_ids: list[int]
    """Every generated id, the end-of-think marker and the stop/EOS id included (vLLM keeps them)."""
    reasoning: str | None
    content: str
    finish_reason: str
    """stop, length or abort."""


def words(ids: list[int]) -> str:
    """The simulated detokenizer: id k is the word `wk`, as /generate's text says it."""
    return " ".join(f"w{token}" for token in ids)


def split_answer(
    ids: list[int], finish: str, eos_id: int, reasoning: bool, done: int | None = None
) -> Answer:
    """The text of `ids`: with `reasoning`, the first half is thought and the id after it ends it.

    The EOS id is in `token_ids` but never in the text (vllm/v1/engine/detokenizer.py:107-130);
    the end-of-think marker is stripped by the parser (vllm/parser/engine/parser_engine.py:269).
    `done` cuts the ids at a point mid-stream.
    """
    shown = ids[: len(ids) if done is None else done]
    body = [token for token in shown if token != eos_id]
    if not reasoning:
        return Answer(shown, None, words(body), finish)
    marker = think_end_position(ids, eos_id)
    return Answer(shown, words(body[:marker]), words(body[marker + 1 :]), finish)


def think_end_position(ids: list[int], eos_id: int) -> int:
    """Where the simulated model ends its reasoning: halfway through the text ids."""
    return len([token for token in ids if token != eos_id]) // 2


def completion_body(
    model: str, answer: Answer, prompt_ids: list[int] | None, with_ids: bool
) -> dict[str, Any]:
    """A /v1/completions answer with one choice (protocol.py:675-722)."""
    choice: dict[str, Any] = {
        "index": 0,
        "text": answer.content,
        "logprobs": None,
        "finish_reason": answer.finish_reason,
        "stop_reason": None,  # null on EOS and on a length cut (v1/core/sched/utils.py:104-138)
    }
    if with_ids:
        choice |= {"token_ids": answer.token_ids, "prompt_token_ids": prompt_ids}
    return _envelope("cmpl", "text_completion", model) | {
        "choices": [choice],
        "usage": usage(len(prompt_ids or ()), len(answer.token_ids)),
    }


def chat_message(answer: Answer, reasoning_fields: tuple[str, ...]) -> dict[str, Any]:
    """The assistant message, its reasoning under each of `reasoning_fields`."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.content, "tool_calls": []}
    for name in reasoning_fields:
        if name == "reasoning_details":  # OpenRouter: a list of typed parts
            text = answer.reasoning or ""
            message[name] = [{"type": "reasoning.text", "text": text}] if text else []
        else:
            message[name] = answer.reasoning
    return message


def chat_body(
    model: str, message: dict[str, Any], answer: Answer, prompt_ids: list[int] | None, ids: bool
) -> dict[str, Any]:
    """A /v1/chat/completions answer (chat_completion/protocol.py:86-155)."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": answer.finish_reason,
        "stop_reason": None,
    }
    body = _envelope("chatcmpl", "chat.completion", model) | {"choices": [choice]}
    if ids:
        choice["token_ids"] = answer.token_ids
        body["prompt_token_ids"] = prompt_ids
    return body | {"usage": usage(len(prompt_ids or ()), len(answer.token_ids))}


def sglang_chat_ids(choice: dict[str, Any], answer: Answer, prompt_ids: list[int] | None) -> None:
    """SGLang's non-stream chat ids, both on the choice (protocol.py:963,1319)."""
    choice["response_token_ids"] = answer.token_ids
    choice["prompt_token_ids"] = prompt_ids


def sglext_chunk(chunk_id: str, model: str, output_ids: list[int]) -> dict[str, Any]:
    """SGLang's trailing stream chunk: no choices, one id list per choice (serving_chat.py:2716-2760)."""
    return {"id": chunk_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [], "sglext": {"output_ids": [output_ids]}}  # fmt: skip


def stream_chunk(
    chunk_id: str, kind: str, model: str, choices: list[dict[str, Any]]
) -> dict[str, Any]:
    """One stream event of `kind`.

    `chat.completion.chunk` (chat_completion/serving.py:608-620) or `text_completion`
    (completion/serving.py:506-535).
    """
    return {"id": chunk_id, "object": kind, "created": int(time.time()), "model": model,
            "choices": choices}  # fmt: skip


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The usage object; completion_tokens = len(token_ids) (vllm v1/core/sched/utils.py)."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def vllm_error(status: int, message: str, kind: str = "BadRequestError") -> dict[str, Any]:
    """VLLM's ErrorResponse (entrypoints/serve/engine/protocol.py:79)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def sglang_error(status: int, message: str) -> dict[str, Any]:
    """SGLang's flat ErrorResponse (protocol.py:106; serving_base.py:205)."""
    return {"object": "error", "message": message, "type": "BadRequestError", "param": None,
            "code": status}  # fmt: skip


def hosted_error(status: int, message: str) -> dict[str, Any]:
    """A hosted API's error: `{"error": {code, message, metadata}}` (OpenRouter's docs)."""
    return {"error": {"code": status, "message": message, "metadata": {}}}


def models_body(model: str, max_model_len: int, owner: str = "vllm") -> dict[str, Any]:
    """`GET /v1/models`, as vLLM answers it (entrypoints/serve/engine/protocol.py:105).

    SGLang's ModelCard has the same fields, owned by "sglang" (srt/entrypoints/openai/protocol.py
    ~93): the evaluation tells the two apart by it.
    """
    entry = {"id": model, "object": "model", "created": int(time.time()), "owned_by": owner,
             "root": model, "parent": None, "max_model_len": max_model_len}  # fmt: skip
    return {"object": "list", "data": [entry]}


def vllm_server_info(model: str, max_model_len: int) -> dict[str, Any]:
    """The /server_info of vLLM with VLLM_SERVER_DEV_MODE=1: config, VLLM_ environment, system.

    Its keys, not its status, tell it from SGLang's (entrypoints/serve/dev/server_info/
    api_router.py:43-59); the config is vLLM's `str(VllmConfig)` text by default.
    """
    config = f"model='{model}', max_model_len={max_model_len}, data_parallel_size=1"
    return {"vllm_config": config, "vllm_env": {"VLLM_SERVER_DEV_MODE": True},
            "system_env": {"os": "simulated"}}  # fmt: skip


def new_id(prefix: str) -> str:
    """A response id in vLLM's `cmpl-<hex>` style."""
    return f"{prefix}-{uuid.uuid4().hex}"


def _envelope(prefix: str, kind: str, model: str) -> dict[str, Any]:
    return {"id": new_id(prefix), "object": kind, "created": int(time.time()), "model": model}
