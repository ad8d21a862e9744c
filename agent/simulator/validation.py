"""Checking a /generate body the way SGLang 0.5 does, with its messages word for word.

Two gates, as in the real server (paths under `sglang/`, lines of 0.5.23):
- the JSON contract gate runs before anything else and answers HTTP 400 with the error as a bare
  string, `{"error": "unknown field `x`, expected one of ..."}`, even for a stream
  (srt/entrypoints/http_server.py:937-939, api/v1/api_types.py:97-108, 1256-1320);
- everything else is a ValueError raised while the request is tokenized: HTTP 400
  `{"error": {"message": ...}}` for a plain request (http_server.py:2246-2250), or an error event
  inside an HTTP 200 stream (http_server.py:947-975).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SAMPLING_FIELDS = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n",
    "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias",
    "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
)  # fmt: skip
"""SamplingParams' fields in schema order (api/v1/api_types.py:1256)."""
_INT_FIELDS = {"max_new_tokens", "top_k", "min_new_tokens", "n", "stream_interval", "beam_width"}
_FLOAT_FIELDS = {
    "temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty",
}  # fmt: skip
DEFAULT_MAX_NEW_TOKENS = 128
"""SamplingParams.max_new_tokens default (api/v1/api_types.py:180)."""


class ContractError(ValueError):
    """The body breaks the JSON schema: 400 with a string `error`, before any stream starts."""


class RequestValueError(ValueError):
    """SGLang raised ValueError while tokenizing: 400 JSON, or an error event inside a stream."""


@dataclass(frozen=True, slots=True)
class PromptIn:
    """One prompt of a /generate request, checked."""

    key: bytes
    tokens: int
    rid: str | None
    max_new_tokens: int
    ignore_eos: bool = False
    """SGLang's sampling param: the answer runs to max_new_tokens (sampling_params.py ignore_eos)."""


def check_contract(body: Any) -> None:
    """The contract gate: object body, known sampling fields of the right JSON types."""
    if not isinstance(body, dict):
        raise ContractError(f"invalid type: {_unexpected(body)}, expected struct GenerateRequest")
    params = body.get("sampling_params")
    for item in params if isinstance(params, list) else [params]:
        if item is None:
            continue
        if not isinstance(item, dict):
            raise ContractError(
                f"invalid type: {_unexpected(item)}, "
                "expected a value or an array of values for SamplingParamsOrList"
            )
        for key, value in item.items():
            _check_sampling_field(key, value)
    ids = body.get("input_ids")
    if ids is not None and not _token_ids_or_list(ids):
        raise ContractError(
            f"invalid type: {_unexpected(ids)}, "
            "expected a value or an array of values for TokenIdsOrList"
        )


def _check_sampling_field(key: str, value: Any) -> None:
    if key not in SAMPLING_FIELDS:
        listed = ", ".join(f"`{name}`" for name in SAMPLING_FIELDS)
        raise ContractError(f"unknown field `{key}`, expected one of {listed}")
    if value is None:
        return
    if key in _INT_FIELDS and not _is_int(value):
        raise ContractError(f"invalid type: {_unexpected(value)}, expected i64")
    if key in _FLOAT_FIELDS and not _is_number(value):
        raise ContractError(f"invalid type: {_unexpected(value)}, expected f64")


def _token_ids_or_list(ids: Any) -> bool:
    if not isinstance(ids, list):
        return False
    if not ids or _is_number(ids[0]):
        return all(_is_int(i) for i in ids)
    return all(isinstance(row, list) and all(_is_int(i) for i in row) for row in ids)


def prompts_of(body: dict[str, Any], context_length: int) -> tuple[list[PromptIn], bool]:
    """The prompts of a body that passed the contract gate, and whether it is a batch."""
    inputs, batch = _inputs(body)
    params = body.get("sampling_params") or {}
    params_list = params if isinstance(params, list) else [params] * len(inputs)
    rids = body.get("rid")
    rid_list = rids if isinstance(rids, list) else [rids] * len(inputs)
    if len(params_list) != len(inputs) or len(rid_list) != len(inputs):
        raise RequestValueError("The length of sampling_params and rid must match the batch size.")
    prompts = []
    for item, sampling, rid in zip(inputs, params_list, rid_list, strict=True):
        prompts.append(_prompt(item, sampling or {}, rid, context_length))  # length first,
        verify_sampling(sampling or {})  # then verify() (tokenizer_manager.py:1271, 1567)
    return prompts, batch


