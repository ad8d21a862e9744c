"""`start` and `stop` for a job across boxes: every box's part at once, and `--wait` to watch them.

`eagle-console start a train` on a job whose config names `nodes = ["a", "b"]` opens a link to
every box, refuses where any box runs another config or is read-only, and starts the parts with
one rendezvous id; `--wait` stays, prints each part's changes, stops the others once one part
fails (no agent can reach another box, so this watch is the console's), and exits 0 only if every
part exited 0. `stop` on any part stops every box's part.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping

from rich.console import Console

from agent.protocol import JOBS_LIST, JobInfo, JobsParams, StopResult, to_wire
from console.cli.apply_command import refuse_start_if_config_differs, warn_if_config_differs
from console.cli.output import say
from console.config import ConsoleConfig, HostConfig, node_spans
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.link.node_jobs import StartedPart, start_on_every_box, stop_parts
from console.model.consequences import stop_steps
from console.model.node_groups import (
    NodePartSeen,
    group_of,
    node_groups,
    parts_to_stop,
    why_stopped,
)
from console.model.safe_text import literal

WATCH_POLL_S = 1.0
EXIT_DONE, EXIT_FAILED = 0, 1


async def run_node_start(
    args: argparse.Namespace, config: ConsoleConfig, nodes: tuple[str, ...], out: Console
) -> int:
    """Start job `args.job` on every box it spans; with `--wait`, watch it to its end."""
    hosts = [config.host(name) for name in nodes]
    for host in hosts:
        if host.read_only:
            raise LinkError(f"{host.name} is read_only in the config: {args.job} spans it, so "
                            "it cannot be started from here")  # fmt: skip
    links = await open_links(hosts)
    try:
        for host in hosts:
            refuse_start_if_config_differs(links[host.name], host)
        parts = await start_on_every_box(links, str(args.job), nodes, force=bool(args.force))
        _say_started(out, args, parts)
        if not args.wait:
            return EXIT_DONE
        rdzv_id = parts[0].job.node.rdzv_id if parts[0].job.node is not None else ""
        return await watch_group(links, config, rdzv_id, out, bool(args.json))
    finally:
        await close_links(links)


async def run_node_stop(
    link: AgentLink, job: JobInfo, host: HostConfig, config: ConsoleConfig, out: Console,
    as_json: bool,
) -> int:  # fmt: skip
    """Stop every box's part of the job across boxes that `job` (on `host`) belongs to."""
    nodes = host.pipeline.jobs[job.name].nodes if job.name in host.pipeline.jobs else ()
    others = [config.host(name) for name in nodes if name != host.name]
    links = {host.name: link} | await open_links(others, fail_on_none=False)
    try:
        for other in others:
            if other.name in links:
                warn_if_config_differs(links[other.name], other)
        jobs = await _jobs(links, every=False)
        group = group_of(node_groups(jobs, node_spans(config.hosts)), host.name, job.id)
        parts = [(part.host, part.job) for part in group.parts] if group else [(host.name, job)]
        if not as_json:
            out.print(literal(f"stopping every box's part: {group.line() if group else job.name}"))
            missing = [name for name in nodes if name not in links]
            if missing:
                out.print(literal(f"no link to {', '.join(missing)}: its part is not stopped"))
        answers = await stop_parts(links, parts)
    finally:
        await close_links({name: lk for name, lk in links.items() if name != host.name})
    return _say_stopped(out, as_json, answers)


async def watch_group(
    links: Mapping[str, AgentLink], config: ConsoleConfig, rdzv_id: str, out: Console,
    as_json: bool,
) -> int:  # fmt: skip
    """Watch one launch across boxes to its end, stopping the rest once one part ends it."""
    spans, said, asked = node_spans(config.hosts), "", set[str]()
    while True:
        try:
            jobs = await _jobs(links)
        except LinkError as exc:
            raise LinkError(f"{exc}; the parts run on, unwatched: `eagle-console stop HOST "
                            "NAME` stops every box's part") from None  # fmt: skip
        groups = [g for g in node_groups(jobs, spans) if g.rdzv_id == rdzv_id]
        group = groups[0] if groups else None
        if group is None:
            raise LinkError(f"no box reports a part of rendezvous {rdzv_id} any more")
        if group.line() != said:
            said = group.line()
            say(out, as_json, said, {"group": said, "state": group.state()})
        due = [(part, ended) for part, ended in parts_to_stop([group]) if part.job.id not in asked]
        if due:
            await _stop_the_rest(links, due, out, as_json, asked)
        elif group.state() != "running":
            return EXIT_DONE if group.state() == "exited" else EXIT_FAILED
        await asyncio.sleep(WATCH_POLL_S)


