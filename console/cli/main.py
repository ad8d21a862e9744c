"""The `eagle-console` command: the TUI by default, and headless commands for scripts.

Exit codes scripts can rely on: 0 success, 1 failure (a host down, a refused key, an agent
error), 2 usage or config error. Every failure is one clear line on stderr, never a traceback.
Whatever a line holds from the host is sanitised and never read as markup (`literal`).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import sys
import typing
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from console.cli.apply_command import add_parser as add_apply_parser
from console.cli.apply_command import run_apply
from console.cli.box_commands import COMMANDS as BOX_COMMANDS
from console.cli.box_commands import add_parsers as add_box_parsers
from console.cli.box_commands import run_box_command
from console.cli.drafter_command import add_parser as add_check_drafter_parser
from console.cli.output import stderr_console, stdout_console
from console.cli.recipe_command import add_parser as add_recipe_parser
from console.cli.status import HostStatus, fetch_all, print_json, print_tables
from console.cli.sweep_command import add_parser as add_sweep_parser
from console.cli.trust import trust_host
from console.config import (
    ConfigError,
    ConsoleConfig,
    HostConfig,
    console_log_path,
    console_state_dir,
    load_config,
)
from console.link.agent_link import LinkError
from console.model.config_drift import drift_text
from console.model.safe_text import literal
from console.ui.log_file import SanitisingFormatter

if TYPE_CHECKING:
    from console.cli.doctor import Check

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The command line scripts rely on: its names are fixed."""
    parser = OneLineErrors(prog="eagle-console", description=__doc__)
    parser.add_argument("--config", type=Path, help=CONFIG_HELP)
    commands = parser.add_subparsers(dest="command", help="what to do (default: tui)")
    status = commands.add_parser("status", help="print one snapshot of each host")
    status.add_argument("host", nargs="?", help="one host from the config (default: all)")
    status.add_argument("--json", action="store_true", help="one JSON object per host")
    doctor = commands.add_parser("doctor", help="check everything a host needs, one line each")
    doctor.add_argument("host", help=HOST_HELP)
    doctor.add_argument(
        "--json", action="store_true", help='one object: {"host", "ok", "checks": [...]}'
    )
    report = commands.add_parser("report", help="a Markdown run report of one host")
    report.add_argument("host", help=HOST_HELP)
    add_check_drafter_parser(commands)
    add_recipe_parser(commands)
    add_sweep_parser(commands)
    deploy = commands.add_parser(
        "deploy", help="deploy the mapped files (drift, diff, atomic swap)"
    )
    deploy.add_argument("host", help=HOST_HELP)
    deploy.add_argument(
        "--dry-run", action="store_true", help="show drift and diffs, change nothing"
    )
    deploy.add_argument(
        "--rollback", metavar="REMOTE_PATH", help="restore the previous version of a file"
    )
    redeploy = commands.add_parser(
        "redeploy", help="stop a job, deploy, start it again on the new code",
        usage="%(prog)s [-h] [--token-budget N] host job [--argv ARG ...]",
    )  # fmt: skip
    redeploy.add_argument("host", help=HOST_HELP)
    redeploy.add_argument(
        "job",
        help="a job id, a running job's name (NAME/DATASET for a per-dataset job), or a dataset",
    )
    redeploy.add_argument(
        "--token-budget", type=_positive_int, metavar="N",
        help="restart with --token-budget N (what R suggests for a run heading past its budget)",
    )  # fmt: skip
    redeploy.add_argument(
        "--argv", nargs=argparse.REMAINDER, help="start it with this argv instead (comes last)"
    )
    events = commands.add_parser("events", help="what happened on a host, watched or not")
    events.add_argument("host", help=HOST_HELP)
    events.add_argument("--since", default="2h", help="how far back: 90s, 30m, 2h, 1d (default 2h)")
    events.add_argument("--json", action="store_true", help="one JSON object per event")
    trust = commands.add_parser("trust", help="show a host's key and pin it on purpose")
    trust.add_argument("host", help=HOST_HELP)
    trust.add_argument("--yes", action="store_true", help="pin without asking (scripts)")
    demo = commands.add_parser("demo", help="run the console on an embedded demo pipeline")
    demo.add_argument(
        "--ssh", action="store_true",
        help="reach the demo's agent through a real SSH server on loopback, as a remote box",
    )  # fmt: skip
    demo.add_argument(
        "--dir", type=Path, help="build the workspace in this folder (default: a new temp folder)"
    )
    demo.add_argument(
        "--keep", action="store_true", help="keep the workspace after the demo ends (to look at)"
    )
    add_box_parsers(commands)
    add_apply_parser(commands)
    tui = commands.add_parser("tui", help="the dashboard (the default command)")
    tui.add_argument("host", nargs="?", help="one host from the config (default: all)")
    for command in commands.choices.values():  # `status kimi --config F` works as well
        command.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=CONFIG_HELP)
    return parser


