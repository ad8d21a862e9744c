"""A training run's total from its command line and config files, checked against SpecForge's own
loader and schedule functions (specforge 0.2.0 from requirements/trainers.in), and files that lie.

speculators' config is checked against its own resolver in test_training_trainers.py (importing
it here would import torch's deprecated modules into the test process).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest

from agent.probes.training.command import ConfiguredRun, job_base, trainer_command
from agent.probes.training.config_files import MAX_CONFIG_BYTES, plain_yaml, read_mapping
from agent.probes.training.specforge_config import specforge_run
from agent.probes.training.watch import configured_run
from agent.protocol import JobInfo

SPECFORGE = ("/venv/bin/specforge", "train", "--config", "run.yaml")
REQUIRED = "model:\n  target_model_path: /m\ndata:\n  hidden_states_path: hs\n"
"""What SpecForge's loader needs besides the training section."""


def specforge_total(base: Path, *args: str, launcher: tuple[str, ...] = ()) -> ConfiguredRun:
    command = trainer_command((*launcher, *SPECFORGE, *args), base)
    assert command is not None
    assert command.trainer == "specforge"
    return specforge_run(command)


def loaded(path: Path, *overrides: str) -> Any:
    """SpecForge's own Config for the file: what its trainer would run with."""
    schema = importlib.import_module("specforge.config")
    return schema.load_config(str(path), list(overrides)).training


def test_max_steps_and_its_override_read_as_specforge_loads_them(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"{REQUIRED}training:\n  max_steps: 500\n  num_epochs: 3\n")
    run = specforge_total(tmp_path)
    assert (run.total_steps, run.epochs, run.note) == (500, 3, "training.max_steps in run.yaml")
    overridden = specforge_total(tmp_path, "training.max_steps=700", "--role", "all")
    theirs = loaded(config, "training.max_steps=700")
    assert overridden.total_steps == theirs.max_steps == 700


