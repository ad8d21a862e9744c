"""Which server an evaluation measures: vLLM by its /v1/models, else SGLang.

vLLM's /v1/models names each model `owned_by: "vllm"` (entrypoints/openai/models/protocol.py);
its `id` is the name its /v1/completions takes. SGLang answers /v1/models too, owned by "sglang",
and an sglang-router not at all: anything but vLLM is measured as SGLang, as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.host.bounded_http import bounded_body, strict_json

MODELS_TIMEOUT_S = 30.0
MAX_MODELS_BYTES = 1 << 20
MAX_MODEL_NAME = 4096


async def vllm_model(session: Any, url: str, headers: dict[str, str]) -> str | None:
    """The model name a vLLM at `url` serves; None when it is not vLLM (or did not say)."""
    import aiohttp

    try:
        async with session.get(f"{url}/v1/models", headers=headers,
                               timeout=aiohttp.ClientTimeout(total=MODELS_TIMEOUT_S)) as answer:  # fmt: skip
            if answer.status != 200:
                return None
            body = strict_json(await bounded_body(answer, MAX_MODELS_BYTES))
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, RecursionError):
        return None
    data = body.get("data") if isinstance(body, dict) else None
    entry = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    name = entry.get("id")
    if entry.get("owned_by") != "vllm" or not isinstance(name, str):
        return None
    return name if 0 < len(name) <= MAX_MODEL_NAME else None
