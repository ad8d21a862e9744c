"""Drafter checkpoints written by the trainers' own save code, on the CPU, with tiny random models.

- SpecForge 0.2.0: its `LlamaForCausalLMEagle3` saved by its `CheckpointManager` as a training step
  (`{run_id}-step{N}/training_state.pt`), then turned into a servable folder by its own
  `specforge export --to sglang` (a child process, as a user runs it);
- speculators 0.9.0: its `Eagle3DraftModel.from_training_args` over a tiny verifier, saved by its
  `SingleGPUCheckpointer` (`{save_path}/{epoch}/`).

The target is an 8-layer Llama of 256 ids and width 64; the vocab job's files map 64 draft ids to
every third target id, as `agent.pipeline.vocab` writes them (d2t[i] = target id - i).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

LAYERS, VOCAB, HIDDEN, DRAFT = 8, 256, 64, 64
IMPORT_WARNINGS = (
    (UserWarning, "flash_attn is not found"),  # specforge/modeling/draft/llama3_eagle.py
    (DeprecationWarning, "`torch.jit.script_method` is deprecated"),  # torch's mkldnn, via compile
    (UserWarning, "--target-layer-ids is not explicitly set"),  # speculators: its default, wanted
)
"""What importing the trainers' modules warns, each at import and nothing to do with our files."""


@contextmanager
def trainers_importing() -> Iterator[None]:
    """The trainers' own import-time warnings silenced, and only those."""
    with warnings.catch_warnings():
        for category, message in IMPORT_WARNINGS:
            warnings.filterwarnings("ignore", message=re.escape(message), category=category)
        yield


@dataclass(frozen=True)
class Mapping:
    """The vocab job's mapping, as torch tensors and as its files' folder."""

    d2t: Any
    t2d: Any
    folder: Path


def tiny_target(folder: Path, **overrides: Any) -> Path:
    """A target's folder: config.json and random weights (speculators reads its verifier's)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=128, num_attention_heads=4,
        num_key_value_heads=2, num_hidden_layers=LAYERS, max_position_embeddings=4096,
        tie_word_embeddings=False, architectures=["LlamaForCausalLM"],
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(str(folder))
    if overrides:
        edit_json(folder / "config.json", overrides)
    return folder


def vocab_files(folder: Path, stride: int = 3, vocab: int = VOCAB, draft: int = DRAFT) -> Mapping:
    """The vocab job's outputs the check reads: its report and d2t.npy, t2d.npy."""
    import numpy as np
    import torch

    used = torch.arange(draft) * stride
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[used] = True
    d2t = used - torch.arange(draft)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "d2t.npy", d2t.numpy())
    np.save(folder / "t2d.npy", t2d.numpy())
    report = {"target_vocab_size": vocab, "draft_vocab_size": draft}
    (folder / "vocab_report.json").write_text(json.dumps(report))
    return Mapping(d2t, t2d, folder)


