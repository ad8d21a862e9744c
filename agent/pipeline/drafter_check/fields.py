"""The comparisons, one field at a time: each says the two values, where each was read, and the fix.

`ok` is False for what makes the drafter useless or unloadable (it blocks serving), None for a note
worth a look (a dtype against a quantized target, a context served past the one trained).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from agent.pipeline.drafter_check.checkpoint import DraftFacts
from agent.pipeline.drafter_check.registries import (
    default_layers,
    loads,
    never_captured,
    sglang_captures,
    vllm_captures,
)
from agent.pipeline.drafter_check.sources import TargetFacts, VocabFacts
from agent.protocol import DrafterField as Field


@dataclass(frozen=True, slots=True)
class Layers:
    """Target layers as hidden-state indices, and where they were read."""

    indices: tuple[int, ...]
    source: str


@dataclass(frozen=True, slots=True)
class Expected:
    """What the rest of the pipeline says the drafter must be."""

    server: str = ""
    """sglang or vllm: what the drafter server job runs (empty: unknown)."""
    trained: Layers | None = None
    """The layers the train job's config names (its run config, its draft config)."""
    captured: Layers | None = None
    """The layers the hidden-states job captured (its draft config, or its default)."""
    longest_record: int | None = None
    trained_length: int | None = None
    """The export's max_length: the longest sequence trained on."""
    served_length: int | None = None
    served_length_source: str = ""


@dataclass(frozen=True, slots=True)
class Sources:
    """Everything read, beside the checkpoint."""

    target: TargetFacts | str
    vocab: VocabFacts | str | None
    expected: Expected


def check_fields(draft: DraftFacts, sources: Sources) -> list[Field]:
    """Every field; the first is whether a server can load the folder at all.

    A comparison that raises on a value nobody foresaw is a note on its field, never the end of
    the check: a crashed check would say nothing and hold nothing back.
    """
    loadable = _loadable(draft)
    if draft.unreadable:
        return [loadable]
    checks: list[Callable[[DraftFacts, Sources], list[Field]]] = (
        [_mapping, _hidden] if draft.layout == "specforge-training"  # no config.json to compare
        else [_architecture, _target_vocab, _draft_vocab, _mapping, _layers, _hidden, _positions,
              _dtype]
    )  # fmt: skip
    return [loadable, *(field for check in checks for field in _guarded(check, draft, sources))]


def _guarded(
    check: Callable[[DraftFacts, Sources], list[Field]], draft: DraftFacts, sources: Sources
) -> list[Field]:
    try:
        return check(draft, sources)
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError) as exc:
        name = check.__name__.strip("_").replace("_", " ")
        return [
            Field(name, None, f"could not be compared ({type(exc).__name__}: {str(exc)[:200]})")
        ]


def as_report(draft: DraftFacts, sources: Sources, fields: list[Field]) -> dict[str, Any]:
    """The JSON report: ok is False when any field failed."""
    return {
        "checkpoint": str(draft.folder), "layout": draft.layout, "server": sources.expected.server,
        "ok": all(f.ok is not False for f in fields), "fields": [asdict(f) for f in fields],
    }  # fmt: skip


def _loadable(draft: DraftFacts) -> Field:
    where = f"{draft.folder}"
    if draft.unreadable:
        return Field("loads", False, draft.unreadable, "a drafter folder: config.json and weights",
                     "point the drafter server at the folder the trainer (or its export) wrote")  # fmt: skip
    if draft.layout == "specforge-training":
        return Field(
            "loads", False, f"a SpecForge training step ({where}/training_state.pt)",
            "a servable folder: config.json and model.safetensors (specforge export/to_sglang.py)",
            f"specforge export --to sglang --checkpoint {where} --draft-config DRAFT_CONFIG.json "
            "--output-dir OUT, then serve OUT",
        )  # fmt: skip
    name = {"specforge": "a SpecForge export", "speculators": "a speculators checkpoint"}
    return Field("loads", True, f"{name.get(draft.layout, draft.layout)} ({where})")


