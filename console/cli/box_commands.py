"""Headless verbs for scripts, as kubectl and SkyPilot's CLI have them, each with `--json`.

jobs, start, stop, the autopilot and the boot entry. Each prints the facts the TUI's confirmation shows before it acts (what a stop will send, what
the autopilot will run), then what the agent answered. Exit codes: 0 done, 1 refused or failed
on the box (the agent's reason on stderr), 2 usage. Host text is sanitised, never markup; JSON
escapes control characters itself. A verb that starts jobs refuses while the box runs another
config than this console's, naming the differences (console/cli/apply_command.py).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agent.protocol import (
    AUTOPILOT_CONTROL,
    AUTOPILOT_STATUS,
    AUTOSTART_SET,
    AUTOSTART_STATUS,
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    LIVE_JOB_STATES,
    SNAPSHOT,
    AutopilotParams,
    AutopilotStatus,
    AutopilotStatusParams,
    AutostartParams,
    AutostartStatus,
    AutostartStatusParams,
    JobInfo,
    JobsParams,
    LaunchParams,
    Snapshot,
    SnapshotParams,
    StopParams,
    StopResult,
    to_wire,
)
from console.cli.apply_command import refuse_start_if_config_differs, warn_if_config_differs
from console.cli.node_commands import run_node_start, run_node_stop
from console.cli.output import say, stderr_console, stdout_console
from console.config import ConsoleConfig, HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.link.redeploy import find_job
from console.model.autopilot_view import autopilot_line, plan_text, stage_rows
from console.model.consequences import stop_consequences, stop_steps
from console.model.formatting import exit_reason, started_as
from console.model.generate_checks import why_not_generate
from console.model.safe_text import literal, sanitise

HOST_HELP = "a host from the config's [hosts]"
EXIT_REFUSED, EXIT_USAGE = 1, 2
COMMANDS = ("jobs", "start", "stop", "autopilot", "autostart")
STOP_WAIT_S = 3600.0
WAIT_POLL_S = 1.0
Verb = Callable[[AgentLink, argparse.Namespace, HostConfig, Console], Awaitable[int]]


def add_parsers(commands: Any) -> None:
    """The verbs' parsers, added to `eagle-console`'s subcommands."""
    jobs = commands.add_parser("jobs", help="every job on a host: state, pid, exit, restarts")
    _host_and_json(jobs)
    start = commands.add_parser("start", help="start a configured job (NAME or NAME/DATASET)")
    _host_and_json(start)
    start.add_argument("job", help="a job name from the config; NAME/DATASET for a per-dataset job")
    start.add_argument(
        "--wait", action="store_true",
        help="stay until the job ends, and exit 0 only if it exited 0; for a job across boxes, "
        "stop every box's part once one part fails",
    )  # fmt: skip
    start.add_argument(
        "--force", action="store_true",
        help="start even where g would not (a dataset done), a hidden-states plan does not fit, "
        "or the drafter failed its check",
    )  # fmt: skip
    stop = commands.add_parser("stop", help="stop a job the way k does, and wait for the end")
    _host_and_json(stop)
    stop.add_argument("job", help="a job id, a running job's name (NAME/DATASET), or a dataset")
    autopilot = commands.add_parser(
        "autopilot", help="run the pipeline's remaining stages on the box, unattended"
    )
    _host_and_json(autopilot)
    autopilot.add_argument(
        "action", nargs="?", default="status", choices=("start", "pause", "resume", "status"),
        help="start it, pause it (running jobs go on), resume it, or say where it is (default)",
    )  # fmt: skip
    boot = commands.add_parser("autostart", help="start the agent when the box boots (@reboot)")
    _host_and_json(boot)
    change = boot.add_mutually_exclusive_group()
    change.add_argument("--install", action="store_true", help="add the @reboot line")
    change.add_argument("--remove", action="store_true", help="remove the @reboot line")


def _host_and_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", help=HOST_HELP)
    parser.add_argument("--json", action="store_true", help="JSON for scripts, one object a line")


async def run_box_command(
    args: argparse.Namespace, host: HostConfig, config: ConsoleConfig | None = None
) -> int:
    """Run one verb against `host` (`config` for a job across boxes); returns the exit code."""
    mutating = args.command in ("start", "stop") or (
        args.command == "autopilot" and args.action != "status"
    ) or (args.command == "autostart" and (args.install or args.remove))  # fmt: skip
    if mutating and host.read_only:
        raise LinkError(f"{host.name} is read_only in the config: refusing to change anything")
    config = config or ConsoleConfig(Path("."), {host.name: host})
    nodes = _nodes_of(host, args)
    if nodes:
        return await run_node_start(args, config, nodes, stdout_console())
    verbs: dict[str, Verb] = {
        "jobs": _jobs, "start": _start, "stop": functools.partial(_stop, config=config),
        "autopilot": _autopilot, "autostart": _autostart,
    }  # fmt: skip
    link = await open_host_link(host)
    try:
        starts = args.command == "start" or (
            args.command == "autopilot" and args.action in ("start", "resume")
        )
        if starts:
            refuse_start_if_config_differs(link, host)
        else:
            warn_if_config_differs(link, host)
        return await verbs[args.command](link, args, host, stdout_console())
    finally:
        await link.close()


def _nodes_of(host: HostConfig, args: argparse.Namespace) -> tuple[str, ...]:
    """The boxes `start NAME` spans, when its job spans several; else none."""
    if args.command != "start":
        return ()
    spec = host.pipeline.jobs.get(str(args.job))
    return spec.nodes if spec is not None else ()


async def _jobs(link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console) -> int:
    listing = await link.call(JOBS_LIST, JobsParams())
    if args.json:
        out.file.write(json.dumps({"host": host.name, "jobs": [to_wire(j) for j in listing.jobs]}))
        out.file.write("\n")
    elif listing.jobs:
        out.print(jobs_table(listing.jobs))
    else:
        out.print(
            literal(f"no jobs on {host.name}: `eagle-console start {host.name} NAME` starts one")
        )
    return 0


def jobs_table(jobs: tuple[JobInfo, ...]) -> Table:
    """Every job as a table with a header line, kubectl's way."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in ("ID", "NAME", "DATASET", "STATE", "PID", "EXIT", "RESTARTS", "NOTE"):
        table.add_column(column, justify="right" if column in ("PID", "RESTARTS") else "left")
    for job in jobs:
        table.add_row(*(literal(cell) for cell in job_cells(job)))
    return table