def specforge_step(root: Path, mapping: Mapping, eagle_ids: list[int] | None = None) -> Path:
    """A SpecForge training step folder, saved by its CheckpointManager."""
    import specforge.modeling.draft  # noqa: F401  (registers the draft classes)
    from specforge.modeling.draft.llama3_eagle import LlamaForCausalLMEagle3
    from specforge.training.checkpoint import CheckpointManager
    from transformers import LlamaConfig

    config = specforge_draft_config(eagle_ids)
    (root / "draft_config.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "draft_config.json").write_text(json.dumps(config))
    model = LlamaForCausalLMEagle3(LlamaConfig(**config))
    model.d2t.copy_(mapping.d2t)
    model.t2d.copy_(mapping.t2d)
    state = {k: v for k, v in model.state_dict().items() if "embed" not in k}  # a frozen embedding
    manager = CheckpointManager(str(root / "output"), "run")
    payload = {"draft_state_dict": state, "global_step": 4, "strategy": "eagle3", "run_id": "run",
               "world_size": 1}  # fmt: skip
    return Path(manager.save(payload, 4, rank_state={"optimizer": None, "rng": {}}))


def specforge_draft_config(eagle_ids: list[int] | None = None) -> dict[str, Any]:
    """The draft config a SpecForge run trains (its --draft-config / model.draft_model_config)."""
    config: dict[str, Any] = dict(
        architectures=["LlamaForCausalLMEagle3"], model_type="llama", vocab_size=VOCAB,
        draft_vocab_size=DRAFT, hidden_size=HIDDEN, intermediate_size=128, num_attention_heads=4,
        num_key_value_heads=2, num_hidden_layers=1, max_position_embeddings=4096,
        rms_norm_eps=1e-6, pad_token_id=0, tie_word_embeddings=False,
    )  # fmt: skip
    if eagle_ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": eagle_ids}
    return config


def specforge_export(step: Path, out: Path, draft_config: Path | None = None) -> Path:
    """`specforge export --to sglang` on a step folder, as a user runs it."""
    draft_config = draft_config or step.parent.parent / "draft_config.json"
    argv = [sys.executable, "-m", "specforge.cli", "export", "--to", "sglang", "--checkpoint",
            str(step), "--draft-config", str(draft_config), "--output-dir", str(out)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def speculators_checkpoint(
    root: Path,
    verifier: Path,
    mapping: Mapping,
    layer_ids: list[int] | None = None,
    draft: int = DRAFT,
) -> Path:
    """A speculators epoch folder, saved by its SingleGPUCheckpointer."""
    import torch
    from speculators.models.eagle3.core import Eagle3DraftModel
    from speculators.train.checkpointer import SingleGPUCheckpointer
    from speculators.train.cli import create_transformer_layer_config

    layer = create_transformer_layer_config(
        verifier_name_or_path=str(verifier), num_layers=1, draft_arch="llama", hidden_act="silu",
        sliding_window=0, full_attention_indices=[], trust_remote_code=False,
    )  # fmt: skip
    model = Eagle3DraftModel.from_training_args(
        verifier_config=layer, t2d=mapping.t2d, d2t=mapping.d2t, verifier_name_or_path=str(verifier),
        draft_vocab_size=draft, norm_before_residual=False, ttt_steps=3,
        target_layer_ids=layer_ids, draft_attn_impl="sdpa",
    )  # fmt: skip
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    SingleGPUCheckpointer(str(root)).save_checkpoint(model, optimizer, epoch=0)
    return root / "0"


def build_drafters(root: Path) -> dict[str, Path]:
    """One target, the vocab job's files, and a checkpoint of each trainer (and a step, and a
    SpecForge export whose ids are its own), each written by the trainer's code.

    In a child process: the trainers' imports (torch's compiler among them) leave pipes and
    threads behind that are no test's to clean up.
    """
    argv = [sys.executable, "-m", "tests.support.drafters", str(root)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {name: Path(path) for name, path in json.loads(done.stdout.splitlines()[-1]).items()}


def shared_drafters(tmp_path_factory: pytest.TempPathFactory, into: Path) -> dict[str, Path]:
    """`build_drafters`' folders, built once a session and copied into `into` for one module.

    Four modules read them, and each build is a child process that imports both trainers and
    runs `specforge export` twice. The workers of one pytest-xdist session share the parent of
    their temp folders: the first to take the lock builds there, the others wait and copy. The
    copy is the module's own to change; the paths the trainers wrote into its JSON files
    (speculators keeps its verifier's) are moved with it.
    """
    session = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session = session.parent
    source = session / "drafters-once"
    with (session / "drafters-once.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (source / "built.json").exists():
            built = build_drafters(source / "tree")
            found = {name: str(path.relative_to(source / "tree")) for name, path in built.items()}
            (source / "built.json").write_text(json.dumps(found))
    shutil.copytree(source / "tree", into)
    for written in into.rglob("*.json"):
        written.write_text(written.read_text().replace(str(source / "tree"), str(into)))
    found = json.loads((source / "built.json").read_text())
    return {name: into / path for name, path in found.items()}


def _build_here(root: Path) -> dict[str, Path]:
    with trainers_importing():
        target = tiny_target(root / "target")
        mapping = vocab_files(root / "vocab")
        step = specforge_step(root / "specforge", mapping)
        return {
            "target": target, "vocab": mapping.folder, "step": step,
            "specforge": specforge_export(step, root / "specforge-export"),
            "speculators": speculators_checkpoint(root / "speculators", target, mapping),
            "custom": specforge_export(
                specforge_step(root / "custom", mapping, eagle_ids=[0, 3, 5]),
                root / "custom-export",
            ),
        }  # fmt: skip


def edit_json(path: Path, changes: dict[str, Any], remove: tuple[str, ...] = ()) -> None:
    """Change keys of a JSON file in place (one field wrong at a time)."""
    data = json.loads(path.read_text())
    data.update(changes)
    for key in remove:
        data.pop(key, None)
    path.write_text(json.dumps(data))


def drop_tensors(folder: Path, *names: str) -> None:
    """Save the folder's model.safetensors again without `names` (a checkpoint saved without them)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = {k: v for k, v in load_file(str(path)).items() if k not in names}
    save_file(tensors, str(path), metadata={"format": "pt"})


def replace_tensor(folder: Path, name: str, value: Any) -> None:
    """Save the folder's model.safetensors again with `name` replaced."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(str(path))
    tensors[name] = torch.as_tensor(value)
    save_file(tensors, str(path), metadata={"format": "pt"})


if __name__ == "__main__":
    built = _build_here(Path(sys.argv[1]))
    print(json.dumps({name: str(path) for name, path in built.items()}))  # noqa: T201
