"""The host's configured tokenizer, loaded as the jobs will load it, for `doctor`.

The load runs in a subprocess (`python -m agent.pipeline.tokenizer PATH --json`), never in the
daemon: transformers is heavy, a trusted folder's code runs arbitrary Python, and a load that
hangs (a slow disk, code that waits) is bounded by killing that process's group. stdin is
/dev/null, so nothing in it can wait for an answer either.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.bundle import AGENT_PACKAGE
from agent.host.bounded_process import run_bounded
from agent.host.regular_files import open_regular
from agent.pipeline.tokenizer import TRUST_FLAG
from agent.protocol import PipelineConfig, TokenizerCheck, from_wire

MAX_TIMEOUT_S = 600.0
"""Longest a console may ask the check to wait."""
MAX_OUTPUT_BYTES = 1024 * 1024
"""A tokenizer's own code may print; past this much it is stopped (its answer is one line)."""
MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""tokenizer_config.json read for its auto_map: a chat template makes it large, never this."""


async def check_tokenizer(pipeline: PipelineConfig, timeout_s: float) -> TokenizerCheck:
    """Load `pipeline.tokenizer` with `pipeline.trust_remote_code` and say how it went."""
    path, trust = pipeline.tokenizer, pipeline.trust_remote_code
    if path is None:
        return TokenizerCheck(path, trust, False, "no path under [tokenizer] in this host's config")
    timeout_s = min(max(timeout_s, 1.0), MAX_TIMEOUT_S)
    answer = await run_bounded(
        (sys.executable, "-m", "agent.pipeline.tokenizer", path, "--json",
         *([TRUST_FLAG] if trust else [])),
        timeout_s, MAX_OUTPUT_BYTES, env=dict(os.environ, PYTHONPATH=str(AGENT_PACKAGE.parent)),
    )  # fmt: skip
    if answer.timed_out:
        return TokenizerCheck(
            path, trust, False, f"loading {path} took longer than {timeout_s:g} s; gave up"
        )
    if answer.flooded:
        return TokenizerCheck(
            path, trust, False, f"loading {path} printed over {MAX_OUTPUT_BYTES:,} bytes; stopped"
        )
    out, err = answer.out, answer.err
    checked = _result(path, trust, out, err)
    return replace(checked, ships_code=await asyncio.to_thread(ships_code_at, path))


def _result(path: str, trust: bool, out: bytes, err: bytes) -> TokenizerCheck:
    record = _last_json_object(out)
    if record is None:
        said = err.decode(errors="replace").strip().splitlines()
        detail = said[-1] if said else "the check printed nothing"
        return TokenizerCheck(path, trust, False, f"the tokenizer check failed: {detail}")
    facts = {
        key: record[key]
        for key in ("class_name", "vocab_size", "has_chat_template", "think_marker")
        if key in record
    }
    try:
        return from_wire(
            TokenizerCheck,
            {"path": path, "trust_remote_code": trust, "ok": bool(record.get("ok")),
             "detail": str(record.get("detail", "")), **facts},
        )  # fmt: skip
    except ValueError as exc:
        return TokenizerCheck(path, trust, False, f"the tokenizer check said something odd: {exc}")


def ships_code_at(path: str) -> bool:
    """`ships_code` of the configured path (`~` expanded)."""
    return ships_code(Path(path).expanduser())


def ships_code(folder: Path) -> bool:
    """True when the tokenizer folder brings code of its own (a .py file, or an auto_map)."""
    try:
        if any(folder.glob("*.py")):
            return True
        with open_regular(folder / "tokenizer_config.json") as handle:
            config = json.loads(handle.read(MAX_CONFIG_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "auto_map" in config


def _last_json_object(out: bytes) -> dict[str, Any] | None:
    """The check's answer: its last stdout line (a tokenizer's own code may print before it)."""
    for line in reversed(out.decode(errors="replace").splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict) and "ok" in value:
                return value
    return None