def job_cells(job: JobInfo) -> tuple[str, ...]:
    """One job's cells: `exit 1 SIGKILL: why` under EXIT, the restart note under NOTE."""
    ended = " ".join(
        part for part in (
            f"{job.exit_code}" if job.exit_code is not None else "",
            job.exit_signal or "",
        ) if part
    )  # fmt: skip
    why = f": {exit_reason(job)}" if job.exit_reason else ""
    return (
        job.id, job.name, job.dataset or "-", job.state, str(job.pid or "-"),
        f"{ended}{why}" or "-", str(job.restarts), _node_note(job) + (job.restart_note or ""),
    )  # fmt: skip


def _node_note(job: JobInfo) -> str:
    """`node 1 of 2 (rdzv train-1a2b) ` for a box's part of a job across boxes."""
    node = job.node
    return f"node {node.rank} of {node.nnodes} (rdzv {node.rdzv_id}) " if node is not None else ""


async def _start(link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console) -> int:
    name, _, dataset = str(args.job).partition("/")
    refused = await _start_refusal(link, host, name, dataset, bool(args.force))
    if refused is not None:
        code, why = refused
        stderr_console().print(literal(f"eagle-console: {name} not started: {why}"))
        return code
    key = f"start-{secrets.token_hex(6)}"
    params = LaunchParams(name, dataset or None, force=bool(args.force))
    job = await link.call(JOBS_LAUNCH, params, idempotency_key=key)
    where = f" on {job.dataset}" if job.dataset else ""
    say(out, args.json, f"started {job.name}{where} as {job.id} ({started_as(job)}): "
                    f"{' '.join(job.argv)}", to_wire(job))  # fmt: skip
    return await _wait_for_end(link, job, args, out) if args.wait else 0


async def _wait_for_end(
    link: AgentLink, job: JobInfo, args: argparse.Namespace, out: Console
) -> int:
    """`start --wait`: poll the job until it ends; 0 only if it exited 0."""
    while job.state in LIVE_JOB_STATES:
        await asyncio.sleep(WAIT_POLL_S)
        listing = await link.call(JOBS_LIST, JobsParams())
        job = next((j for j in listing.jobs if j.id == job.id), replace(job, state="lost"))
    cells = job_cells(job)
    say(out, args.json, f"{job.name} ({job.id}) {job.state}: {cells[5]}", to_wire(job))
    return 0 if job.state == "exited" else EXIT_REFUSED


