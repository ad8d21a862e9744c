"""Our files through the trainers' own loaders: SpecForge 0.2.0, speculators 0.9.0, SGLang 0.5.23.

The target has a padded vocabulary (config.json vocab_size 64 beside a 58-id tokenizer), so a
mapping sized by the tokenizer is refused by both trainers, as the last test shows with their
own code; ours loads, token by token equal to the ids a Counter picks. SGLang is not installed
here (it needs a GPU build): its token-map reading is the two lines of `load_token_map`
(`srt/speculative/spec_utils.py` ~818-819) and its EAGLE-3 hot ids the line of
`LlamaForCausalLMEagle3.load_weights` (`srt/models/llama_eagle3.py` ~352), copied below.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from tests.support.drafters import trainers_importing
from tests.support.export_data import build_think_tokenizer
from tests.support.simulator_process import agent_env

V, TOKENIZER_IDS, K = 64, 58, 8
ROWS = [[3, 3, 3, 9, 9, 20, 57, 57], [9, 9, 1, 2, 5, 5, 40, 41, 42], [57, 11, 12, 13, 3]]
pytestmark = pytest.mark.slow  # the trainers' imports alone take seconds


@pytest.fixture(scope="module")
def trainers() -> SimpleNamespace:
    with trainers_importing():
        import speculators.train.cli as speculators_cli
        from specforge.modeling.draft.llama3_eagle import (
            LlamaForCausalLMEagle3,
        )
        from speculators.model import DraftVocabMixin
    return SimpleNamespace(
        specforge_draft=LlamaForCausalLMEagle3, speculators_mixin=DraftVocabMixin,
        speculators_cli=speculators_cli,
    )  # fmt: skip


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The vocab job's files, V from the padded config.json beside the tokenizer."""
    base = tmp_path_factory.mktemp("vocab")
    assert len(build_think_tokenizer(base / "model")) == TOKENIZER_IDS
    (base / "model" / "config.json").write_text(json.dumps({"vocab_size": V}))
    (base / "datasets" / "A").mkdir(parents=True)
    lines = [json.dumps({"id": f"r{i}", "output_ids": ids}) for i, ids in enumerate(ROWS)]
    (base / "datasets" / "A" / "raw_responses.jsonl").write_text("\n".join(lines) + "\n")
    command = [sys.executable, "-m", "agent.pipeline.vocab", "--datasets-root",
               str(base / "datasets"), "--tokenizer", str(base / "model"),
               "--draft-vocab-size", str(K), "--out", str(base / "out")]  # fmt: skip
    done = subprocess.run(command, env=agent_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return base / "out"


def expected_ids() -> list[int]:
    """The K most frequent ids, ties to the lower id, ascending: worked out with a Counter."""
    counts = Counter(token for row in ROWS for token in row)
    return sorted(sorted(counts, key=lambda token: (-counts[token], token))[:K])


def expected_t2d() -> list[bool]:
    return [token in expected_ids() for token in range(V)]


def specforge_draft(trainers: SimpleNamespace) -> Any:
    """SpecForge's Llama EAGLE-3 draft for this target: buffers t2d bool[V], d2t int64[K]."""
    from transformers import LlamaConfig

    config = LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    config.draft_vocab_size = K
    return trainers.specforge_draft(config)


def speculators_draft(trainers: SimpleNamespace) -> Any:
    """speculators' vocab buffers and checks, set up by its own `_init_vocab` for this target."""
    draft = trainers.speculators_mixin()
    layer = SimpleNamespace(vocab_size=V, hidden_size=4, pad_token_id=None)
    draft._init_vocab(SimpleNamespace(draft_vocab_size=K, transformer_layer_config=layer))
    return draft


def test_specforge_loads_vocab_mapping_pt_into_a_draft_of_the_models_size(
    out: Path, trainers: SimpleNamespace
) -> None:
    draft = specforge_draft(trainers)

    draft.load_vocab_mapping(str(out / "vocab_mapping.pt"))

    assert draft.t2d.tolist() == expected_t2d()
    assert (draft.d2t + torch.arange(K)).tolist() == expected_ids()  # its `pred + d2t[pred]`


@pytest.mark.parametrize("names", [("d2t.npy", "t2d.npy"), (f"d2t-{K}.npy", f"t2d-{K}.npy")])
def test_speculators_loads_the_npy_files_by_path(
    out: Path, trainers: SimpleNamespace, names: tuple[str, str]
) -> None:
    d2t, t2d, size = trainers.speculators_cli._load_mappings(out / names[0], out / names[1], K)
    draft = speculators_draft(trainers)

    draft.load_vocab_mappings(t2d, d2t)

    assert size == K
    assert draft.t2d.tolist() == expected_t2d()
    assert (draft.d2t + torch.arange(K)).tolist() == expected_ids()


def test_speculators_finds_the_files_by_its_own_names_for_k(
    out: Path, trainers: SimpleNamespace
) -> None:
    """Its --data-path lookup: were d2t-K.npy/t2d-K.npy missing it would try to regenerate them
    from token_freq.pt, which needs the verifier, and raise."""
    args = argparse.Namespace(d2t_path=None, t2d_path=None, data_path=str(out), draft_vocab_size=K,
                              token_freq_path=None, verifier_name_or_path=None,
                              trust_remote_code=False)  # fmt: skip

    d2t, t2d, size = trainers.speculators_cli.parse_vocab_mappings(args)

    assert (size, t2d.tolist()) == (K, expected_t2d())
    assert d2t.tolist() == np.load(out / "d2t.npy").tolist()


def sglang_load_token_map(path: Path) -> Any:
    """SGLang 0.5.23 `load_token_map` for a local file: its two last lines."""
    hot_token_id = torch.load(path, weights_only=True)
    return torch.tensor(hot_token_id, dtype=torch.int64)


def test_sglang_reads_the_token_map_and_the_eagle3_hot_ids_as_the_same_k_ids(out: Path) -> None:
    hot_from_token_map = sglang_load_token_map(out / f"speculative_token_map-{K}.pt")
    loaded_weight = torch.load(out / "vocab_mapping.pt", weights_only=True)["d2t"]
    hot_from_d2t = loaded_weight + torch.arange(loaded_weight.shape[0])  # llama_eagle3.py

    assert hot_from_token_map.tolist() == expected_ids()
    assert hot_from_d2t.tolist() == expected_ids()
    assert int(hot_from_token_map.max()) < V  # it indexes the target's lm_head rows


def test_both_trainers_refuse_a_mapping_sized_by_the_tokenizer(
    out: Path, trainers: SimpleNamespace, tmp_path: Path
) -> None:
    """Why V must be the config's: the same mapping cut to len(tokenizer) is refused by each."""
    mapping = torch.load(out / "vocab_mapping.pt", weights_only=True)
    short = {"d2t": mapping["d2t"], "t2d": mapping["t2d"][:TOKENIZER_IDS].clone()}
    torch.save(short, tmp_path / "short.pt")

    with pytest.raises(RuntimeError, match=r"size of tensor a \(64\) must match .* \(58\)"):
        specforge_draft(trainers).load_vocab_mapping(str(tmp_path / "short.pt"))
    with pytest.raises(ValueError, match=r"t2d.shape\[0\] \(58\) must match verifier_vocab_size"):
        speculators_draft(trainers).load_vocab_mappings(short["t2d"], short["d2t"])


def test_the_trainers_modules_are_the_pinned_ones(trainers: SimpleNamespace) -> None:
    from importlib.metadata import version

    assert (version("specforge"), version("speculators")) == ("0.2.0", "0.9.0")
    assert isinstance(trainers.speculators_cli, ModuleType)