def _architecture(draft: DraftFacts, sources: Sources) -> list[Field]:
    server = sources.expected.server
    found = (
        f"speculators eagle3 over {draft.speculators_layer!r} layers" if draft.speculators_layer
        is not None else f"{draft.architecture or 'none'} (config.json architectures)"
    )  # fmt: skip
    if not server:
        known = [
            s for s in ("sglang", "vllm") if loads(s, draft.architecture, draft.speculators_layer)
        ]
        return [Field("architecture", None if known else False, found,
                      "a class SGLang or vLLM registers (the drafter server's command is unknown)",
                      "" if known else "set architectures to LlamaForCausalLMEagle3")]  # fmt: skip
    if loads(server, draft.architecture, draft.speculators_layer):
        return [Field("architecture", True, found, f"a class {server} registers")]
    fix = (
        "SGLang 0.5 has no loader for speculators' format: serve it with vLLM"
        if server == "sglang" and draft.speculators_layer is not None
        else "export it for this server (specforge export --to sglang), or serve it with the other"
    )
    return [Field("architecture", False, found, f"a class {server} registers as an EAGLE-3 draft "
                  "(its model registry)", fix)]  # fmt: skip


def _target_vocab(draft: DraftFacts, sources: Sources) -> list[Field]:
    target = sources.target
    if isinstance(target, str):
        return [Field("target vocab size", None, _said(draft.vocab_size, "vocab_size"), target)]
    sizes = {size for size in (target.vocab_size, target.padded_vocab_size) if size is not None}
    where = " or ".join(str(size) for size in sorted(sizes))
    where += (
        f" ({target.path} vocab_size{', padded_vocab_size' if target.padded_vocab_size else ''})"
    )
    found = _said(draft.vocab_size, _sizes_key(draft, "vocab_size"))
    if draft.vocab_size not in sizes:
        return [Field("target vocab size", False, found, where,
                      "retrain with the target's config.json vocab_size (speculators PR #188: the "
                      "verifier's, not len(tokenizer))")]  # fmt: skip
    return [Field("target vocab size", True, found, where)]


def _draft_vocab(draft: DraftFacts, sources: Sources) -> list[Field]:
    found = _said(draft.draft_vocab_size, "config.json draft_vocab_size")
    rows = draft.shapes.get("lm_head.weight", (None,))[0]
    if draft.draft_vocab_size is not None and rows is not None and rows != draft.draft_vocab_size:
        return [Field("draft vocab size", False, found, f"{rows} (lm_head.weight rows)",
                      "the config and the weights disagree: export the checkpoint again")]  # fmt: skip
    vocab = sources.vocab
    if vocab is None or isinstance(vocab, str):
        return [Field("draft vocab size", None, found, vocab or "no vocab job's files to compare")]
    where = f"{vocab.draft_vocab_size} ({vocab.folder}/vocab_report.json)"
    if draft.draft_vocab_size != vocab.draft_vocab_size:
        return [Field("draft vocab size", False, found, where,
                      "train with the vocab job's K (its --draft-vocab-size), or run the vocab job "
                      "with this K")]  # fmt: skip
    return [Field("draft vocab size", True, found, where)]


def _mapping(draft: DraftFacts, sources: Sources) -> list[Field]:
    """d2t and t2d: present, and the vocab job's (SpecForge PR #534: a regenerated mapping)."""
    d2t, t2d = draft.tensors.get("d2t"), draft.tensors.get("t2d")
    rows = draft.shapes.get("lm_head.weight", (None,))[0]
    draft_size = draft.draft_vocab_size or rows
    pruned = draft_size is not None and draft_size != draft.vocab_size
    odd = [
        f"{n} has shape {draft.shapes[n]}"
        for n in ("d2t", "t2d")
        if n in draft.shapes and n not in draft.tensors
    ]
    if odd:
        return [Field("d2t/t2d", False, "; ".join(odd), "d2t int64[K] and t2d bool[V]",
                      "save the checkpoint with the vocab job's mapping")]  # fmt: skip
    if d2t is None or t2d is None:
        missing = " and ".join(n for n, t in (("d2t", d2t), ("t2d", t2d)) if t is None)
        if not pruned and d2t is None and t2d is None:
            return [Field("d2t/t2d", True, "none: the draft vocabulary is the target's")]
        return [Field(
            "d2t/t2d", False, f"no {missing} in the weights", "d2t int64[K] and t2d bool[V]",
            "both servers then map draft id i to target id i and accept ~1 token (NVIDIA-NeMo/"
            "Automodel PR #2447): save the checkpoint with the vocab mapping (specforge export "
            "--vocab-mapping, speculators --d2t-path/--t2d-path)",
        )]  # fmt: skip
    vocab = sources.vocab
    if vocab is None or isinstance(vocab, str):
        return [Field("d2t/t2d", None, f"d2t[{len(d2t)}], t2d[{len(t2d)}]",
                      vocab or "no vocab job's files to compare")]  # fmt: skip
    differs = _first_difference(d2t, vocab.d2t, "d2t") or _first_difference(t2d, vocab.t2d, "t2d")
    if differs:
        return [Field("d2t/t2d", False, differs, f"the vocab job's {vocab.folder}/d2t.npy, t2d.npy",
                      "the trainer used another mapping (a regenerated one misaligns every "
                      "lm_head slot, SpecForge PR #534): train with the vocab job's files")]  # fmt: skip
    return [Field("d2t/t2d", True, f"d2t[{len(d2t)}], t2d[{len(t2d)}]",
                  f"equal to {vocab.folder}/d2t.npy, t2d.npy")]  # fmt: skip


