"""What the drafter check compares a checkpoint with, found in the configured jobs and the snapshot.

- the checkpoint: the drafter server's `--speculative-draft-model-path` (SGLang) or its
  `--speculative-config` model / `--spec-model` (vLLM); `{best_checkpoint}` there is the training
  watch's best (agent/probes/training/checkpoints.py);
- the server: SGLang or vLLM, by its command; the target: its `--model-path`, `serve MODEL` or
  `--model`, else the hidden-states job's target, else the tokenizer; its context length;
- the vocab job's `--out`; the export's longest record and max_length;
- the layers trained on: a SpecForge run config's `model.aux_hidden_state_layer_ids` or its draft
  config's `eagle_config` ids (SpecForge's numbering: + 1), speculators' `--target-layer-ids`;
- the layers captured: the SpecForge capture's `--draft-model-config` ids, else its default.

Blocking (it reads small config files): run it in a thread.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.jobs.spec import FROM_THE_SNAPSHOT
from agent.pipeline.drafter_check.registries import default_layers
from agent.pipeline.drafter_check.sources import read_target
from agent.probes.training.checkpoints import best_checkpoint_now
from agent.probes.training.command import flag_value, trainer_command
from agent.probes.training.config_files import UnreadableConfigError, read_mapping
from agent.probes.training.specforge_config import with_overrides
from agent.probes.values import is_small_number
from agent.protocol import JobSpec, PipelineConfig, Snapshot

VLLM_CONFIG_FLAGS = ("--speculative-config", "--speculative_config")
"""Both spellings of vLLM's speculative config flag its parser takes."""
SGLANG_DRAFT_FLAGS = ("--speculative-draft-model-path", "--speculative-draft-model")
SGLANG_MODEL_FLAGS = ("--model-path", "--model")
VLLM_LENGTH_FLAGS = ("--max-model-len",)
SGLANG_LENGTH_FLAGS = ("--context-length",)
CAPTURE_TARGET_FLAGS = ("--target-model-path", "--model", "--verifier-name-or-path")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""`org/name`: a model the server fetches from a hub, which the agent cannot read."""


@dataclass(frozen=True, slots=True)
class DrafterInputs:
    """The checkpoint to check and the check's other arguments; `why_not` when there is none."""

    checkpoint: str | None
    args: tuple[str, ...] = ()
    why_not: str = ""
    server_job: str = ""


def drafter_server(pipeline: PipelineConfig, job: str | None = None) -> tuple[str, JobSpec] | None:
    """The drafter server job `job`, else the first configured."""
    return next(
        ((n, s) for n, s in pipeline.jobs.items()
         if s.kind == "drafter_server" and job in (None, n)),
        None,
    )  # fmt: skip


def drafter_inputs(
    pipeline: PipelineConfig, snapshot: Snapshot, checkpoint: str | None = None,
    job: str | None = None,
) -> DrafterInputs:  # fmt: skip
    """The check's inputs for `checkpoint`, or for the one drafter server `job` would serve now.

    `why_not` without `checkpoint` or `args`: there is nothing the check can be run on.
    """
    found = drafter_server(pipeline, job)
    name, spec = found if found is not None else ("", JobSpec(("",)))
    server = server_kind(spec.argv)
    if checkpoint is None:
        checkpoint, why = _served_checkpoint(spec, server, snapshot)
        if checkpoint is None:
            return DrafterInputs(None, why_not=why, server_job=name)
    if HUB_ID.fullmatch(checkpoint) and not Path(checkpoint).exists():
        return DrafterInputs(None, why_not=f"{checkpoint} names a model on a hub, not a folder on "
                             "the box: the server downloads it", server_job=name)  # fmt: skip
    target = _target_folder(spec, server, pipeline)
    if target is None:
        return DrafterInputs(None, why_not="the target's folder is unknown: name it in the "
                             "drafter server's command or set [tokenizer] path", server_job=name)  # fmt: skip
    args = ["--target-config", str(target / "config.json")]
    args += ["--server", server] if server else []
    args += _served_length(spec, server)
    args += _vocab(pipeline)
    args += _export(snapshot)
    layers = _target_layers(target)
    args += _trained(pipeline)
    args += _captured(pipeline, layers)
    return DrafterInputs(checkpoint, tuple(args), server_job=name)


def server_kind(argv: tuple[str, ...]) -> str:
    """The server the command runs: sglang (the simulator speaks as SGLang), vllm, or empty.

    By the program or module it runs (`sglang.launch_server`, `vllm serve`, `vllm.entrypoints…`),
    looking into a `bash -c` string too; never by a folder's name (a venv called vllm-env).
    """
    for part in argv:
        words = shlex.split(part) if " " in part else [part]
        for word in words:
            base = os.path.basename(word)
            if word.startswith("sglang.") or base == "sglang" or word == "agent.simulator":
                return "sglang"
            if word.startswith("vllm.") or base == "vllm":
                return "vllm"
    return ""


def _served_checkpoint(spec: JobSpec, server: str, snapshot: Snapshot) -> tuple[str | None, str]:
    if not spec.argv[0]:
        return None, "no drafter_server job is configured"
    named = _draft_path(spec.argv, server)
    if named is None:
        return None, "the drafter server's command names no draft model the agent can find"
    if FROM_THE_SNAPSHOT in named:
        best = best_checkpoint_now(snapshot)
        if best is None:
            return None, "no training run's best evaluation has a checkpoint folder yet"
        return named.replace(FROM_THE_SNAPSHOT, best), ""
    return str(_absolute(named, spec)), ""


