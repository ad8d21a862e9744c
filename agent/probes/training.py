"""Following every training and hidden-states job's log, so the snapshot carries their progress."""

from __future__ import annotations

from pathlib import Path

from agent.logs import NamedLog, read_chunk
from agent.probes.training_log import TrainingLogParser
from agent.protocol import JobInfo, TrainingProgress

TRAINING_KINDS = ("train", "hidden_states")


class TrainingWatch:
    """One parser and one byte offset per training job."""

    def __init__(self) -> None:
        self._parsers: dict[str, tuple[TrainingLogParser, int, int | None]] = {}

    def progress(self, jobs: tuple[JobInfo, ...]) -> tuple[TrainingProgress, ...]:
        """Read what each training job's log gained since last time."""
        return tuple(self._one(job) for job in jobs if job.kind in TRAINING_KINDS and job.log_path)

    def _one(self, job: JobInfo) -> TrainingProgress:
        parser, offset, inode = self._parsers.get(job.id, (TrainingLogParser(), 0, None))
        chunk = read_chunk(NamedLog(job.id, Path(str(job.log_path))), offset, inode)
        if chunk.reset:
            parser = TrainingLogParser()
        parser.feed(chunk.text)
        self._parsers[job.id] = (parser, chunk.end_offset, chunk.inode)
        state = parser.state
        return TrainingProgress(
            job.id, state.step, state.total_steps, state.epoch, state.loss, state.learning_rate,
            state.acceptance_rate, state.acceptance_length, state.best_eval_acceptance,
            state.best_eval_step, state.eta_s, tuple(state.loss_history), tuple(state.acceptance_history),
            state.epochs,
        )  # fmt: skip
