"""A training job's configured length, from the command line it runs: which trainer, its config.

SpecForge 0.2.0 draws its step bar only when stderr is a terminal and speculators 0.9.0 its epoch
bars only as each epoch ends, so a job writing to a file tells no total in its log: the total
comes from what the run was configured with. Only the trainers named here are read; any other
command gives an empty ConfiguredRun and the log alone speaks for it.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import JobInfo


@dataclass(frozen=True)
class ConfiguredRun:
    """What the configuration says of a run's length; `note` says where from, or why not."""

    total_steps: int | None = None
    note: str = ""
    epochs: int | None = None
    steps_per_epoch: int | None = None


@dataclass(frozen=True)
class TrainerCommand:
    """A recognised trainer on a command line: which, its own arguments, and its launcher's."""

    trainer: str
    args: tuple[str, ...]
    launcher: tuple[str, ...]
    base: Path | None
    """The folder relative paths are read from: the job's working directory."""

    def path(self, text: str) -> Path | None:
        """`text` as a path from the job's working directory (None: relative, and none known)."""
        path = Path(text).expanduser()
        if path.is_absolute():
            return path
        return self.base / path if self.base is not None else None


_ENTRIES = {
    ("specforge", "train"): "specforge",
    ("-m", "specforge", "train"): "specforge",
    ("-m", "specforge.cli", "train"): "specforge",
    ("speculators", "train"): "speculators",
    ("-m", "speculators", "train"): "speculators",
    ("-m", "speculators.train"): "speculators",
    ("-m", "speculators.train.__main__"): "speculators",
}


def trainer_command(argv: tuple[str, ...], base: Path | None) -> TrainerCommand | None:
    """The trainer `argv` runs, looking one level into a `bash -c "..."` string too."""
    found = _find(argv, base)
    for part in argv if found is None else ():
        if " " in part and ("specforge" in part or "speculators" in part):
            try:
                found = _find(tuple(shlex.split(part)), base)
            except ValueError:
                continue
            if found is not None:
                break
    return found


def _find(argv: tuple[str, ...], base: Path | None) -> TrainerCommand | None:
    for start in range(len(argv)):
        for entry, trainer in _ENTRIES.items():
            head = (os.path.basename(argv[start]), *argv[start + 1 : start + len(entry)])
            if head == entry:
                rest = argv[start + len(entry) :]
                return TrainerCommand(trainer, rest, argv[:start], base)
    return None


def job_base(job: JobInfo) -> Path | None:
    """The job's working directory, which its relative paths are read from.

    Its configured cwd; else the agent's job folder, which its shim runs it in; else, for a
    process found running, what /proc says.
    """
    if job.cwd:
        return Path(job.cwd)
    if not job.external and job.log_path:
        return Path(job.log_path).parent
    if job.pid is None:
        return None
    try:
        return Path(os.readlink(f"/proc/{job.pid}/cwd"))
    except OSError:
        return None


def flag_value(args: tuple[str, ...], *names: str) -> str | None:
    """The last value given to any of `names` (`--flag value` or `--flag=value`)."""
    value = None
    for index, arg in enumerate(args):
        name, sep, inline = arg.partition("=")
        if name in names:
            value = inline if sep else (args[index + 1] if index + 1 < len(args) else None)
    return value
