"""Probe readings refreshed in the background every few seconds, so a snapshot never waits on them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from agent.host.sglang_auth import ApiKeyError, key_source, read_api_key
from agent.probes.bounded_stats import bounded
from agent.probes.gpus import GpuReading, read_gpus
from agent.probes.sglang_http import WARMING_DETAIL, probe_sglang
from agent.probes.sglang_log import latest_decode_stats
from agent.protocol import (
    SERVER_STARTING_GRACE_S,
    Alert,
    JobInfo,
    PipelineConfig,
    ServerApi,
    ServerStats,
)
from agent.tasks import TaskOwner

REFRESH_S = 5.0


class ProbeCache:
    """The latest SGLang and GPU readings, and the task that refreshes them."""

    def __init__(self, tasks: TaskOwner | None = None) -> None:
        self.server: ServerStats | None = None
        self.gpus = GpuReading(())
        self._refreshed_at = 0.0
        self._tasks = tasks or TaskOwner("probes")
        """Owns the refresh, so the daemon's shutdown cancels one in progress."""
        self._task: asyncio.Task[None] | None = None
        self._probed_for: tuple[str | None, ...] = ()
        self._config_changes = 0
        """Bumped when the server config changes: a refresh begun before it is discarded."""
        self._server_name = "SGLang"
        """What the alerts call the server: the config's `api` says which kind it is."""

    def refresh_if_stale(self, pipeline: PipelineConfig, every_s: float = REFRESH_S) -> None:
        """Start a refresh in the background when the readings are older than `every_s`.

        Readings taken for another server config (the daemon scans before a console's hello
        brings the config) are dropped at once, so no snapshot shows them as this one's.
        """
        probed_for = _probed_for(pipeline)
        self._server_name = server_name(pipeline.sglang_api)
        if probed_for != self._probed_for:
            self._probed_for, self.server, self._refreshed_at = probed_for, None, 0.0
            self._config_changes += 1
        if time.monotonic() - self._refreshed_at < every_s or (
            self._task and not self._task.done()
        ):
            return
        self._refreshed_at = time.monotonic()
        self._task = self._tasks.spawn(self._refresh(pipeline), "probe refresh")

    async def _refresh(self, pipeline: PipelineConfig) -> None:
        config_changes = self._config_changes
        if pipeline.sglang_url:
            key_file = pipeline.sglang_api_key_file
            api_key, key_note = await asyncio.to_thread(_api_key, key_file)
            server = await probe_sglang(
                pipeline.sglang_url, api_key, key_note, pipeline.sglang_api, pipeline.sglang_model,
                key_source(key_file, api_key),
            )  # fmt: skip
            server = with_unreadable_key(server, key_note)
        else:
            server = ServerStats(url=None, healthy=None, detail="no [sglang] url configured")
        log_stats = (
            await asyncio.to_thread(latest_decode_stats, Path(pipeline.sglang_log))
            if pipeline.sglang_log
            else None
        )
        if config_changes != self._config_changes:
            return  # the config changed while it ran: its readings are not this config's
        probed = replace(
            bounded(server),
            probed_at=time.time(),
            log_stats={k: str(v) for k, v in (log_stats or {}).items()},
        )
        self.server = with_down_since(self.server, probed)
        self.gpus = await read_gpus(nvidia_smi_binary(pipeline))

    async def first_reading(self, timeout_s: float) -> None:
        """Wait, at most `timeout_s`, for a probe under way when none has read this config yet."""
        task = self._task
        if self.server is not None or task is None or task.done():
            return
        with contextlib.suppress(Exception):  # a probe that failed is the refresh's to log
            await asyncio.wait_for(asyncio.shield(task), timeout_s)

    def reading(self) -> ProbeReading:
        """The readings of this moment, taken together.

        A refresh that lands while a snapshot is assembled must not give it one server for its
        alerts and another for its panel (a down server once showed with no server_down alert).
        """
        return ProbeReading(self.server, self.gpus, self._server_name)

    def alerts(self, now: float, jobs: tuple[JobInfo, ...] = ()) -> list[Alert]:
        """The alerts of the readings of this moment (`ProbeReading.alerts`)."""
        return self.reading().alerts(now, jobs)


