"""The SGLang API key: read from a file or from SGLANG_API_KEY, never from a command line.

A server started with `--api-key` refuses /generate and the info endpoints without
`Authorization: Bearer <key>` (sglang srt/utils/auth.py:100-201). The runner and the agent's
probes both send it. A key on a command line would show in `ps` to every user of the box, so
only a file (kept 0600) or the environment are accepted. The host's `api_key_file` reaches every
job the agent starts as the path in EAGLE_API_KEY_FILE (never the key), which the runner and the
evaluation read when no --api-key-file is given. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agent.host.regular_files import open_regular

API_KEY_ENV = "SGLANG_API_KEY"
KEY_FILE_ENV = "EAGLE_API_KEY_FILE"
MAX_KEY_FILE_BYTES = 4096
"""Far past any key; what is longer is not a key file."""
"""The path of the host's configured key file, set by the agent in every job's environment."""


class ApiKeyError(Exception):
    """The key file cannot be used; the message says why and what to do."""


def read_api_key(key_file: str | Path | None, environ: dict[str, str] | None = None) -> str | None:
    """The key from `key_file` when given, else from SGLANG_API_KEY, else None."""
    if key_file is not None:
        return _from_file(Path(key_file).expanduser())
    value = (os.environ if environ is None else environ).get(API_KEY_ENV, "").strip()
    return value or None


def _from_file(path: Path) -> str:
    """The one line of a key file: a regular file of at most MAX_KEY_FILE_BYTES.

    A FIFO blocked the server probe, and every runner handed the file, for good; /dev/zero or a
    300 MB file took the agent to 642 MB. Neither is read: each is a reason.
    """
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
        if len(data) > MAX_KEY_FILE_BYTES:
            raise ApiKeyError(
                f"API key file {path} holds over {MAX_KEY_FILE_BYTES:,} bytes: put the server's "
                "--api-key in it, alone"
            )
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ApiKeyError(f"API key file {path}: cannot read it ({reason})") from None
    key = text.strip()
    if not key or "\n" in key:
        what = "is empty" if not key else "holds more than one line"
        raise ApiKeyError(f"API key file {path} {what}: put the server's --api-key in it, alone")
    return key


def configured_key_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The key file the agent handed this job in EAGLE_API_KEY_FILE, or None."""
    value = (os.environ if environ is None else environ).get(KEY_FILE_ENV, "").strip()
    return Path(value) if value else None


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """The request headers that carry the key, or none."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def key_source(key_file: str | Path | None, api_key: str | None) -> str | None:
    """Where the key came from, in words, for messages (never the key itself); None: no key."""
    if key_file is not None:
        return f"the key in {key_file}"
    return f"the key in ${API_KEY_ENV}" if api_key else None
