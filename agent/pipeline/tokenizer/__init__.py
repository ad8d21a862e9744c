"""Loading the target model's tokenizer: the one place every pipeline job does it.

The runner, the vocab job (when V comes from a tokenizer) and the export and evaluation jobs all
call `load_tokenizer`, and put `add_trust_remote_code_flag` on their command line, so they share
one rule for tokenizers that ship their own code. Kimi-K2's folder is one: no `tokenizer.json`,
but a `tokenization_kimi.py` over a tiktoken encoding, named in `auto_map`. Such a folder loads
only with `--trust-remote-code`, an explicit opt-in as in SGLang and vLLM; without it, it is
refused before transformers is even imported, with one line naming the code files and the flag.

transformers is always given an explicit True or False, so it never asks "Do you wish to run the
custom code? [y/N]" (it asks only when the choice is left open, and waits on a terminal), and its
own question is switched off for any nested load the tokenizer's code might do. A package the
tokenizer needs and the box lacks (tiktoken for Kimi) is named in one line, not a traceback.
A folder holding a plain tokenizer and no model config is loaded by its class, which AutoTokenizer
would pick anyway, without the torch import AutoTokenizer brings (`plain`). Standard library only
at import time: transformers is imported inside `load_tokenizer`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from agent.pipeline.tokenizer.plain import plain_class
from agent.pipeline.tokenizer.remote_code import TRUST_FLAG, refusal, shipped_code

__all__ = [
    "TRUST_FLAG",
    "TokenizerError",
    "add_trust_remote_code_flag",
    "import_failure",
    "load_tokenizer",
    "missing_package",
    "shipped_code",
]

_MISSING_PACKAGES = re.compile(r"not found in your environment: ([^.]+)\.")
"""transformers' own check of a code file's imports, run before it executes the file."""


class TokenizerError(Exception):
    """The tokenizer cannot be loaded; the message is one line that says why and what to do."""


def add_trust_remote_code_flag(parser: argparse.ArgumentParser) -> None:
    """`--trust-remote-code`, as every job that loads the target's tokenizer spells it."""
    parser.add_argument(
        TRUST_FLAG,
        action="store_true",
        dest="trust_remote_code",
        help="run the code a tokenizer folder ships (auto_map in tokenizer_config.json, as "
        "Kimi-K2's does); off by default: such a folder is refused without it",
    )


def load_tokenizer(path: str, *, trust_remote_code: bool) -> Any:
    """The tokenizer in the local folder `path`, never from a hub; TokenizerError if it cannot be."""
    folder = Path(path)
    if not folder.exists():
        raise TokenizerError(f"tokenizer path {path} does not exist; pass a local folder")
    code = shipped_code(folder)
    if code and not trust_remote_code:
        raise TokenizerError(refusal(path, code))
    transformers = _transformers(path)
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its warnings would repeat our one line in pieces
    loader = plain_class(folder, transformers) or transformers.AutoTokenizer
    try:
        return loader.from_pretrained(
            path, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except ImportError as exc:
        raise TokenizerError(import_failure(path, exc)) from None
    except Exception as exc:  # the folder's own code may raise anything: one line, no traceback
        if not trust_remote_code and "trust_remote_code" in str(exc):
            raise TokenizerError(refusal(path, code or ("custom code",))) from None
        raise TokenizerError(f"cannot load a tokenizer from {path}: {_first_line(exc)}") from None
    finally:
        transformers.logging.set_verbosity(verbosity)


def _transformers(path: str) -> Any:
    try:
        import transformers
        from transformers import dynamic_module_utils
    except ImportError as exc:
        raise TokenizerError(import_failure(path, exc)) from None
    # Only reached when code the user trusted loads something more without saying: answer "no"
    # at once instead of asking on a terminal and waiting.
    if hasattr(dynamic_module_utils, "TIME_OUT_REMOTE_CODE"):
        dynamic_module_utils.TIME_OUT_REMOTE_CODE = 0
    return transformers


def missing_package(exc: ImportError) -> str | None:
    """The package an import failure says is missing, if it says so."""
    found = _MISSING_PACKAGES.search(str(exc))
    if found:
        return found[1].strip()
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return exc.name.split(".")[0]
    return None


def import_failure(path: str, exc: ImportError) -> str:
    """The one line for a tokenizer whose loading or encoding failed on an import."""
    package = missing_package(exc)
    if package is None:
        return f"the tokenizer at {path} failed on an import: {_first_line(exc)}"
    return (
        f"the tokenizer at {path} needs the Python package {package}, which {sys.executable} "
        f"cannot import; install it in that environment (pip install {package})"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
