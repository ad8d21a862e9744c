"""The stand-in trainer's drafter: a folder shaped as `specforge export --to sglang` writes one.

So the demo's drafter server names a real folder and the drafter check has something to read:
config.json with SpecForge's fields (architectures LlamaForCausalLMEagle3, vocab_size,
draft_vocab_size, hidden_size, max_position_embeddings) and model.safetensors with the vocab
job's d2t and t2d and zero weights of the right shapes (fc [H, 3H], lm_head [K, H]). Written in a
folder beside and renamed into place, so the check never reads half of one. Without the vocab
job's files it saves no mapping, as a run without --vocab-mapping would: the check then says so.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

DEFAULT_POSITIONS = 32768


def write_drafter(out: Path, target_config: Path, vocab_dir: Path | None) -> None:
    """Write the drafter folder `out` for the target and the vocab job's mapping."""
    import numpy as np
    from safetensors.numpy import save_file

    target = json.loads(target_config.read_text())
    hidden, vocab = int(target["hidden_size"]), int(target["vocab_size"])
    tensors: dict[str, Any] = {}
    draft = vocab
    if vocab_dir is not None and (vocab_dir / "d2t.npy").is_file():
        tensors["d2t"] = np.load(vocab_dir / "d2t.npy", allow_pickle=False)
        tensors["t2d"] = np.load(vocab_dir / "t2d.npy", allow_pickle=False)
        draft = len(tensors["d2t"])
    tensors["fc.weight"] = np.zeros((hidden, 3 * hidden), dtype=np.float16)
    tensors["lm_head.weight"] = np.zeros((draft, hidden), dtype=np.float16)
    tensors["norm.weight"] = np.ones(hidden, dtype=np.float16)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "vocab_size": vocab,
        "draft_vocab_size": draft, "hidden_size": hidden, "num_hidden_layers": 1,
        "max_position_embeddings": target.get("max_position_embeddings", DEFAULT_POSITIONS),
        "dtype": "bfloat16",
    }  # fmt: skip
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    (partial / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(tensors, str(partial / "model.safetensors"), metadata={"format": "pt"})
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