def _first_difference(found: Any, wanted: Any, name: str) -> str:
    import numpy as np

    if found.shape != wanted.shape or found.ndim != 1:
        return f"{name} has shape {tuple(found.shape)}, the vocab job's {tuple(wanted.shape)}"
    unequal = np.flatnonzero(found.astype(np.int64) != wanted.astype(np.int64))
    if not len(unequal):
        return ""
    at = int(unequal[0])
    return (f"{name} differs at {len(unequal):,} places, first [{at}]: {int(found[at])} here, "
            f"{int(wanted[at])} in the vocab job's")  # fmt: skip


def _layers(draft: DraftFacts, sources: Sources) -> list[Field]:
    """The layers the server will capture = those trained on = those the hidden states came from."""
    target, expected = sources.target, sources.expected
    if isinstance(target, str) or target.layers is None:
        return [
            Field("aux layers", None, _ids_text(draft), "the target's num_hidden_layers is unknown")
        ]
    n = target.layers
    negative = [i for ids in (draft.nested_ids, draft.top_ids) if ids for i in ids if i < 0]
    if negative:
        return [Field("aux layers (range)", False, f"layer ids {negative} in config.json",
                      "ids from 0", "name the layers the drafter was trained on")]  # fmt: skip
    trained = expected.trained or _declared(draft, n)
    fields = []
    if expected.server:
        served = Layers(*_served(draft, expected.server, n))
        fields.append(_same_layers("aux layers (served)", served, trained, draft, expected.server))
        lost = never_captured(expected.server, served.indices, n)
        if lost:
            fields.append(Field("aux layers (range)", False, f"hidden states {lost}", f"0-{n - 1} "
                                f"for {expected.server} on a {n}-layer target",
                                "the last layer's output is never captured: pick an earlier "
                                "layer (vllm PR #46788)"))  # fmt: skip
    if expected.captured is not None:
        fields.append(_same_layers("aux layers (captured)", expected.captured, trained, draft, ""))
    return fields


def _declared(draft: DraftFacts, n: int) -> Layers:
    """What the checkpoint says it was trained on, in its trainer's numbering."""
    if draft.layout == "speculators":
        if draft.top_ids is not None:
            return Layers(draft.top_ids, "config.json eagle_aux_hidden_state_layer_ids")
        return Layers(default_layers(n), "speculators' default [2, n/2, n-3]")
    if draft.nested_ids is not None:
        return Layers(tuple(i + 1 for i in draft.nested_ids),
                      "config.json eagle_config.eagle_aux_hidden_state_layer_ids + 1")  # fmt: skip
    return Layers(default_layers(n), "SpecForge's default [1, n/2-1, n-4] + 1")


def _served(draft: DraftFacts, server: str, n: int) -> tuple[tuple[int, ...], str]:
    if server == "sglang":
        source = ("eagle_config ids + 1 (llama.py ~939)" if draft.nested_ids is not None
                  else "SGLang's default, no eagle_config ids")  # fmt: skip
        return sglang_captures(draft.nested_ids, n), source
    source = ("top-level eagle_aux_hidden_state_layer_ids" if draft.top_ids is not None
              else "vLLM's default: it reads no eagle_config ids (eagle3_utils.py ~103-140)")  # fmt: skip
    return vllm_captures(draft.top_ids, n), source


