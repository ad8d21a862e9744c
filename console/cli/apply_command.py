"""`eagle-console apply HOST [--yes] [--dry-run] [--json]`: make the box run this config, on purpose.

The agent keeps the config it runs: a console that connects with another one only learns how
they differ (hello's answer), and looking never changes what the box does. This is the
one way to change it, as `kubectl apply` is: it prints what would change, asks (or takes
`--yes`; without a terminal and without `--yes` it refuses), and applies. The verbs that start
jobs refuse while the configs differ (the jobs would be the box's, not the ones the user reads);
the others warn. Exit codes: 0 applied or nothing to apply, 1 declined or failed, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from console.cli.output import say, stderr_console, stdout_console
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.model.config_drift import apply_plan_lines, drift_text, not_started_text
from console.model.safe_text import literal

EXIT_OK, EXIT_DECLINED, EXIT_USAGE = 0, 1, 2


def add_parser(commands: Any) -> None:
    """The `apply` verb's parser, added to `eagle-console`'s subcommands."""
    apply = commands.add_parser(
        "apply", help="make the box run this config: say what changes, then apply it"
    )
    apply.add_argument("host", help="a host from the config's [hosts]")
    apply.add_argument("--yes", action="store_true", help="apply without asking (scripts)")
    apply.add_argument(
        "--dry-run", action="store_true", help="say what would change, change nothing"
    )
    apply.add_argument("--json", action="store_true", help="one JSON object: the differences")


async def run_apply(args: argparse.Namespace, host: HostConfig) -> int:
    """Show what applying `host`'s config changes, confirm, apply; returns the exit code."""
    if host.read_only and not args.dry_run:
        raise LinkError(f"{host.name} is read_only in the config: refusing to change anything")
    link = await open_host_link(host)
    try:
        return await _apply(link, args, host, stdout_console())
    finally:
        await link.close()


async def _apply(link: AgentLink, args: argparse.Namespace, host: HostConfig, out: Console) -> int:
    differences = link.config_differences
    if not differences:
        taken = link.hello_result is not None and link.hello_result.pipeline_taken
        said = "ran no config yet and took this one" if taken else "already runs this config"
        _say(out, args, f"{host.name} {said}: nothing to apply", host.name, (), applied=False)
        return EXIT_OK
    if not args.json:
        for line in apply_plan_lines(host.name, differences):
            out.print(literal(line))
    if args.dry_run:
        _say(out, args, "dry run: nothing applied", host.name, differences, applied=False)
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            stderr_console().print(
                literal(f"eagle-console: {host.name}: not applied: pass --yes to apply it "
                        "without a terminal")
            )  # fmt: skip
            return EXIT_USAGE
        if not _confirmed():
            stderr_console().print("not applied.")
            return EXIT_DECLINED
    changed = await link.apply_pipeline(host.pipeline)
    text = "; ".join(changed) or "it already ran this config"
    _say(out, args, f"applied to {host.name}: {text}", host.name, changed, applied=True)
    return EXIT_OK


def _confirmed() -> bool:
    err = stderr_console()
    err.print("Type yes to apply it: ", end="")
    err.file.flush()
    return sys.stdin.readline().strip() == "yes"


def _say(
    out: Console, args: argparse.Namespace, text: str, host: str, differences: tuple[str, ...],
    *, applied: bool,
) -> None:  # fmt: skip
    wire = {"host": host, "differences": list(differences), "applied": applied}
    say(out, bool(args.json), text, wire)


def refuse_start_if_config_differs(link: AgentLink, host: HostConfig) -> None:
    """A verb about to start jobs stops here while the box runs another config than this one.

    The agent refuses too (`config_differs`); asking first names the host and starts nothing.
    """
    if link.config_differences:
        raise LinkError(not_started_text(host.name, link.config_differences))


def warn_if_config_differs(link: AgentLink, host: HostConfig) -> None:
    """One line on stderr when the box runs another config than this console's."""
    if link.config_differences:
        warning = drift_text(host.name, link.config_differences)
        stderr_console().print(literal(f"eagle-console: warning: {warning}"))
