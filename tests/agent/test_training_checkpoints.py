"""The best evaluation's checkpoint folder, named as each trainer names it.

SpecForge 0.2.0: `{output_dir}/{run_id}-step{N}` (training/checkpoint.py, checkpoint_dir), its
defaults from config/schema.py; speculators 0.9.0: `{--save-path}/{epoch from 0}`
(train/checkpointer.py model_path). The names are checked against the trainers' own code.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from agent.probes.training.checkpoints import CheckpointLayout, checkpoint_layout
from agent.probes.training.command import trainer_command


def layout(argv: tuple[str, ...], base: Path) -> CheckpointLayout | str:
    command = trainer_command(argv, base)
    assert command is not None
    return checkpoint_layout(command)


def test_specforge_names_its_folders_as_its_checkpoint_manager_does(tmp_path: Path) -> None:
    manager: Any = importlib.import_module("specforge.training.checkpoint").CheckpointManager
    (tmp_path / "run.yaml").write_text("run_id: qwen-e3\noutput_dir: ckpt\n")
    found = layout(("specforge", "train", "--config", "run.yaml"), tmp_path)
    assert isinstance(found, CheckpointLayout)
    bare = object.__new__(manager)  # its naming only: no process group, no file
    bare.output_dir, bare.run_id = str(tmp_path / "ckpt"), "qwen-e3"
    (tmp_path / "ckpt" / "qwen-e3-step800").mkdir(parents=True)
    assert found.best(800, 2) == (manager.checkpoint_dir(bare, 800), "")


def test_specforge_defaults_are_its_schema_s(tmp_path: Path) -> None:
    schema: Any = importlib.import_module("specforge.config.schema")
    defaults = schema.Config.model_fields
    (tmp_path / "run.yaml").write_text("training:\n  max_steps: 10\n")
    found = layout(("specforge", "train", "-c", "run.yaml"), tmp_path)
    assert isinstance(found, CheckpointLayout)
    assert found.run_id == defaults["run_id"].default
    assert found.folder == tmp_path / defaults["output_dir"].default


def test_speculators_counts_its_epoch_folders_from_zero(tmp_path: Path) -> None:
    found = layout(("python", "-m", "speculators.train", "--save-path", "out"), tmp_path)
    assert isinstance(found, CheckpointLayout)
    (tmp_path / "out" / "1").mkdir(parents=True)
    (tmp_path / "out" / "3").mkdir()
    assert found.best(40, 2) == (str(tmp_path / "out" / "1"), "")
    said = f"no checkpoint for epoch 0 under {tmp_path / 'out'} (saved: 1, 3)"
    assert found.best(20, 1) == (None, said)
    assert found.best(20, None) == (None, "the epoch of the best evaluation is not known")


def test_what_cannot_be_known_is_said(tmp_path: Path) -> None:
    assert layout(("speculators", "train"), tmp_path) == (
        "its command line names no --save-path the agent can find"
    )
    (tmp_path / "run.yaml").write_text("run_id: [1, 2]\n")
    said = layout(("specforge", "train", "-c", "run.yaml"), tmp_path)
    assert isinstance(said, str)
    assert "run_id" in said
    assert "is not a path" in said


def test_a_trainer_the_agent_does_not_know_gets_no_checkpoint_line() -> None:
    """The demo's stand-in trainer (and any script of one's own): nothing to say, not 'unknown'."""
    from agent.probes.training.watch import layout_of
    from agent.protocol import JobInfo

    own = JobInfo("t", "train", "train", "running", ("python", "-m", "agent.simulator.train"))
    assert layout_of(own) == ""
