"""What a speculators 0.9.0 run was configured with: its epochs, and max_steps.

From `--epochs`, `--max-steps` and `--config FILE` (flag over YAML over default; the YAML's trainer keys under a `train:` stage or bare, in its
`trainer:` group; train/config/resolution.py ~455-585, train/config/schema.py TrainerArgs).

Its steps per epoch are the batches its sampler packs by sample length (`total_seq_len`), which
no count of the data gives without reading every sample's length: until its first epoch bar
closes, only `max_steps` gives a total (train/trainer.py: `max_steps` stops the loop).
"""

from __future__ import annotations

from typing import Any

from agent.probes.training.command import ConfiguredRun, TrainerCommand, flag_value
from agent.probes.training.config_files import UnreadableConfigError, read_mapping, whole

DEFAULT_EPOCHS = 20
"""train/config/schema.py TrainerArgs.epochs."""
UNTIL_FIRST_EPOCH = "speculators packs samples into batches by length: known once an epoch ends"


def speculators_run(command: TrainerCommand) -> ConfiguredRun:
    """The run's epochs and, when it caps them, its max_steps."""
    try:
        trainer = _yaml_trainer(command)
        epochs = _pick(command, "--epochs", trainer, "epochs") or DEFAULT_EPOCHS
        max_steps = _pick(command, "--max-steps", trainer, "max_steps")
    except UnreadableConfigError as exc:
        return ConfiguredRun(note=str(exc))
    if max_steps is None:
        return ConfiguredRun(note=UNTIL_FIRST_EPOCH, epochs=epochs)
    where = "--max-steps" if flag_value(command.args, "--max-steps") else "trainer.max_steps"
    return ConfiguredRun(max_steps, f"{where} (a cap on {epochs} epochs)", epochs)


def _yaml_trainer(command: TrainerCommand) -> dict[str, Any]:
    config = flag_value(command.args, "--config")
    if config is None:
        return {}
    path = command.path(config)
    if path is None:
        raise UnreadableConfigError(f"{config} is relative and the job's folder is unknown")
    raw = read_mapping(path)
    stage = raw.get("train") if isinstance(raw.get("train"), dict) else raw
    trainer = stage.get("trainer") if isinstance(stage, dict) else None
    return trainer if isinstance(trainer, dict) else {}


def _pick(command: TrainerCommand, flag: str, trainer: dict[str, Any], key: str) -> int | None:
    value = flag_value(command.args, flag)
    if value is not None:
        return whole(value, flag)
    if trainer.get(key) is not None:
        return whole(trainer[key], f"trainer.{key}", "its --config")
    return None
