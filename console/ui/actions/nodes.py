"""Jobs across boxes in the dashboard: t starts every box's part, k stops them all.

A part that fails, is killed or lost takes the others down: no agent can reach another box, so
the console, which sees every box, watches each snapshot for it.
"""

from __future__ import annotations

import asyncio

from textual.app import App

from agent.protocol import JobInfo, StopResult
from console.config import node_spans
from console.link.agent_link import AgentLink, LinkError
from console.link.node_jobs import start_on_every_box, stop_parts
from console.model.node_groups import (
    NodeGroup,
    NodePartSeen,
    group_of,
    node_groups,
    parts_to_stop,
    why_stopped,
)
from console.ui.actions.base import HostActions, Hosts
from console.ui.screens.confirm import ConfirmScreen

RETRY_STOP_S = 30.0
"""How long the watch waits before asking a box again to stop a part it could not stop."""


class NodeActions(HostActions):
    """Start, stop and watch the parts of jobs that span boxes."""

    def __init__(self, app: App[None], hosts: Hosts) -> None:
        super().__init__(app, hosts)
        self._asked: set[tuple[str, str]] = set()
        """(host, job id) of every part this console has asked to stop."""

    def groups(self) -> list[NodeGroup]:
        """Every launch across boxes the latest snapshots show."""
        jobs = {host: self.jobs(host) for host in self.hosts.views}
        return node_groups(jobs, node_spans(self.hosts.configs))

    async def start(self, host: str, name: str, nodes: tuple[str, ...]) -> None:
        """Start `name` on every box it spans, or on none (and say which box refused)."""
        links = self._links(nodes, f"{name} spans {', '.join(nodes)}")
        if links is None:
            return
        try:
            parts = await start_on_every_box(links, name, nodes)
        except LinkError as exc:
            self.app.notify(str(exc), severity="error", timeout=30)
            return
        for part in parts:
            self.hosts.views[part.host].launched(part.job)
        rdzv = parts[0].job.node.rdzv_id if parts[0].job.node else "?"
        self.app.notify(f"started {name} on {len(parts)} boxes ({', '.join(nodes)}), rdzv {rdzv}")

    def offer_stop(self, host: str, job: JobInfo) -> bool:
        """Ask, then stop every box's part of the launch `job` belongs to; False if it is none."""
        group = group_of(self.groups(), host, job.id)
        if group is None:
            return False
        live = group.live()

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.in_worker(
                    self._stop(live, "stopped from the dashboard"), f"the stop of {job.name}"
                )

        text = (
            f"{group.line()}\n\nEvery box's part gets its stop signal, then SIGTERM and SIGKILL "
            "after the job's graces: a part left running would wait for the others in its "
            "collectives, holding its GPUs."
        )
        title = f"Stop {job.name} on every box ({len(live)} running)?"
        _ = self.app.push_screen(ConfirmScreen(title, text, "Stop every part"), confirmed)
        return True

    def watch(self) -> None:
        """Stop the running parts of any launch whose other part failed, was killed or lost."""
        due = [
            d for d in parts_to_stop(self.groups()) if (d[0].host, d[0].job.id) not in self._asked
        ]
        if not due:
            return
        ended = due[0][1]
        where = ", ".join(f"node {part.rank} on {part.host}" for part, _ in due)
        self.app.notify(f"{ended.job.name}: {why_stopped(ended)}: stopping {where}",
                        severity="warning", timeout=30)  # fmt: skip
        self.in_worker(self._stop([part for part, _ in due], why_stopped(ended)), "a stop of parts")

    async def _stop(self, parts: list[NodePartSeen], why: str) -> None:
        self._asked.update((part.host, part.job.id) for part in parts)  # the watch asks no more
        links = {p.host: link for p in parts if (link := self.writable_link(p.host)) is not None}
        answers = await stop_parts(links, [(p.host, p.job) for p in parts if p.host in links])
        failed = [host for host, answer in answers if not isinstance(answer, StopResult)]
        for host, answer in answers:
            if isinstance(answer, StopResult):
                self.app.notify(f"{host}: {answer.job.name} {answer.outcome} ({why})")
            else:
                self.app.notify(f"{host}: not stopped: {answer}; asked again in "
                                f"{RETRY_STOP_S:.0f} s", severity="error", timeout=30)  # fmt: skip
        for part in parts:
            if part.host not in links:
                failed.append(part.host)
                self.app.notify(f"{part.host}: node {part.rank} of {part.job.name} not stopped: "
                                "no link, or read-only", severity="error", timeout=30)  # fmt: skip
        if failed:  # a part left waiting holds its GPUs: the watch asks again later
            await asyncio.sleep(RETRY_STOP_S)
            self._asked.difference_update((p.host, p.job.id) for p in parts if p.host in failed)

    def _links(self, nodes: tuple[str, ...], what: str) -> dict[str, AgentLink] | None:
        links = {host: link for host in nodes if (link := self.writable_link(host)) is not None}
        missing = [host for host in nodes if host not in links]
        if not missing:
            return links
        unopened = [host for host in missing if host not in self.hosts.connections]
        why = (
            f"{', '.join(unopened)} not open in this dashboard: run `eagle-console` with no host "
            "name to open every host" if unopened
            else f"no link to {', '.join(missing)} now, or read-only"
        )  # fmt: skip
        self.app.notify(f"{what}: {why}; a job across boxes starts on every box or on none",
                        severity="warning", timeout=20)  # fmt: skip
        return None
