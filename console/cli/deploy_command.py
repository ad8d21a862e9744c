"""`eagle-console deploy HOST [--dry-run] [--rollback PATH]`: the deploy, for scripts and people.

Paths, digests and diffs come from the host: sanitised, and never read as markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from console.cli.apply_command import warn_if_config_differs
from console.cli.output import stdout_console
from console.config import ConfigError, HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.deploy import FilePlan, deploy, plan_deploy, rollback, unified_diff
from console.link.host_link import open_host_link
from console.model.roles import DEPLOY_ROLES
from console.model.safe_text import literal, sanitise, sanitise_lines
from console.ui.themes import in_role


async def run_deploy(host: HostConfig, *, dry_run: bool, rollback_path: str | None) -> int:
    """Show drift (and diffs), then deploy or roll back; returns the exit code."""
    out = stdout_console()
    if host.read_only and (rollback_path is not None or not dry_run):
        raise LinkError(
            f"{host.name} is read_only in the config: refusing to deploy or roll back (--dry-run works)"
        )
    if not host.deploy and rollback_path is None:
        raise ConfigError(f"hosts.{host.name}: no [[hosts.{host.name}.deploy]] mappings configured")
    link = await open_host_link(host)
    try:
        warn_if_config_differs(link, host)  # its deploy roots confine what lands where
        if rollback_path is not None:
            result = await rollback(link, rollback_path)
            out.print(literal(f"rolled back {result.target} to {result.sha256[:12]}"))
            return 0
        plans = await plan_deploy(link, host.deploy)
        out.print(drift_table(host.name, plans))
        if dry_run:
            await print_diffs(link, plans, out)
            return 0
        for result in await deploy(link, plans):
            previous = (result.previous_sha256 or "none")[:12]
            out.print(literal(
                f"deployed {result.target}: {previous} -> {result.sha256[:12]} (backup {result.backup or 'none'})"
            ))  # fmt: skip
        return 0
    finally:
        await link.close()


def drift_table(host: str, plans: list[FilePlan]) -> Table:
    """Every mapped file and its state."""
    table = Table(title=Text(sanitise(f"{host}: deploy drift")))  # a line of its own
    for column in ("status", "remote", "local", "host sha256", "local sha256"):
        table.add_column(column)
    for plan in plans:
        table.add_row(
            in_role(plan.status, DEPLOY_ROLES[plan.status]), literal(plan.remote),
            literal(str(plan.local or "—")), literal((plan.remote_sha256 or "—")[:12]),
            (plan.local_sha256 or "—")[:12],
        )  # fmt: skip
    return table


async def print_diffs(link: AgentLink, plans: list[FilePlan], out: Console) -> None:
    """The unified diff of every changed file, highlighted."""
    for plan in plans:
        if plan.status == "changed":
            out.print(
                Syntax(
                    sanitise_lines(await unified_diff(link, plan)),
                    "diff",
                    theme="ansi_dark",
                    background_color="default",
                )
            )
