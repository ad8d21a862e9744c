"""The config the agent runs: taken from the first console's hello, or kept from before a restart.

Kept in the state folder, so a restarted daemon runs the same config. Every part that needs the
config is handed `current` (a call, so a config applied later reaches it); a change is said to
whoever listens (the datasets' tracker follows the new root).
"""

from __future__ import annotations

from collections.abc import Callable

from agent.protocol import PipelineConfig, from_wire, pipeline_differences, to_wire
from agent.state import StatePaths, read_json, write_json_atomic
from agent.state.health import StateHealth


class RunningConfig:
    """The config we run, whether one was ever taken, and who hears when it changes."""

    def __init__(self, paths: StatePaths, health: StateHealth) -> None:
        self.paths = paths
        self.health = health
        self.pipeline, self.kept = _load(paths)
        """The config we run, and whether one was ever taken (else the first hello's is)."""
        self.listeners: list[Callable[[PipelineConfig], None]] = []

    def current(self) -> PipelineConfig:
        """The config we run now."""
        return self.pipeline

    def differences_from(self, wanted: PipelineConfig | None) -> tuple[str, ...]:
        """How a console's config differs from the one running; () when it sent none."""
        return pipeline_differences(self.pipeline, wanted) if wanted is not None else ()

    def run(self, pipeline: PipelineConfig) -> None:
        """Run `pipeline` from now on, and keep it for a restarted daemon."""
        self.pipeline = pipeline
        self.kept = True
        for listener in self.listeners:
            listener(pipeline)
        try:  # a full state folder must not refuse the console
            write_json_atomic(self.paths.pipeline_config, to_wire(pipeline))
        except OSError as exc:
            self.health.failed(exc)
        else:
            self.health.wrote(self.paths.pipeline_config)


def _load(paths: StatePaths) -> tuple[PipelineConfig, bool]:
    """The config kept in the state folder, and whether there was one that reads."""
    saved = read_json(paths.pipeline_config)
    try:
        return from_wire(PipelineConfig, saved), True
    except ValueError:
        return PipelineConfig(), False