async def _start_refusal(
    link: AgentLink, host: HostConfig, name: str, dataset: str, force: bool
) -> tuple[int, str] | None:
    """(exit code, why) when `start` must not ask the agent, else None.

    2 for a usage mistake (no such job or dataset, a dataset missing or extra); 1 where `g` would
    refuse (a dataset done, being written, or with no prompts; --force asks the agent anyway).
    """
    spec = host.pipeline.jobs.get(name)
    if spec is None:
        known = ", ".join(sorted(host.pipeline.jobs)) or "none"
        return EXIT_USAGE, f"no job {name!r} in the host config (configured: {known})"
    if spec.per_dataset != bool(dataset):
        form = f"{name}/DATASET" if spec.per_dataset else name
        return (
            EXIT_USAGE,
            f"{name} {'runs per dataset' if spec.per_dataset else 'is one job'}: name it {form}",
        )
    if spec.kind != "inference" or force:
        return None
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    found = next((d for d in snapshot.datasets if d.name == dataset), None)
    if found is None:
        known = ", ".join(d.name for d in snapshot.datasets) or "none"
        return (
            EXIT_USAGE,
            f"no dataset {dataset!r} under {snapshot.datasets_root} (datasets: {known})",
        )
    why = why_not_generate(found, snapshot.jobs)
    return None if why is None else (EXIT_REFUSED, f"{why} (--force asks the agent anyway)")


async def _stop(
    link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console,
    config: ConsoleConfig,
) -> int:  # fmt: skip
    snapshot = await link.call(SNAPSHOT, SnapshotParams())
    job = find_job(snapshot, str(args.job))
    if job.node is not None and job.state in LIVE_JOB_STATES:
        return await run_node_stop(link, job, host, config, out, bool(args.json))
    if not args.json:
        spec = None if job.external else host.pipeline.jobs.get(job.name)
        out.print(literal(stop_consequences(host.name, snapshot, job.id, spec)))
    if job.state not in LIVE_JOB_STATES:
        said = f"{job.name} ({job.id}) is not running: it {job.state}; nothing to stop"
        say(out, args.json, said, {"job": to_wire(job), "outcome": "not_running"})
        return 0
    key = f"stop-{secrets.token_hex(6)}"
    result: StopResult = await link.call(
        JOBS_STOP, StopParams(job.id), idempotency_key=key, timeout_s=STOP_WAIT_S
    )
    steps = stop_steps(result)
    say(out, args.json, f"{job.name} ({job.id}): {result.outcome} ({steps})", to_wire(result))
    return 0 if result.outcome in ("stopped", "already_exited") else 1


async def _autopilot(
    link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console
) -> int:
    before: AutopilotStatus = await link.call(AUTOPILOT_STATUS, AutopilotStatusParams())
    status = before
    if args.action != "status":
        if args.action == "start" and not args.json:
            out.print(literal(plan_text(before)))
        key = f"autopilot-{secrets.token_hex(6)}"
        status = await link.call(
            AUTOPILOT_CONTROL, AutopilotParams(args.action), idempotency_key=key
        )
    if args.json:
        out.file.write(json.dumps(to_wire(status)) + "\n")
        return 0
    out.print(
        literal(
            autopilot_line(status)
            or "autopilot off: `eagle-console autopilot HOST start` starts it"
        )
    )
    if status.state != "off":
        for name, state, tries, detail in stage_rows(status):
            out.print(literal(f"  {name:<14} {state:<8} {tries:>2}  {detail}"))
    return 0


async def _autostart(
    link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console
) -> int:
    if args.install or args.remove:
        params = AutostartParams("install" if args.install else "remove")
        key = f"autostart-{secrets.token_hex(6)}"
        status = await link.call(AUTOSTART_SET, params, idempotency_key=key)
    else:
        status = await link.call(AUTOSTART_STATUS, AutostartStatusParams())
    say(out, args.json, autostart_text(status), to_wire(status))
    return 0


def autostart_text(status: AutostartStatus) -> str:
    """What is set up, and the lines that start the agent at boot."""
    return sanitise(
        f"{status.detail}\n  crontab line: {status.cron_line}\n  entrypoint:   {status.command}"
    )
