"""What an operation may do on the box: the narrow face of the agent's core it is given.

Operations never import the core (which owns them); the core hands itself over as a `Box`, so
the operations use the very launch, stop and snapshot paths the console's requests use: the
one-writer rule, the GPU guard and the pid checks hold for them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from agent.protocol import JobInfo, LaunchParams, PipelineConfig, Snapshot, StopResult


class Box(Protocol):
    """Launch, stop, look: what the core offers the operations."""

    @property
    def pipeline(self) -> PipelineConfig:
        """The host's configuration as the agent holds it now."""
        ...

    async def launch(
        self, params: LaunchParams, key: str, lineage: Mapping[str, Any] | None = None
    ) -> JobInfo:
        """Start a configured job (refused with an AgentError as a console's launch would be)."""
        ...

    async def stop(self, job_id: str) -> StopResult:
        """Stop one of the agent's own jobs with its plan."""
        ...

    async def own_job(self, job_id: str) -> JobInfo | None:
        """One of the agent's own jobs as it stands now (None: no such job)."""
        ...

    def launch_params(self, job_id: str) -> LaunchParams | None:
        """The request that started one of the agent's own jobs, to start it the same way."""
        ...

    async def fresh_snapshot(self) -> Snapshot:
        """A snapshot taken now (shared with the observer's when one is being taken)."""
        ...
