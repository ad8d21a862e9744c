"""Following every training and hidden-states job's log, so the snapshot carries their progress.

Each job's configuration (its command line's trainer and config file, command.py) and where
its trainer writes checkpoints (checkpoints.py) are read once, when the job is first seen:
the trainer read them once too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.logs import MAX_READ_BYTES, NamedLog, read_chunk
from agent.probes.training.checkpoints import CheckpointLayout, checkpoint_layout
from agent.probes.training.command import (
    ConfiguredRun,
    TrainerCommand,
    job_base,
    trainer_command,
)
from agent.probes.training.log import TrainingLogParser
from agent.probes.training.progress import StepPace, progress_of
from agent.probes.training.specforge_config import specforge_run
from agent.probes.training.speculators_config import speculators_run
from agent.protocol import LIVE_JOB_STATES, JobInfo, TrainingProgress

TRAINING_KINDS = ("train", "hidden_states")


def configured_run(job: JobInfo) -> ConfiguredRun:
    """What the job's command line and config files say of its length."""
    return _configured(trainer_command(job.argv, job_base(job)))


def layout_of(job: JobInfo) -> CheckpointLayout | str:
    """Where the job's trainer writes its checkpoints, or why that is not known.

    "" for a trainer the agent does not know: it has nothing to say about its folders.
    """
    return _layout(trainer_command(job.argv, job_base(job)))


def _configured(command: TrainerCommand | None) -> ConfiguredRun:
    if command is None:
        return ConfiguredRun()
    return specforge_run(command) if command.trainer == "specforge" else speculators_run(command)


def _layout(command: TrainerCommand | None) -> CheckpointLayout | str:
    return checkpoint_layout(command) if command is not None else ""


def _follow(job: JobInfo) -> _Follow:
    """A job first seen: its command line is read once for its length and its checkpoints."""
    command = trainer_command(job.argv, job_base(job))
    return _Follow(_configured(command), _layout(command))


@dataclass
class _Follow:
    """One job's log as read so far."""

    configured: ConfiguredRun
    layout: CheckpointLayout | str
    parser: TrainingLogParser = field(default_factory=TrainingLogParser)
    offset: int = 0
    inode: int | None = None
    pace: StepPace = field(default_factory=StepPace)


class TrainingWatch:
    """One parser, byte offset, configuration and pace per training job."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._follows: dict[str, _Follow] = {}

    def progress(self, jobs: tuple[JobInfo, ...]) -> tuple[TrainingProgress, ...]:
        """Read what each training job's log gained since last time."""
        wanted = [job for job in jobs if job.kind in TRAINING_KINDS and job.log_path]
        known = self._follows
        self._follows = {j.id: known.get(j.id) or _follow(j) for j in wanted}
        return tuple(self._one(job, self._follows[job.id]) for job in wanted)

    def _one(self, job: JobInfo, follow: _Follow) -> TrainingProgress:
        log = NamedLog(job.id, Path(str(job.log_path)))
        chunk = read_chunk(log, follow.offset, follow.inode, redraws_end_lines=True)
        if chunk.reset:
            follow.parser, follow.pace = TrainingLogParser(), StepPace()
        follow.parser.feed(chunk.text)
        follow.offset, follow.inode = chunk.end_offset, chunk.inode
        state = follow.parser.state
        if chunk.end_offset - chunk.start_offset < MAX_READ_BYTES // 2:  # caught up, not a backlog
            follow.pace.note(self._clock(), state.step)
        running = job.state in LIVE_JOB_STATES
        pace = follow.pace.seconds_per_step
        progress = progress_of(job.id, state, follow.configured, pace, running=running)
        if state.best_eval_step is None:
            return progress
        layout = follow.layout
        folder, note = (
            layout.best(state.best_eval_step, state.best_eval_epoch)
            if isinstance(layout, CheckpointLayout)
            else (None, layout)
        )
        return replace(progress, best_checkpoint=folder, best_checkpoint_note=note)
