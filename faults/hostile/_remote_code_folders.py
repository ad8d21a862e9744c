"""Tokenizer folders that ship code, good and hostile, and one runner run over each.

Every folder names code in an `auto_map`, so without --trust-remote-code each must be refused in
one line before anything is sent. With the flag, broken code (a syntax error, an exception, a
missing file, a hub reference, a missing package) must still end in one line, not a traceback.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.remote_code.blocker import without_package_env
from tests.support.remote_code.folder import build_kimi_like_tokenizer
from tests.support.runner_files import runner_command, status
from tests.support.simulator_process import agent_env

REFUSAL_BOUND_S = 30.0
"""An untrusted run reads two small files and stops, transformers never imported (under a second
on an idle machine). A question, were one asked, shows as its "[y/N]" text, whatever the bound."""
LOAD_BOUND_S = 120.0
"""A trusted run imports transformers and runs the folder's code: seconds when idle, tens of
seconds on a loaded machine. Only a safety net against a hang; questions show by their text."""
STDIN_KINDS = ("terminal", "closed", "devnull")


def _auto_map(folder: Path, entry: object, *, in_config: bool = False) -> None:
    name = "config.json" if in_config else "tokenizer_config.json"
    (folder / name).write_text(json.dumps({"auto_map": entry}))


def _kimi(folder: Path) -> None:
    build_kimi_like_tokenizer(folder)


def _legacy_pair(folder: Path) -> None:
    _kimi(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["auto_map"] = config["auto_map"]["AutoTokenizer"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))


def _code_named(source: str) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        (folder / "tokenization_bad.py").write_text(source)
        _auto_map(folder, {"AutoTokenizer": ["tokenization_bad.BadTokenizer", None]})

    return write


FOLDERS: dict[str, Callable[[Path], None]] = {
    "kimi-like": _kimi,
    "legacy auto_map pair": _legacy_pair,
    "auto_map in config.json": lambda f: _auto_map(
        f, {"AutoTokenizer": ["tokenization_kimi.X", None]}, in_config=True
    ),
    "code file missing": lambda f: _auto_map(f, {"AutoTokenizer": ["tokenization_gone.X", None]}),
    "code in a hub repo": lambda f: _auto_map(f, {"AutoTokenizer": ["org/repo--tok.X", None]}),
    "syntax error": _code_named("class BadTokenizer(:\n"),
    "raises when built": _code_named(
        "from transformers import PreTrainedTokenizer\n\n"
        "class BadTokenizer(PreTrainedTokenizer):\n"
        "    def __init__(self, **kwargs):\n"
        "        raise RuntimeError('tokenizer blew up\\nsecond line')\n"
    ),
}
"""Each folder, by what is odd about it."""
TRUSTED_BROKEN = ("syntax error", "raises when built", "code file missing", "code in a hub repo")
"""Broken even with the flag: one line each, no traceback."""


@dataclass(frozen=True)
class RunOutcome:
    """One runner run: how it ended and what it left."""

    code: int | None
    """None: still running at the bound (killed)."""
    stdout: str
    stderr: str
    seconds: float
    record: dict[str, object]
    errors_file: bool
    responses_file: bool


def make_folder(root: Path, label: str) -> Path:
    """The tokenizer folder called `label`, built fresh under `root`."""
    folder = root / label.replace(" ", "-").replace(".", "-")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    FOLDERS[label](folder)
    return folder


def run_runner(
    dataset: Path, server: str, tokenizer: Path, stdin_kind: str, *flags: str,
    env: dict[str, str] | None = None,
) -> RunOutcome:  # fmt: skip
    """Run the runner on `dataset` to its end (or the bound), stdin as `stdin_kind` says."""
    bound_s = LOAD_BOUND_S if "--trust-remote-code" in flags else REFUSAL_BOUND_S
    command = runner_command(dataset, server, "--tokenizer", str(tokenizer), *flags)
    if stdin_kind == "closed":
        command = ["/bin/sh", "-c", 'exec "$@" <&-', "sh", *command]
    controller, terminal = pty.openpty() if stdin_kind == "terminal" else (-1, -1)
    stdin = terminal if stdin_kind == "terminal" else subprocess.DEVNULL
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env or agent_env(), stdin=stdin, capture_output=True,
                              text=True, timeout=bound_s)  # fmt: skip
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        code, out, err = None, _text(expired.stdout), _text(expired.stderr)
    finally:
        for fd in (terminal, controller):
            if fd >= 0:
                os.close(fd)
    return RunOutcome(
        code, out, err, time.monotonic() - started, status(dataset),
        (dataset / "errors.jsonl").exists(), (dataset / "raw_responses.jsonl").exists(),
    )  # fmt: skip


def no_tiktoken_env(folder: Path) -> dict[str, str]:
    """An environment where tiktoken cannot be imported."""
    return without_package_env(folder, "tiktoken")


def _text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""