def test_total_steps_stands_when_max_steps_is_unset(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("training:\n  total_steps: 1200\n")
    run = specforge_total(tmp_path)
    assert (run.total_steps, run.note) == (1200, "training.total_steps in run.yaml")


def feature_folder(root: Path) -> Path:
    """Thirteen feature files, nested, among files SpecForge does not read."""
    for index in range(10):
        (root / "hs" / f"part{index % 3}").mkdir(parents=True, exist_ok=True)
        (root / "hs" / f"part{index % 3}" / f"data_{index}.ckpt").write_bytes(b"")
    for index in range(3):
        (root / "hs" / f"extra_{index}.ckpt.gz").write_bytes(b"")
    (root / "hs" / "README.md").write_text("not a sample")
    (root / "hs" / "part0" / "data.ckpt.tmp").write_bytes(b"")
    return root / "hs"


def test_an_offline_total_is_epochs_times_batches_as_specforge_schedules_it(tmp_path: Path) -> None:
    folder = feature_folder(tmp_path)
    (tmp_path / "run.yaml").write_text(
        "training:\n  num_epochs: 3\n  batch_size: 2\n"
        "data:\n  hidden_states_path: hs  # relative: read from the job's folder\n"
    )
    launcher = ("torchrun", "--nproc-per-node", "2")
    run = specforge_total(tmp_path, launcher=launcher)
    reader = importlib.import_module("specforge.runtime.data_plane.offline_reader")
    files = len(reader.list_feature_files(str(folder)))
    sampler = importlib.import_module("specforge.launch")._distributed_sampler_indices
    per_rank = len(sampler(files, dp_rank=0, dp_size=2, seed=0, epoch=0))
    schedule = importlib.import_module("specforge.training.schedule")
    expected = schedule.resolve_total_steps(
        total_steps=None, max_steps=None, num_samples=per_rank, batch_size=2,
        accumulation_steps=1, num_epochs=3,
    )  # fmt: skip
    assert (files, per_rank, expected) == (13, 7, 9)
    assert (run.total_steps, run.epochs, run.steps_per_epoch) == (expected, 3, 3)
    assert (
        run.note == f"3 epoch(s) × 3 steps: 13 feature files in {folder}, batch 2 × 1 on 2 rank(s)"
    )


def test_an_online_total_is_the_prompts_over_the_global_batch(tmp_path: Path) -> None:
    (tmp_path / "prompts.jsonl").write_text("".join(f'{{"id": {i}}}\n' for i in range(101)))
    (tmp_path / "run.yaml").write_text(
        "training: {num_epochs: 2, batch_size: 4, accumulation_steps: 2}\n"
        "data: {prompts_path: prompts.jsonl, max_prompts: 90}\n"
        "deployment: {trainer: {nproc_per_node: 1}}\n"
    )
    run = specforge_total(tmp_path)
    schedule = importlib.import_module("specforge.training.schedule")
    expected = schedule.resolve_online_total_steps(
        num_prompts=90, prompt_epochs=2, dp_size=1, batch_size=4, accumulation_steps=2
    )
    assert run.total_steps == expected == 22
    assert run.note.startswith("at most 2 epoch(s) × 11 steps: 90 prompts in")


MAX_STEPS_AS_WRITTEN = [
    "500",
    "'500'",
    "2.0",
    "true",
    "-5",
    "0",
    "2.5",
    "many",
    "[1, 2]",
    "1e13",
    "10000000000000",
    '"²"',  # a digit to str.isdigit, an error to int(): it once stopped every snapshot
    '"٣"',
]


@pytest.mark.parametrize("written", MAX_STEPS_AS_WRITTEN)
def test_max_steps_reads_as_specforge_reads_it_or_says_why_not(
    tmp_path: Path, written: str
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"{REQUIRED}training:\n  max_steps: {written}\n")
    run = specforge_total(tmp_path)
    theirs = specforge_max_steps(config)
    if written == "10000000000000":  # SpecForge sets no bound; no run is ten trillion steps
        assert theirs == 10**13
        assert run.note == (
            "training.max_steps = 10000000000000 in run.yaml is past any real run's 1,000,000,000"
        )
        return
    assert run.total_steps == theirs
    if theirs is None:
        value = importlib.import_module("yaml").safe_load(written)
        quoted = repr(value) if not isinstance(value, list) else "a list"
        assert (
            run.note == f"training.max_steps = {quoted} in run.yaml is not a positive whole number"
        )


def specforge_max_steps(config: Path) -> int | None:
    """What SpecForge's loader makes of the file's max_steps; None where it refuses the file."""
    try:
        steps: int | None = loaded(config).max_steps
    except ValueError as refused:  # pydantic's ValidationError
        if "validation error for Config" not in str(refused):
            raise
        return None
    return steps


def test_a_bad_epoch_count_leaves_the_total_unknown(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(f"{REQUIRED}training:\n  num_epochs: 0\n")
    run = specforge_total(tmp_path)
    assert (run.total_steps, run.note) == (
        None, "training.num_epochs = 0 in run.yaml is not a positive whole number",
    )  # fmt: skip


def test_a_ten_gigabyte_config_is_not_read(tmp_path: Path) -> None:
    with (tmp_path / "run.yaml").open("wb") as handle:
        handle.truncate(10 * 1024**3)  # sparse: no disk taken
    run = specforge_total(tmp_path)
    assert run.total_steps is None
    assert f"is 10,737,418,240 bytes, over the {MAX_CONFIG_BYTES:,} a config may be" in run.note


def test_a_fifo_config_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "run.yaml")  # opening it to read would block the snapshot forever
    assert specforge_total(tmp_path).note == f"{tmp_path / 'run.yaml'} is not a regular file"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"- a\n- b\n", "holds no mapping at its top"),
        (b"training: [unclosed\n", "is not valid YAML"),
        (b"training:\n  max_steps: \xff\xfe\n", "is not UTF-8 text"),
    ],
)
def test_a_config_that_is_no_mapping_says_so(tmp_path: Path, content: bytes, why: str) -> None:
    (tmp_path / "run.yaml").write_bytes(content)
    run = specforge_total(tmp_path)
    assert run.total_steps is None
    assert why in run.note


