"""Whether a tokenizer folder ships code of its own, and the one line that refuses to run it.

transformers reads the code a tokenizer needs from `auto_map` in tokenizer_config.json (a dict
with an "AutoTokenizer" pair of `module.Class` references, or the older bare pair); transformers
4.x also honours an "AutoTokenizer" entry in config.json's `auto_map`. A reference of the form
`org/repo--module.Class` points at code in another hub repository. Pure file reading: nothing
here imports or runs the code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRUST_FLAG = "--trust-remote-code"


def shipped_code(folder: Path) -> tuple[str, ...]:
    """The code files loading the tokenizer in `folder` runs; empty when its tokenizer is no code.

    The tokenizer's own first, then the config's: trusted, transformers loads config.json with
    the same trust (Kimi-K2's `configuration_deepseek.py`) before the tokenizer.
    """
    model_config = read_json(folder / "config.json")
    references = _references(
        read_json(folder / "tokenizer_config.json"), "AutoTokenizer", legacy_pair=True
    ) or _references(model_config, "AutoTokenizer")
    if not references:
        return ()
    references += _references(model_config, "AutoConfig")
    return tuple(dict.fromkeys(_code_file(folder, ref) for ref in references))


def refusal(path: str, code: tuple[str, ...]) -> str:
    """The one line that says the folder ships code and how to allow it."""
    return (
        f"the tokenizer at {path} ships its own code ({', '.join(code)}), which runs only with "
        f"{TRUST_FLAG}: read it, then pass {TRUST_FLAG} (in eagle-console.toml: "
        "trust_remote_code = true under [hosts.NAME.tokenizer], and {trust_remote_code} in "
        "the job's argv)"
    )


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; empty when it is absent, unreadable or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # unreadable or absent: transformers will say so when it loads the folder
    return value if isinstance(value, dict) else {}


def _references(config: dict[str, Any], auto_class: str, *, legacy_pair: bool = False) -> list[str]:
    auto_map = config.get("auto_map")
    if isinstance(auto_map, dict):
        entry = auto_map.get(auto_class)
    elif legacy_pair and isinstance(auto_map, list):
        entry = auto_map
    else:
        return []
    if isinstance(entry, str):
        entry = [entry]
    if not isinstance(entry, list):
        return []
    return [ref for ref in entry if isinstance(ref, str) and ref]


def _code_file(folder: Path, reference: str) -> str:
    repo, _, local = reference.rpartition("--")
    name = local.rsplit(".", 1)[0].replace(".", "/") + ".py"
    if repo:
        return f"{name} from the hub repository {repo}"
    return name if (folder / name).is_file() else f"{name} (missing from the folder)"