CONFIG_HELP = "config file (default: ./eagle-console.toml); before or after the command"


class OneLineErrors(argparse.ArgumentParser):
    """A usage mistake is one line saying what was wrong and where to read more, not a usage dump."""

    def error(self, message: str) -> typing.NoReturn:
        """Print `PROG: error: MESSAGE (see PROG --help)` on stderr and exit 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


HOST_HELP = "a host from the config's [hosts]"


def _positive_int(text: str) -> int:
    """An argparse type: a whole number above zero, or a usage error that says so."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number of tokens")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    if logging.lastResort is not None:  # the handler of warnings when no logging is configured
        logging.lastResort.setFormatter(SanitisingFormatter())
    args = build_parser().parse_args(_default_to_tui(sys.argv[1:] if argv is None else argv))
    err = stderr_console()
    try:
        return _run(args)
    except ConfigError as exc:
        err.print(literal(f"eagle-console: config error: {exc}"))
        return EXIT_USAGE
    except LinkError as exc:
        err.print(literal(f"eagle-console: {exc}"))
        _log_failure(args, exc)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


COMMAND_NAMES = (
    "status", "doctor", "report", "check-drafter", "recipe", "sweep", "events", "deploy", "redeploy", "trust",
    "apply", *BOX_COMMANDS,
    "demo", "tui",
)  # fmt: skip
"""Every subcommand: a first word that is none of them is a host for the TUI."""


def _log_failure(args: argparse.Namespace, exc: LinkError) -> None:
    """The failure in the console's log too: a headless failure left nothing there."""
    from console.ui.log_file import attach_log_file, detach_log_file

    handler = attach_log_file(console_log_path())
    try:
        logging.getLogger("console.cli").warning("%s failed: %s", args.command, exc)
    finally:
        detach_log_file(handler)


def _default_to_tui(argv: list[str]) -> list[str]:
    """`eagle-console [--config F] [HOST]` means the TUI; insert its command name."""
    commands = {*COMMAND_NAMES, "-h", "--help"}
    rest = (
        argv[2:]
        if argv[:1] == ["--config"]
        else argv[1:]
        if argv[:1] and argv[0].startswith("--config=")
        else argv
    )
    if rest and rest[0] in commands:
        return argv
    return argv[: len(argv) - len(rest)] + ["tui"] + rest


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from console.demo import run_demo

        return run_demo(args.dir, args.keep, args.ssh)
    config = load_config(args.config)
    if args.command == "status":
        return _status(config, args.host, as_json=args.json)
    if args.command == "trust":
        return _trust(config, args.host, assume_yes=args.yes)
    if args.command == "deploy":
        from console.cli.deploy_command import run_deploy

        return asyncio.run(
            run_deploy(config.host(args.host), dry_run=args.dry_run, rollback_path=args.rollback)
        )
    if args.command == "redeploy":
        from console.cli.redeploy_command import run_redeploy

        argv = tuple(args.argv) if args.argv else None
        return asyncio.run(run_redeploy(
            config.host(args.host), args.job, argv, args.token_budget, stdout_console()
        ))  # fmt: skip
    if args.command == "doctor":
        return _doctor(config.host(args.host), as_json=args.json)
    if args.command == "report":
        return _report(config.host(args.host))
    if args.command == "recipe":
        from console.cli.recipe_command import run_recipe

        return asyncio.run(run_recipe(args, config.host(args.host)))
    if args.command == "sweep":
        from console.cli.sweep_command import run_sweep

        return asyncio.run(run_sweep(args, config.host(args.host)))
    if args.command == "check-drafter":
        from console.cli.drafter_command import run_check_drafter

        return asyncio.run(run_check_drafter(args, config.host(args.host)))
    if args.command == "events":
        return _events(config.host(args.host), args.since, as_json=args.json)
    if args.command in BOX_COMMANDS:
        return asyncio.run(run_box_command(args, config.host(args.host), config))
    if args.command == "apply":
        return asyncio.run(run_apply(args, config.host(args.host)))
    return _tui(config, args.host)