def test_missing_files_and_paths_say_what_is_missing(tmp_path: Path) -> None:
    assert "No such file or directory" in specforge_total(tmp_path).note
    (tmp_path / "run.yaml").write_text("data:\n  hidden_states_path: nowhere\n")
    assert specforge_total(tmp_path).note == f"{tmp_path / 'nowhere'}: no such folder"
    command = trainer_command(SPECFORGE, None)
    assert command is not None
    assert specforge_run(command).note == "run.yaml is relative and the job's folder is unknown"
    bare = trainer_command(("specforge", "train"), tmp_path)
    assert bare is not None
    assert specforge_run(bare).note == "its command line names no --config"


@pytest.mark.parametrize(
    ("argv", "trainer"),
    [
        (("specforge", "train", "-c", "x.yaml"), "specforge"),
        (("python", "-m", "specforge.cli", "train", "--config=x.yaml"), "specforge"),
        (("torchrun", "--nproc_per_node=8", "-m", "speculators.train", "--config", "x"), "speculators"),
        (("/opt/venv/bin/speculators", "train", "--epochs", "3"), "speculators"),
        (("bash", "-lc", "source env.sh && specforge train --config x.yaml"), "specforge"),
        (("python", "-m", "agent.simulator.train", "--steps", "60"), None),
        (("specforge", "export", "--to", "hf"), None),
        (("bash", "-c", "echo 'unclosed specforge train"), None),
    ],
)  # fmt: skip
def test_which_trainer_a_command_line_runs(argv: tuple[str, ...], trainer: str | None) -> None:
    command = trainer_command(argv, Path("/work"))
    assert (command.trainer if command else None) == trainer


def test_relative_paths_are_read_from_the_job_s_folder(tmp_path: Path) -> None:
    own = JobInfo("t-1", "train", "train", "running", SPECFORGE, log_path=str(tmp_path / "log"))
    assert job_base(own) == tmp_path  # the agent's job folder: the shim runs it there
    assert job_base(JobInfo("t-2", "t", "train", "running", (), cwd="/data")) == Path("/data")
    found = JobInfo("t-3", "t", "train", "running", (), pid=os.getpid(), external=True)
    assert job_base(found) == Path.cwd()
    (tmp_path / "run.yaml").write_text("training:\n  max_steps: 64\n")
    assert configured_run(own).total_steps == 64
    assert (
        configured_run(JobInfo("t-4", "t", "train", "running", ("sleep", "9"))) == ConfiguredRun()
    )


CONFIGS = [
    "training:\n  max_steps: 500  # a comment\n  num_epochs: 3\n",
    "train:\n  trainer:\n    epochs: 4\n    max_steps: '300'\n  data:\n    data_path: /d\n",
    'model:\n  target_model_path: "/m # not a comment"\ntraining:\n  lr_scheduler: cosine\n'
    "  warmup_ratio: 0.015\n  compact_teacher: false\n  resume_from: null\n",
]


@pytest.mark.parametrize("text", CONFIGS)
def test_the_plain_reader_agrees_with_pyyaml_where_totals_are_read(text: str) -> None:
    assert plain_yaml(text) == importlib.import_module("yaml").safe_load(text)


def test_a_json_config_reads_as_json(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"training": {"max_steps": 9}}')
    assert read_mapping(tmp_path / "run.json") == {"training": {"max_steps": 9}}


ALIAS_BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
"""Nine levels of nine aliases: 387 million strings to whoever walks it (its repr never ends)."""


@pytest.mark.parametrize("key", ["training:\n  max_steps", "data:\n  hidden_states_path"])
def test_an_alias_bomb_in_a_config_is_a_reason_at_once_never_walked(
    tmp_path: Path, key: str
) -> None:
    (tmp_path / "run.yaml").write_text(f"{ALIAS_BOMB}model:\n  target_model_path: /m\n{key}: *i\n")
    run = specforge_total(tmp_path)
    assert run.total_steps is None
    assert run.note.endswith(
        "= a list in run.yaml is not a positive whole number"
    ) or run.note.endswith("= a list in run.yaml is not a path"), run.note