def _inputs(body: dict[str, Any]) -> tuple[list[Any], bool]:
    """io_struct.py:444-455 and 479-515: text wins over input_ids; [] is refused."""
    if body.get("text") is not None:
        text = body["text"]
        return (text if isinstance(text, list) else [text]), isinstance(text, list)
    ids = body.get("input_ids")
    if ids is None:
        raise RequestValueError("Either text, input_ids or input_embeds should be provided.")
    if not ids:
        raise RequestValueError("input_ids cannot be empty.")
    batch = isinstance(ids[0], list)
    return (ids if batch else [ids]), batch


def verify_sampling(params: dict[str, Any]) -> None:
    """SamplingParams.verify's range checks and messages (sampling/sampling_params.py:252-292)."""
    temperature = _float(params, "temperature", 1.0)
    if not math.isfinite(temperature) or temperature < 0.0:
        raise RequestValueError(
            f"temperature must be a non-negative finite number, got {temperature}."
        )
    top_p = _float(params, "top_p", 1.0)
    if not 0.0 < top_p <= 1.0:
        raise RequestValueError(f"top_p must be in (0, 1], got {top_p}.")
    min_p = _float(params, "min_p", 0.0)
    if not 0.0 <= min_p <= 1.0:
        raise RequestValueError(f"min_p must be in [0, 1], got {min_p}.")
    top_k = params.get("top_k", -1)
    if isinstance(top_k, int) and (top_k < 1 and top_k != -1):
        raise RequestValueError(f"top_k must be -1 (disable) or at least 1, got {top_k}.")
    seed = params.get("sampling_seed")
    if seed is not None and (not isinstance(seed, int) or not -(2**63) <= seed < 2**63):
        raise RequestValueError(f"sampling_seed must be in [-2**63, 2**63 - 1], got {seed}.")
    max_new = params.get("max_new_tokens")
    if isinstance(max_new, int) and max_new < 0:
        raise RequestValueError(f"max_new_tokens must be at least 0, got {max_new}.")


def _prompt(item: Any, sampling: dict[str, Any], rid: Any, context_length: int) -> PromptIn:
    max_new = sampling.get("max_new_tokens")
    max_new = DEFAULT_MAX_NEW_TOKENS if max_new is None else int(max_new)
    if isinstance(item, str):
        key, tokens = item.encode(), max(1, len(item.split()))
    else:
        if not item:
            raise RequestValueError("input_ids cannot be empty.")
        key, tokens = repr(item).encode(), len(item)
    check_length(tokens, max_new, context_length)
    ignore_eos = sampling.get("ignore_eos") is True
    key = seeded_key(key, sampling.get("sampling_seed"))
    return PromptIn(key, tokens, rid if isinstance(rid, str) else None, max_new, ignore_eos)


def seeded_key(key: bytes, seed: Any) -> bytes:
    """A prompt's answer key: a seeded request's answer is drawn from its seed too."""
    return key if not isinstance(seed, int) else key + b"|seed=" + str(seed).encode()


def check_length(input_tokens: int, max_new_tokens: int, context_length: int) -> None:
    """The two context checks of TokenizerManager (tokenizer_manager.py:1338-1376)."""
    if input_tokens >= context_length:
        raise RequestValueError(
            f"The input ({input_tokens} tokens) is longer than the model's context length "
            f"({context_length} tokens)."
        )
    if max_new_tokens + input_tokens > context_length:
        raise RequestValueError(
            f"Requested token count exceeds the model's maximum context length of "
            f"{context_length} tokens. You requested a total of {max_new_tokens + input_tokens} "
            f"tokens: {input_tokens} tokens from the input messages and {max_new_tokens} tokens "
            f"for the completion. Please reduce the number of tokens in the input messages or "
            f"the completion to fit within the limit."
        )


def _float(params: dict[str, Any], key: str, default: float) -> float:
    value = params.get(key)
    return default if value is None else float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unexpected(value: Any) -> str:
    """Serde's `Unexpected` wording (api/v1/api_types.py:30-46)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"