def _draft_path(argv: tuple[str, ...], server: str) -> str | None:
    if server == "vllm":
        raw = flag_value(argv, *VLLM_CONFIG_FLAGS)
        try:
            model = json.loads(raw).get("model") if raw else None
        except (ValueError, AttributeError):
            model = None
        return model if isinstance(model, str) else flag_value(argv, "--spec-model")
    named = flag_value(argv, *SGLANG_DRAFT_FLAGS)
    if named is None and any(FROM_THE_SNAPSHOT in part for part in argv):
        return FROM_THE_SNAPSHOT
    return named


def _target_folder(spec: JobSpec, server: str, pipeline: PipelineConfig) -> Path | None:
    model = flag_value(spec.argv, *SGLANG_MODEL_FLAGS)
    if server == "vllm" and "serve" in spec.argv[:-1]:
        after = spec.argv[spec.argv.index("serve") + 1]
        model = model if after.startswith("-") else after
    if model is None:
        capture = next((s for s in pipeline.jobs.values() if s.kind == "hidden_states"), None)
        model = flag_value(capture.argv, *CAPTURE_TARGET_FLAGS) if capture else None
    if model is None and pipeline.tokenizer:
        model = pipeline.tokenizer
    return _absolute(model, spec) if model and not model.startswith("-") else None


def _served_length(spec: JobSpec, server: str) -> list[str]:
    flags = VLLM_LENGTH_FLAGS if server == "vllm" else SGLANG_LENGTH_FLAGS
    value = flag_value(spec.argv, *flags)
    if value is None or not is_small_number(value):
        return []
    return ["--served-length", value, "--served-length-from", f"the drafter server's {flags[0]}"]


def _vocab(pipeline: PipelineConfig) -> list[str]:
    spec = next((s for s in pipeline.jobs.values() if s.kind == "vocab"), None)
    out = flag_value(spec.argv, "--out") if spec else None
    return ["--vocab-dir", str(_absolute(out, spec))] if out and spec else []


def _export(snapshot: Snapshot) -> list[str]:
    export = snapshot.export
    args = []
    if export is not None and export.longest_record:
        args += ["--longest-record", str(export.longest_record)]
    if export is not None and export.max_length:
        args += ["--trained-length", str(export.max_length)]
    return args


def _target_layers(target: Path) -> int | None:
    """The target's layer count, read as the check reads it (its text_config first)."""
    facts = read_target(target / "config.json")
    return None if isinstance(facts, str) else facts.layers


def _trained(pipeline: PipelineConfig) -> list[str]:
    spec = next((s for s in pipeline.jobs.values() if s.kind == "train"), None)
    if spec is None:
        return []
    command = trainer_command(spec.argv, Path(spec.cwd) if spec.cwd else None)
    if command is None:
        return []
    if command.trainer == "speculators":
        ids = _ints_after(command.args, "--target-layer-ids")
        return _layers("--trained-layers", ids, "the train job's --target-layer-ids")
    config = flag_value(command.args, "-c", "--config")
    path = command.path(config) if config else None
    try:
        raw = with_overrides(read_mapping(path), command.args) if path else {}
    except UnreadableConfigError:
        return []
    model: dict[str, Any] = raw["model"] if isinstance(raw.get("model"), dict) else {}
    ids = _ints(model.get("aux_hidden_state_layer_ids"))
    if ids is not None:
        return _layers("--trained-layers", _plus_one(ids),
                       f"{path.name if path else 'its config'} model.aux_hidden_state_layer_ids + 1")  # fmt: skip
    draft = model.get("draft_model_config")
    return _from_draft_config(
        "--trained-layers", command.path(draft) if isinstance(draft, str) else None
    )


def _captured(pipeline: PipelineConfig, layers: int | None) -> list[str]:
    spec = next((s for s in pipeline.jobs.values() if s.kind == "hidden_states"), None)
    if spec is None or not any("prepare_hidden_states" in part for part in spec.argv):
        return []
    draft = flag_value(spec.argv, "--draft-model-config")
    found = _from_draft_config("--captured-layers", _absolute(draft, spec) if draft else None)
    if found or draft or layers is None:
        return found
    return _layers(
        "--captured-layers", default_layers(layers),
        "the capture's default: SpecForge's [1, n/2-1, n-4] + 1",
    )  # fmt: skip


def _from_draft_config(flag: str, path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        eagle = read_mapping(path).get("eagle_config")
    except UnreadableConfigError:
        return []
    ids = _ints(eagle.get("eagle_aux_hidden_state_layer_ids")) if isinstance(eagle, dict) else None
    if ids is None:
        return []
    return _layers(flag, _plus_one(ids), f"{path.name} eagle_config ids + 1")


def _layers(flag: str, ids: tuple[int, ...] | None, source: str) -> list[str]:
    if not ids:
        return []
    return [flag, ",".join(map(str, ids)), f"{flag}-from", source]


def _ints(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, str):
        value = value.strip("[]").replace(" ", "").split(",")
    if not isinstance(value, list) or not 0 < len(value) <= 16:
        return None
    if not all(
        (isinstance(item, int) and not isinstance(item, bool))
        or (isinstance(item, str) and is_small_number(item.removeprefix("-")))
        for item in value
    ):
        return None
    return tuple(int(item) for item in value)


def _ints_after(args: tuple[str, ...], flag: str) -> tuple[int, ...] | None:
    if flag not in args:
        return None
    after = args[args.index(flag) + 1 :]
    values = []
    for part in after:
        if part.startswith("--") or not is_small_number(part.removeprefix("-")):
            break  # "²" is a digit to str.isdigit and an error to int()
        values.append(int(part))
    return tuple(values) or None


def _plus_one(ids: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i + 1 for i in ids)


def _absolute(text: str, spec: JobSpec | None) -> Path:
    path = Path(text).expanduser()
    if path.is_absolute() or spec is None or not spec.cwd:
        return path
    return Path(spec.cwd) / path