async def open_links(hosts: list[HostConfig], fail_on_none: bool = True) -> dict[str, AgentLink]:
    """A link to each host, opened at once; with `fail_on_none`, any that fails fails them all."""
    results = await asyncio.gather(
        *(open_host_link(host) for host in hosts), return_exceptions=True
    )
    links = {h.name: r for h, r in zip(hosts, results, strict=True) if isinstance(r, AgentLink)}
    failed = [(h, r) for h, r in zip(hosts, results, strict=True) if isinstance(r, BaseException)]
    if failed and fail_on_none:
        await close_links(links)
        host, exc = failed[0]
        raise LinkError(f"{host.name}: {exc}") if not isinstance(exc, LinkError) else exc
    return links


async def close_links(links: Mapping[str, AgentLink]) -> None:
    """Close every link, whatever each says."""
    await asyncio.gather(*(link.close() for link in links.values()), return_exceptions=True)


async def _jobs(
    links: Mapping[str, AgentLink], *, every: bool = True
) -> dict[str, tuple[JobInfo, ...]]:
    """Each box's jobs; a box that cannot answer fails the whole, unless `every` is False."""
    listings = await asyncio.gather(
        *(link.call(JOBS_LIST, JobsParams()) for link in links.values()), return_exceptions=True
    )
    found: dict[str, tuple[JobInfo, ...]] = {}
    for host, listing in zip(links, listings, strict=True):
        if isinstance(listing, LinkError) and every:
            raise listing
        if isinstance(listing, BaseException):
            if every:
                raise LinkError(f"{host}: {listing}")
            continue
        found[host] = listing.jobs
    return found


async def _stop_the_rest(
    links: Mapping[str, AgentLink],
    due: list[tuple[NodePartSeen, NodePartSeen]],
    out: Console,
    as_json: bool,
    asked: set[str],
) -> None:
    ended = due[0][1]
    where = ", ".join(f"node {part.rank} on {part.host}" for part, _ in due)
    say(out, as_json, f"{why_stopped(ended)}: stopping {where}", {"stopping": where})
    asked.update(part.job.id for part, _ in due)
    answers = await stop_parts(links, [(part.host, part.job) for part, _ in due])
    _say_stopped(out, as_json, answers)


def _say_started(out: Console, args: argparse.Namespace, parts: list[StartedPart]) -> None:
    for part in parts:
        node = part.job.node
        rank = f"node {node.rank} of {node.nnodes}, rdzv {node.rdzv_id}" if node else "?"
        text = f"started {part.job.name} on {part.host} as {part.job.id} ({rank}): "
        say(out, bool(args.json), text + " ".join(part.job.argv),
             {"host": part.host, "job": to_wire(part.job)})  # fmt: skip


def _say_stopped(
    out: Console, as_json: bool, answers: list[tuple[str, StopResult | LinkError]]
) -> int:
    code = EXIT_DONE
    for host, answer in answers:
        if isinstance(answer, LinkError):
            say(
                out, as_json, f"{host}: not stopped: {answer}", {"host": host, "error": str(answer)}
            )
            code = EXIT_FAILED
            continue
        text = (
            f"{host}: {answer.job.name} ({answer.job.id}): {answer.outcome} ({stop_steps(answer)})"
        )
        say(out, as_json, text, {"host": host, "result": to_wire(answer)})
        if answer.outcome not in ("stopped", "already_exited"):
            code = EXIT_FAILED
    return code
