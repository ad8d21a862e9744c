"""The session's own messages: hello, ping, the watch subscription, and the empty answer."""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol.config import PipelineConfig


@dataclass(frozen=True, slots=True)
class HelloParams:
    """The console's half of the first exchange."""

    protocol_version: int
    client_version: str
    pipeline: PipelineConfig | None = None
    """The console's config, compared with the agent's; taken only by an agent that has none."""


@dataclass(frozen=True, slots=True)
class HelloResult:
    """The agent's half of the first exchange."""

    protocol_version: int
    agent_version: str
    bundle_sha256: str
    pid: int
    host_name: str
    started_at: float
    pipeline_taken: bool = False
    """The agent ran no config yet and took the one this hello sent."""
    pipeline_differences: tuple[str, ...] = ()
    """How the config this hello sent differs from the one the agent runs (which it keeps)."""


@dataclass(frozen=True, slots=True)
class WatchParams:
    """Push a snapshot event every `interval_s`, and at once when a job changes."""

    interval_s: float = 1.0


@dataclass(frozen=True, slots=True)
class PingParams:
    """Asks the agent for its clock, to measure latency and skew."""


@dataclass(frozen=True, slots=True)
class PingResult:
    """The agent's clock when it answered a ping."""

    agent_time: float


@dataclass(frozen=True, slots=True)
class Done:
    """A request that returns nothing but its success."""
