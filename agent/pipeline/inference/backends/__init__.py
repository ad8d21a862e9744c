"""The runner's backends: how one prompt goes to a server and comes back as token ids.

The runner owns everything else (budget, resume, single writer, torn tails, retries, signals);
a backend only replaces the HTTP exchange. `sglang` is SGLang's native /generate;
`openai-completions` and `openai-chat` speak the OpenAI-compatible API of vLLM, SGLang's /v1 and
hosted APIs (openai-compat-wire.md). One module each; this package picks one by `--api`.
"""

from __future__ import annotations

from typing import Any

from agent.pipeline.inference.backends.base import APIS, Backend, Sampling


def make_backend(
    api: str, session: Any, timeout_s: float, api_key: str | None, sampling: Sampling,
    reencoder: Any = None, reencode: bool = False,
) -> Backend:  # fmt: skip
    """The backend `--api` names, sharing the runner's aiohttp session.

    `reencode` (--reencode) lets openai-chat record a text-only answer re-encoded with
    `reencoder`; without it such an answer stops the run.
    """
    if api == "openai-completions":
        from agent.pipeline.inference.backends.completions import CompletionsBackend

        return CompletionsBackend(session, timeout_s, api_key, sampling)
    if api == "openai-chat":
        from agent.pipeline.inference.backends.chat import ChatBackend

        return ChatBackend(session, timeout_s, api_key, sampling, reencoder, reencode)
    from agent.pipeline.inference.backends.native import SglangBackend

    return SglangBackend(session, timeout_s, api_key, sampling)


__all__ = ["APIS", "Backend", "Sampling", "make_backend"]
