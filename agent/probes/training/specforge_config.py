"""The total SpecForge 0.2.0 would put on its step bar, from the run's config.

Read from `specforge train --config FILE [section.field=value ...]` (cli.py ~169-198;
config/schema.py `Config.from_file`, `apply_overrides`). Its bar's total is `training.max_steps`, else `training.total_steps`, else the data's: offline,
one sample per `.ckpt`/`.ckpt.gz` under `data.hidden_states_path`, sharded over the data-parallel
ranks like DistributedSampler, then `(per_rank // batch_size * num_epochs) // accumulation_steps`
(training/controller.py ~572-592, training/trainer.py ~225-236, training/schedule.py
`resolve_total_steps`, launch.py ~219-239); online, the prompts file's records times the epochs
over `dp × batch_size × accumulation_steps` (`resolve_online_total_steps`), an upper bound since
prompts too long or without loss tokens are dropped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agent.probes.training.command import ConfiguredRun, TrainerCommand, flag_value
from agent.probes.training.config_files import (
    UnreadableConfigError,
    count_files,
    count_lines,
    read_mapping,
    text_value,
    whole,
)
from agent.probes.values import is_small_number

FEATURE_SUFFIXES = (".ckpt", ".ckpt.gz")
"""runtime/data_plane/offline_reader.py `_FEATURE_SUFFIXES`."""


def specforge_run(command: TrainerCommand) -> ConfiguredRun:
    """The run's total steps from its config and overrides, or why there is none."""
    config = flag_value(command.args, "-c", "--config")
    if config is None:
        return ConfiguredRun(note="its command line names no --config")
    path = command.path(config)
    if path is None:
        return ConfiguredRun(note=f"{config} is relative and the job's folder is unknown")
    try:
        raw = with_overrides(read_mapping(path), command.args)
        return _total(_Settings(raw, path.name), command)
    except UnreadableConfigError as exc:
        return ConfiguredRun(note=str(exc))


def with_overrides(raw: dict[str, Any], args: tuple[str, ...]) -> dict[str, Any]:
    """The dotted `training.max_steps=500` arguments laid over the file, as SpecForge does."""
    for arg in args:
        dotted, sep, value = arg.partition("=")
        if arg.startswith("-") or not sep or "." not in dotted:
            continue
        *sections, leaf = dotted.split(".")
        node = raw
        for name in sections:
            node = node.setdefault(name, {}) if isinstance(node.get(name, {}), dict) else {}
        node[leaf] = value
    return raw


def _section(raw: dict[str, Any], *names: str) -> dict[str, Any]:
    node: Any = raw
    for name in names:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


class _Settings:
    """The config's values by dotted name, each checked as a positive whole number."""

    def __init__(self, raw: dict[str, Any], source: str) -> None:
        self.raw, self.source = raw, source

    def value(self, dotted: str) -> Any:
        *sections, key = dotted.split(".")
        return _section(self.raw, *sections).get(key)

    def text(self, dotted: str) -> str | None:
        value = self.value(dotted)
        return None if value is None else text_value(value, dotted, self.source)

    def count(self, dotted: str, default: int | None) -> int | None:
        value = self.value(dotted)
        return default if value is None else whole(value, dotted, self.source)


def _total(settings: _Settings, command: TrainerCommand) -> ConfiguredRun:
    epochs = settings.count("training.num_epochs", 1) or 1
    for key in ("training.max_steps", "training.total_steps"):
        if (steps := settings.count(key, None)) is not None:
            return ConfiguredRun(steps, f"{key} in {settings.source}", epochs)
    return _from_data(settings, epochs, command)


def _from_data(settings: _Settings, epochs: int, command: TrainerCommand) -> ConfiguredRun:
    batch = settings.count("training.batch_size", 1) or 1
    accumulation = settings.count("training.accumulation_steps", 1) or 1
    sequence_ranks = (settings.count("training.sp_ulysses_size", 1) or 1) * (
        settings.count("training.sp_ring_size", 1) or 1
    )
    if settings.value("training.attention_backend") == "usp":
        accumulation *= sequence_ranks  # assembly.py ~541-543: one unit is a whole sequence
    shape = (epochs, batch, accumulation, _world(settings, command) // sequence_ranks or 1)
    if folder := settings.text("data.hidden_states_path"):
        return _offline(command, folder, shape)
    prompts = settings.text("data.prompts_path") or settings.text("data.train_data_path")
    if not prompts:
        return ConfiguredRun(note="its config names no training data", epochs=epochs)
    no_cap = settings.value("data.max_prompts") in (None, 0, "0")  # prompt_builder.py ~71
    cap = None if no_cap else settings.count("data.max_prompts", None)
    return _online(command, str(prompts), cap, shape)


def _world(settings: _Settings, command: TrainerCommand) -> int:
    """Trainer processes: torchrun's, when it launches SpecForge, else deployment.trainer's."""
    per_node = flag_value(command.launcher, "--nproc-per-node", "--nproc_per_node")
    nodes = flag_value(command.launcher, "--nnodes")
    if per_node is not None and is_small_number(per_node):
        count = int(per_node) * (int(nodes) if nodes and is_small_number(nodes) else 1)
        return whole(count, "torchrun's processes")
    nodes_n = settings.count("deployment.trainer.nnodes", 1) or 1
    per_node_n = settings.count("deployment.trainer.nproc_per_node", 1) or 1
    return whole(nodes_n * per_node_n, "deployment.trainer's processes")


def _offline(
    command: TrainerCommand, folder: str, shape: tuple[int, int, int, int]
) -> ConfiguredRun:
    epochs, batch, accumulation, ranks = shape
    path = _data_path(command, folder)
    files = count_files(path, FEATURE_SUFFIXES)
    per_rank = math.ceil(files / ranks)
    total = (per_rank // batch * epochs) // accumulation
    source = f"{files:,} feature files in {path}"
    return _data_run(total, epochs, f"{source}, batch {batch} × {accumulation} on {ranks} rank(s)")


def _online(
    command: TrainerCommand, file: str, cap: int | None, shape: tuple[int, int, int, int]
) -> ConfiguredRun:
    epochs, batch, accumulation, ranks = shape
    path = _data_path(command, file)
    prompts = count_lines(path) if cap is None else min(cap, count_lines(path))
    total = prompts * epochs // (ranks * batch * accumulation)
    source = f"{prompts:,} prompts in {path}"
    described = f"{source}, batch {batch} × {accumulation} on {ranks} rank(s)"
    return _data_run(total, epochs, described, bound="at most ")


def _data_path(command: TrainerCommand, text: str) -> Path:
    path = command.path(text)
    if path is None:
        raise UnreadableConfigError(f"{text} is relative and the job's folder is unknown")
    return path


def _data_run(total: int, epochs: int, source: str, bound: str = "") -> ConfiguredRun:
    """`bound` is "at most " where the trainer may drop some of the data first."""
    if total < 1:
        return ConfiguredRun(note=f"the data makes no step ({source})", epochs=epochs)
    per_epoch = total // epochs if total % epochs == 0 else None
    steps = f"{epochs} epoch(s) × {per_epoch:,} steps" if per_epoch else f"{total:,} steps"
    return ConfiguredRun(total, f"{bound}{steps}: {source}", epochs, per_epoch)
