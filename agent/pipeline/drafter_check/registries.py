"""What each server loads as an EAGLE-3 draft, and which target layers it captures for it.

Read from the servers' code as installed (sglang 0.5.23, vllm 0.34.0; docs/file-formats.md
"Drafter checkpoints" has the lines). Layer ids are compared as indices of Hugging Face's
`output_hidden_states` (0 the embeddings, i the output of decoder layer i - 1): SpecForge and SGLang
number a layer one lower than vLLM and speculators do for the same one.
"""

from __future__ import annotations

SGLANG_EAGLE3 = frozenset({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"})
"""srt/models/llama_eagle3.py EntryClass (~387), srt/models/kimi_k25_eagle3.py (~523)."""
VLLM_EAGLE3 = frozenset({
    "Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3", "Eagle3MiniMaxM2ForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM", "Eagle3Qwen3ForCausalLM",
    "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM",
})  # fmt: skip
"""model_executor/models/registry.py (~732-744); EAGLEConfig also renames X to Eagle3X
(transformers_utils/configs/eagle.py ~55-64), and a speculators folder is read by its
speculators_config (transformers_utils/config.py ~365-372)."""
VLLM_SPECULATORS_LAYERS = frozenset({"llama", "qwen3"})
"""transformer_layer_config.model_type values vLLM maps to an EAGLE-3 class (speculators/algos.py)."""
SERVERS = ("sglang", "vllm")


def loads(server: str, architecture: str, speculators_layer: str | None) -> bool:
    """True when `server` has a class for this draft."""
    if server == "sglang":
        return speculators_layer is None and architecture in SGLANG_EAGLE3
    if speculators_layer is not None:
        return speculators_layer in VLLM_SPECULATORS_LAYERS
    return architecture in VLLM_EAGLE3 or f"Eagle3{architecture}" in VLLM_EAGLE3


def default_layers(layers: int) -> tuple[int, ...]:
    """Both servers' and both trainers' default set, as hidden-state indices: [2, n/2, n - 3].

    SGLang llama.py ~936 (layers_to_capture, no +1), vLLM interfaces.py ~1764-1785, speculators
    models/utils.py ~99-139; SpecForge's [1, n/2 - 1, n - 4] (model_providers.py ~204) + 1.
    """
    return (2, layers // 2, layers - 3)


def from_specforge(ids: tuple[int, ...]) -> tuple[int, ...]:
    """SpecForge's and SGLang's ids as hidden-state indices: SGLang adds 1 (llama.py ~939-941)."""
    return tuple(i + 1 for i in ids)


def sglang_captures(nested: tuple[int, ...] | None, layers: int) -> tuple[int, ...]:
    """What SGLang captures: the draft's eagle_config ids + 1, else its default."""
    return from_specforge(nested) if nested is not None else default_layers(layers)


def vllm_captures(top: tuple[int, ...] | None, layers: int) -> tuple[int, ...]:
    """What vLLM captures: the draft's top-level ids as they are, else its default.

    It does not read eagle_config's ids (eagle3_utils.py ~103-140): a SpecForge export whose ids
    are only there gets vLLM's default layers.
    """
    return top if top is not None else default_layers(layers)


def never_captured(server: str, indices: tuple[int, ...], layers: int) -> list[int]:
    """Indices the server never fills.

    SGLang captures layer i's input for i < n only (llama.py ~486-494), so the last layer's output
    (index n) is never captured; vLLM takes 0..n.
    """
    top = layers - 1 if server == "sglang" else layers
    return [i for i in indices if not 0 <= i <= top]
