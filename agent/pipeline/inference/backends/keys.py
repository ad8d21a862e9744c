"""Where each backend's API key comes from: a file (`--api-key-file`) or its environment variable.

Never the command line, where `ps` shows it to every user of the box (agent/host/sglang_auth.py).
The native backend reads SGLANG_API_KEY, the OpenAI-compatible ones OPENAI_API_KEY, and every
message about a refused key names the one this run used.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.host.sglang_auth import API_KEY_ENV, read_api_key
from agent.pipeline.inference.backends.openai_http import OPENAI_KEY_ENV


def key_env(api: str) -> str:
    """The environment variable `api`'s key is read from."""
    return API_KEY_ENV if api == "sglang" else OPENAI_KEY_ENV


def read_key(api: str, key_file: Path | None) -> str | None:
    """The key from `key_file` when given, else from the backend's variable, else None."""
    if key_file is not None:
        return read_api_key(key_file)
    return os.environ.get(key_env(api), "").strip() or None


def key_source(api: str, key_file: Path | None, api_key: str | None) -> str | None:
    """Where the key came from, in words (never the key itself); None: no key."""
    if key_file is not None:
        return f"the key in {key_file}"
    return f"the key in ${key_env(api)}" if api_key else None