def _same_layers(name: str, seen: Layers, trained: Layers, draft: DraftFacts, server: str) -> Field:
    found = f"hidden states {list(seen.indices)} ({seen.source})"
    wanted = f"hidden states {list(trained.indices)} ({trained.source})"
    if seen.indices == trained.indices:
        return Field(name, True, found, wanted)
    specforge = [i - 1 for i in trained.indices]
    fix = {
        "sglang": f'set "eagle_config": {{"eagle_aux_hidden_state_layer_ids": {specforge}}} in '
        f"{draft.folder}/config.json (SpecForge's numbering: SGLang adds 1)",
        "vllm": f'set "eagle_aux_hidden_state_layer_ids": {list(trained.indices)} at the top of '
        f"{draft.folder}/config.json (vLLM's numbering; it ignores eagle_config's)",
    }.get(server, "capture the hidden states from the layers the drafter trains on")
    return Field(name, False, found, wanted, fix + " (an off-by-one costs accept length: sglang "
                 "PR #25454; a wrong set gave 1.00, tokenspeed PR #526)")  # fmt: skip


def _ids_text(draft: DraftFacts) -> str:
    return f"eagle_config {draft.nested_ids}, top-level {draft.top_ids}"


def _hidden(draft: DraftFacts, sources: Sources) -> list[Field]:
    """Fc takes three captured layers of the target's width (llama3_eagle.py ~1674-1678)."""
    target = sources.target
    fc = draft.shapes.get("fc.weight")
    if isinstance(target, str) or target.hidden_size is None or fc is None or len(fc) != 2:
        return [Field("hidden size", None, f"fc.weight {fc}", "the target's hidden_size is unknown"
                      if not isinstance(target, str) else target)]  # fmt: skip
    wanted = f"{3 * target.hidden_size} = 3 × {target.hidden_size} ({target.path} hidden_size)"
    found = f"{fc[1]} (fc.weight input width)"
    if fc[1] != 3 * target.hidden_size:
        return [Field("hidden size", False, found, wanted,
                      "this drafter was trained for another target: train it on this one")]  # fmt: skip
    return [Field("hidden size", True, found, wanted)]


def _positions(draft: DraftFacts, sources: Sources) -> list[Field]:
    expected = sources.expected
    found = _said(draft.max_positions, _sizes_key(draft, "max_position_embeddings"))
    fields = []
    longest = expected.longest_record
    if longest is not None and draft.max_positions is not None and draft.max_positions < longest:
        fields.append(Field("max positions", False, found, f"≥ {longest:,} (the export's longest "
                            "record)", "set max_position_embeddings to the target's and export "
                            "again"))  # fmt: skip
    elif longest is not None:
        fields.append(
            Field("max positions", True, found, f"≥ {longest:,} (the export's longest record)")
        )
    trained, served = expected.trained_length, expected.served_length
    if trained is not None and served is not None and served > trained:
        fields.append(Field(
            "context", None, f"trained on sequences up to {trained:,} (the export's max_length)",
            f"served up to {served:,} ({expected.served_length_source})",
            "accept length falls past the trained length (2.30 at 2k, 1.09 at 16k: speculators "
            "PR #684): train at the length you serve, or cap the server's context",
        ))  # fmt: skip
    return fields


def _dtype(draft: DraftFacts, sources: Sources) -> list[Field]:
    target = sources.target
    if isinstance(target, str) or not target.quantization:
        return []
    return [
        Field(
            "dtype",
            None,
            f"{draft.dtype or 'unknown'} (config.json dtype)",
            f"a {target.quantization} target ({target.path} quantization_config)",
            "a bf16 drafter on an fp8 target gave accept rate 0 (vllm #9534): measure it with B",
        )
    ]


def _said(value: int | None, key: str) -> str:
    return f"{value if value is not None else 'none'} ({key})"


def _sizes_key(draft: DraftFacts, key: str) -> str:
    prefix = "transformer_layer_config." if draft.layout == "speculators" else ""
    return f"config.json {prefix}{key}"
