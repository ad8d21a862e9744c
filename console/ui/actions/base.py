"""What every group of console actions needs: the app, and the state of each host.

The action groups are small classes the app builds once and calls from its intent handlers
(`on_stop_requested` and the like): the app owns the links and the screens; a group knows how
one kind of request is carried out, on the host the intent names.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from textual.app import App

from agent.protocol import JobInfo, Snapshot
from console.config import HostConfig
from console.link.agent_link import AgentLink
from console.link.host_connection import HostConnection
from console.model.consequences import stop_consequences
from console.model.host_view import HostView

STOP_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Hosts:
    """Every host's view, link and config, and which hosts may not be changed."""

    views: dict[str, HostView]
    connections: dict[str, HostConnection]
    configs: dict[str, HostConfig]
    read_only: frozenset[str]


class HostActions:
    """The state and the helpers the action groups share."""

    def __init__(self, app: App[None], hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts

    def mutable_link(self, host: str) -> AgentLink | None:
        """The link to `host`, or None (and a toast saying why) when nothing may change there now."""
        if host in self.hosts.read_only:
            self.app.notify(
                f"{host} is read-only: nothing can be changed from here", severity="warning"
            )
            return None
        link = self.writable_link(host)
        if link is None:
            self.app.notify("no link to the host right now", severity="warning")
        return link

    def writable_link(self, host: str) -> AgentLink | None:
        """The link to `host` where something may change there now, else None, saying nothing."""
        connection = self.hosts.connections.get(host)
        if host in self.hosts.read_only or connection is None:
            return None
        return connection.link

    def snapshot(self, host: str) -> Snapshot | None:
        """The latest snapshot of `host`."""
        return self.hosts.views[host].snapshot

    def jobs(self, host: str) -> tuple[JobInfo, ...]:
        """The jobs of `host` as last seen."""
        snapshot = self.snapshot(host)
        return snapshot.jobs if snapshot else ()

    def configured(self, host: str, *kinds: str) -> list[str]:
        """The names of the jobs of `kinds` configured for `host`."""
        config = self.hosts.configs.get(host)
        jobs = config.pipeline.jobs if config else {}
        return [name for name, spec in jobs.items() if spec.kind in kinds]

    def stop_consequences(self, host: str, job_id: str) -> str:
        """What stopping `job_id` on `host` does, in words."""
        snapshot = self.snapshot(host)
        assert snapshot is not None
        job = next(job for job in snapshot.jobs if job.id == job_id)
        config = self.hosts.configs.get(host)
        spec = config.pipeline.jobs.get(job.name) if config else None
        return stop_consequences(host, snapshot, job_id, spec)

    def in_worker(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run `work` as an action worker: a failure is heard by the app's one worker handler."""
        self.app.run_worker(work, name=name, group="actions", exit_on_error=False)