def _tui(config: ConsoleConfig, host: str | None) -> int:
    from console.link.host_connection import Opener
    from console.link.host_keys import pin_host_key
    from console.link.host_link import open_host_link
    from console.ui.app import ConsoleApp

    if host is not None and host not in config.hosts:
        known = ", ".join(sorted(config.hosts)) or "none configured"
        stderr_console().print(literal(
            f"eagle-console: unknown command or host {host!r}: the commands are "
            f"{', '.join(COMMAND_NAMES)}; the hosts in {config.path} are {known} "
            "(see eagle-console --help)"
        ))  # fmt: skip
        return EXIT_USAGE
    hosts = [config.host(host)] if host else list(config.hosts.values())
    if not hosts:
        raise ConfigError(f"{config.path}: no [hosts] configured")

    def opener(host_config: HostConfig) -> Opener:
        return lambda: open_host_link(host_config)

    openers = {h.name: opener(h) for h in hosts}
    pinners = {h.name: functools.partial(pin_host_key, h) for h in hosts}
    ConsoleApp(
        openers, frozenset(h.name for h in hosts if h.read_only), pinners,
        host_configs={h.name: h for h in hosts}, log_path=console_log_path(),
        settings=config.settings, state_dir=console_state_dir(),
    ).run()  # fmt: skip
    return EXIT_OK


def _status(config: ConsoleConfig, host: str | None, *, as_json: bool) -> int:
    hosts = [config.host(host)] if host else list(config.hosts.values())
    if not hosts:
        raise ConfigError(f"{config.path}: no [hosts] configured")
    statuses = asyncio.run(fetch_all(hosts))
    out = stdout_console()
    (print_json if as_json else print_tables)(statuses, out)
    err = stderr_console()
    for status in statuses:
        _report_failure(status, err)
    return EXIT_FAILURE if any(status.failed for status in statuses) else EXIT_OK


def _report_failure(status: HostStatus, err: Console) -> None:
    if status.error:
        err.print(literal(f"eagle-console: {status.error}"))
    elif status.snapshot is not None:
        for alert in status.snapshot.alerts:
            if alert.kind == "datasets_root":
                err.print(literal(f"eagle-console: {status.host}: {alert.message}"))
        # a failed host's table, and the drift line under it, were not printed
        if status.failed and status.config_differences:
            drift = drift_text(status.host, status.config_differences)
            err.print(literal(f"eagle-console: {status.host}: {drift}"))


def _doctor(host: HostConfig, *, as_json: bool = False) -> int:
    from console.cli.doctor import run_doctor

    checks = asyncio.run(run_doctor(host))
    out = stdout_console()
    if as_json:
        every = [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]
        ok = all(check.ok for check in checks)
        out.file.write(json.dumps({"host": host.name, "ok": ok, "checks": every}) + "\n")
    else:
        print_checks(checks, out)
    if all(check.ok for check in checks):
        return EXIT_OK
    where = f"the console's own log (its failures, with tracebacks): {console_log_path()}"
    stderr_console().print(literal(where))
    return EXIT_FAILURE


def print_checks(checks: list[Check], out: Console) -> None:
    """One line per doctor check: ok or FAIL, its name, and what it found (host text, literal)."""
    for check in checks:
        out.print("ok  " if check.ok else "FAIL", style="green" if check.ok else "red", end=" ")
        out.print(literal(f"{check.name:9} {check.detail}"))


def _report(host: HostConfig) -> int:
    from console.cli.report import markdown_report

    status = asyncio.run(fetch_all([host]))[0]
    if status.snapshot is None:
        raise LinkError(status.error or f"{host.name}: no snapshot")
    print(markdown_report(host.name, status.snapshot))  # noqa: T201
    return EXIT_OK


def _events(host: HostConfig, since: str, *, as_json: bool) -> int:
    from console.cli.events import fetch_events, parse_span, print_events

    try:
        since_s = parse_span(since)
    except ValueError as exc:
        stderr_console().print(literal(f"eagle-console: --since: {exc}"))
        return EXIT_USAGE
    found = asyncio.run(fetch_events(host, since_s))
    print_events(found, stdout_console(), as_json=as_json)
    return EXIT_OK


def _trust(config: ConsoleConfig, name: str, *, assume_yes: bool) -> int:
    return trust_host(config.host(name), assume_yes=assume_yes)
