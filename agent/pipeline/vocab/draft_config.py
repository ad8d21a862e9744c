"""The SpecForge draft config for this vocabulary: what `specforge export` needs and no one wrote.

SpecForge 0.2.0 builds a draft config from the target when a run names none
(training/model_loading.py `_generate_draft_config`: the target's architecture fields in its
whitelist, ~47-68, then LlamaForCausalLMEagle3 with one layer and `draft_vocab_size` 32,000,
algorithms/eagle3/providers.py ~181-186), but keeps it inside its training state, while
`specforge export --checkpoint … --draft-config JSON` requires the file (cli.py ~199-205). Written
here the same way, with the vocab job's K instead of 32,000 and the auxiliary layers named in both
numberings: `eagle_config.eagle_aux_hidden_state_layer_ids` (SpecForge's and SGLang's, which adds
1) and the top-level `eagle_aux_hidden_state_layer_ids` (vLLM's and speculators', which read only
that key). Both are SpecForge's default layers, so a trainer, SGLang and vLLM capture the same
three; an export made with this file serves on either server.
"""

from __future__ import annotations

from typing import Any

DRAFT_CONFIG = "draft_config.json"
TARGET_FIELDS = (
    "vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
    "max_position_embeddings", "rms_norm_eps", "hidden_act", "initializer_range", "attention_bias",
    "attention_dropout", "head_dim", "rope_theta", "rope_scaling", "bos_token_id", "eos_token_id",
    "pad_token_id", "sliding_window", "use_sliding_window", "max_window_layers",
)  # fmt: skip
"""SpecForge's `_TARGET_ARCHITECTURE_FIELDS`, copied from the target (the tests compare)."""


def draft_config(target: dict[str, Any], vocab_size: int, draft: int) -> dict[str, Any] | None:
    """The draft config for `target`'s config.json, or None when it lacks hidden_size or layers."""
    nested = target.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else target
    layers = text.get("num_hidden_layers")
    if not isinstance(text.get("hidden_size"), int) or not isinstance(layers, int) or layers < 5:
        return None
    config = {field: text[field] for field in TARGET_FIELDS if text.get(field) is not None}
    specforge_ids = [1, layers // 2 - 1, layers - 4]
    return config | {
        "vocab_size": vocab_size,
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "tie_word_embeddings": False,
        "use_cache": True,
        "pad_token_id": config.get("pad_token_id", 0),
        "draft_vocab_size": draft,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": specforge_ids},
        "eagle_aux_hidden_state_layer_ids": [i + 1 for i in specforge_ids],
    }
