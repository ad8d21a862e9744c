"""The checkpoint folder the trainer wrote for the best evaluation, by its own naming.

The best evaluation (by acceptance, log.py) is worth serving only if its weights were
kept; the last checkpoint can be 5-8 % worse (deepseek-ai/DeepSpec #84). Each trainer names its
folders its own way, read from its code as installed:

- SpecForge 0.2.0: `{output_dir}/{run_id}-step{N}/` (training/checkpoint.py
  `CheckpointManager.checkpoint_dir`, line 55), `output_dir` and `run_id` at the top of the run's
  config (config/schema.py 690-691: "./output" and "specforge-run" when unset; a relative
  output_dir is the job's folder's). It saves at its save interval and at each best evaluation.
- speculators 0.9.0: `{--save-path}/{epoch}/` with the epoch counted from 0
  (train/checkpointer.py `model_path`; train/trainer.py 269: the first epoch is
  `previous_epoch + 1` from -1), saved at epoch ends (its `--checkpoint-freq`).

A folder that does not exist is said with the steps or epochs that do, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agent.probes.training.command import TrainerCommand, flag_value
from agent.probes.training.config_files import UnreadableConfigError, read_mapping, text_value
from agent.probes.training.specforge_config import with_overrides
from agent.protocol import Snapshot

SPECFORGE_RUN_ID = "specforge-run"
SPECFORGE_OUTPUT_DIR = "./output"
SHOWN_SAVED = 5
"""Saved steps or epochs named when the best's folder is missing (the nearest ones)."""


@dataclass(frozen=True, slots=True)
class CheckpointLayout:
    """Where one run's trainer writes its checkpoint folders."""

    trainer: str
    folder: Path
    run_id: str = ""

    def best(self, step: int | None, epoch: int | None) -> tuple[str | None, str]:
        """The folder of the evaluation at `step` (in `epoch`), or None and why (blocking)."""
        if step is None:
            return None, ""
        name, unit, wanted = self._name(step, epoch)
        if name is None:
            return None, "the epoch of the best evaluation is not known"
        path = self.folder / name
        if path.is_dir():
            return str(path), ""
        saved = self._saved()
        if not saved:
            return None, f"no checkpoint under {self.folder} yet"
        nearest = sorted(saved, key=lambda n: abs(n - wanted))[:SHOWN_SAVED]
        listed = ", ".join(f"{n:,}" for n in sorted(nearest))
        return None, f"no checkpoint for {unit} {wanted:,} under {self.folder} (saved: {listed})"

    def _name(self, step: int, epoch: int | None) -> tuple[str | None, str, int]:
        if self.trainer == "specforge":
            return f"{self.run_id}-step{step}", "step", step
        if epoch is None:
            return None, "epoch", 0
        return str(epoch - 1), "epoch", epoch - 1

    def _saved(self) -> list[int]:
        pattern = (
            re.compile(rf"^{re.escape(self.run_id)}-step(\d{{1,12}})$")
            if self.trainer == "specforge"
            else re.compile(r"^(\d{1,9})$")
        )
        try:
            names = [entry.name for entry in self.folder.iterdir() if entry.is_dir()]
        except OSError:
            return []
        return [int(found[1]) for name in names if (found := pattern.match(name))]


def checkpoint_layout(command: TrainerCommand) -> CheckpointLayout | str:
    """Where `command`'s trainer writes its checkpoints, or why that is not known."""
    if command.trainer == "speculators":
        save_path = flag_value(command.args, "--save-path", "--save_path")
        folder = command.path(save_path) if save_path else None
        if folder is None:
            return "its command line names no --save-path the agent can find"
        return CheckpointLayout("speculators", folder)
    config = flag_value(command.args, "-c", "--config")
    path = command.path(config) if config else None
    if path is None:
        return "its command line names no --config the agent can find"
    try:
        raw = with_overrides(read_mapping(path), command.args)
        output = text_value(raw.get("output_dir", SPECFORGE_OUTPUT_DIR), "output_dir", path.name)
        run_id = text_value(raw.get("run_id", SPECFORGE_RUN_ID), "run_id", path.name)
    except UnreadableConfigError as exc:
        return str(exc)
    folder = command.path(output)
    if folder is None:
        return f"output_dir {output} is relative and the job's folder is unknown"
    return CheckpointLayout("specforge", folder, run_id)


def best_checkpoint_now(snapshot: Snapshot) -> str | None:
    """The best checkpoint of the latest training run the snapshot shows, or None."""
    started = {job.id: job.started_at or 0.0 for job in snapshot.jobs if job.kind == "train"}
    runs = [run for run in snapshot.training if run.job_id in started]
    latest = max(runs, key=lambda run: started[run.job_id], default=None)
    return latest.best_checkpoint if latest is not None else None