@dataclass(frozen=True, slots=True)
class ProbeReading:
    """The server and GPU readings of one moment, and the alerts they make."""

    server: ServerStats | None
    gpus: GpuReading
    server_name: str
    """What the alerts call the server: the config's `api` says which kind it is."""

    def alerts(self, now: float, jobs: tuple[JobInfo, ...] = ()) -> list[Alert]:
        """server_down when a configured server (or every worker behind a router) is down.

        An error; a warning while it answers /health 503 (warming up); only information when
        the user stopped the server job (to train, say). server_key, a warning, while it is up
        but refuses the key the probes send (or wants one): the jobs that talk to it fail too.
        """
        server = self.server
        if server is not None and server.url is not None and server.healthy:
            return key_alerts(self.server_name, server, now)
        if server is None or server.url is None or server.healthy is not False:
            return []
        servers = sorted((j for j in jobs if j.kind == "server"), key=lambda j: j.started_at or 0)
        if servers and servers[-1].state in ("stopping", "stopped"):
            message = f"{self.server_name} at {server.url} is down: job {servers[-1].name} was stopped on request"
            return [Alert("server_down", "info", message, server.url, now)]
        if servers and _starting(servers[-1], now):
            job = servers[-1]
            message = (
                f"{self.server_name} at {server.url} is starting: job {job.name} launched "
                f"{now - (job.started_at or now):.0f} s ago ({server.detail})"
            )
            return [Alert("server_down", "warning", message, server.url, now)]
        message = f"{self.server_name} at {server.url}: {server.detail}"
        warming = server.detail.startswith(WARMING_DETAIL)  # up, answering, not ready yet
        return [Alert("server_down", "warning" if warming else "error", message, server.url, now)]


def key_alerts(name: str, server: ServerStats, now: float) -> list[Alert]:
    """One warning while a server that is up turns the probes' key away; none otherwise."""
    if server.key_problem is None:
        return []
    message = f"{name} at {server.url}: {server.detail}"
    return [Alert("server_key", "warning", message, server.url or "", now)]


STARTING_GRACE_S = SERVER_STARTING_GRACE_S
"""A server job this young that does not answer yet is loading its model: a warning, not an error."""


def _starting(job: JobInfo, now: float) -> bool:
    """The server job is running (or starting) and was launched within STARTING_GRACE_S."""
    started = job.started_at
    return (
        job.state in ("starting", "running")
        and started is not None
        and now - started < STARTING_GRACE_S
    )


def with_down_since(before: ServerStats | None, now: ServerStats) -> ServerStats:
    """`now` with when the server went down, kept from `before` while it stays down.

    The first probe that found it down dates it; a reading of another URL starts afresh; None
    while it is up or unknown.
    """
    if now.healthy is not False:
        return now
    kept = before.down_since if before is not None and before.url == now.url else None
    return replace(now, down_since=kept if kept is not None else now.probed_at)


def server_name(api: ServerApi | None) -> str:
    """SGLang unless the config says the server speaks OpenAI's API (vLLM, or a hosted one)."""
    return "SGLang" if api in (None, "sglang") else "the OpenAI-compatible server"


def _probed_for(pipeline: PipelineConfig) -> tuple[str | None, ...]:
    """What the probe readings depend on in the config."""
    return (
        pipeline.sglang_url, pipeline.sglang_log, pipeline.sglang_api_key_file,
        pipeline.sglang_api, pipeline.sglang_model,
    )  # fmt: skip


def _api_key(key_file: str | None) -> tuple[str | None, str]:
    """The key for the probes, and what went wrong reading it (for the server's detail)."""
    try:
        return read_api_key(key_file), ""
    except ApiKeyError as exc:
        return None, str(exc)


def with_unreadable_key(server: ServerStats, key_note: str) -> ServerStats:
    """A configured key file that cannot be read is a key problem even where no key is asked.

    Every job is handed that file (EAGLE_API_KEY_FILE) and refuses to start without it, while
    /health and a keyless server said all was well.
    """
    if not key_note or server.key_problem is not None:
        return server
    said = f"{key_note}: the jobs handed it as EAGLE_API_KEY_FILE fail"
    detail = f"{server.detail}; {said}" if server.detail else said
    return replace(server, detail=detail, key_problem="unreadable")


def nvidia_smi_binary(pipeline: PipelineConfig) -> str:
    """The host's `nvidia_smi` (a `~/` path is the agent user's home), else the one on PATH."""
    return os.path.expanduser(pipeline.nvidia_smi) if pipeline.nvidia_smi else "nvidia-smi"
