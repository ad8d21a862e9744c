"""A folder that holds a tokenizer and nothing else is loaded by its class, without torch.

transformers 5's AutoTokenizer reads a model's config.json through its model-config code, which
imports torch: 1.4 s of a CPU here, far more where torch brings CUDA's libraries. A folder with
no config.json, no `auto_map`, a tokenizer.json and a tokenizer_config.json naming the plain
class (`TokenizersBackend`, or `PreTrainedTokenizerFast`, its 4.x name and 5.x alias) is handed
by AutoTokenizer straight to that class: with no model type, none of its overrides applies
(transformers/models/auto/tokenization_auto.py, `AutoTokenizer.from_pretrained`). Loading the
class itself gives the same tokenizer without the import. Every other folder, and a class this
transformers does not have, goes through AutoTokenizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.pipeline.tokenizer.remote_code import read_json

PLAIN_CLASSES = frozenset({"TokenizersBackend", "PreTrainedTokenizerFast"})


def plain_class(folder: Path, transformers: Any) -> Any | None:
    """The class AutoTokenizer would load `folder` with when that is all it would do, else None."""
    if (folder / "config.json").exists() or not (folder / "tokenizer.json").is_file():
        return None
    config = read_json(folder / "tokenizer_config.json")
    name = config.get("tokenizer_class")
    if name not in PLAIN_CLASSES or "auto_map" in config:
        return None
    return getattr(transformers, name, None)
