"""`eagle-console redeploy HOST JOB [--token-budget N] [--argv ...]`: the R key, for scripts.

Before anything is stopped it prints the advice the TUI's `R` shows (console.model.budget_advice):
a run under a budget its command does not stop at gets its projection and the suggested
`--token-budget`, which `--token-budget N` applies. A dataset whose run has ended gets one line
saying how and when it ended and how to start it again, and nothing is done. The redeploy itself
is the agent's operation: this uploads, asks, and prints each step from the agent's record,
reopening the link if it drops (the box goes on either way). Exit 0 when the run ends on the
new code, 1 when it was rolled back or failed. Host text is sanitised and never read as markup.
"""

from __future__ import annotations

from rich.console import Console

from agent.protocol import (
    LIVE_JOB_STATES,
    SNAPSHOT,
    JobInfo,
    OperationInfo,
    Snapshot,
    SnapshotParams,
)
from console.cli.apply_command import refuse_start_if_config_differs
from console.cli.output import step_printer
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.link.redeploy import (
    JobNotFoundError,
    RedeployError,
    find_job,
    follow_operation,
    start_redeploy,
)
from console.model.budget_advice import BudgetAdvice, budget_advice, with_token_budget
from console.model.redeploy_view import ended_run_line
from console.model.safe_text import literal


async def run_redeploy(
    host: HostConfig, job_ref: str, argv: tuple[str, ...] | None, token_budget: int | None,
    out: Console,
) -> int:  # fmt: skip
    """Say the advice, then have the agent stop, deploy and restart the job; the exit code."""
    if host.read_only:
        raise LinkError(
            f"{host.name} is read_only in the config: refusing to stop or start anything"
        )
    link = await open_host_link(host)
    try:
        refuse_start_if_config_differs(link, host)
        started = await redeploy_with_advice(link, host, job_ref, argv, token_budget, out)
        out.print(literal(f"the agent carries the redeploy as {started.id}; following it"))
        try:
            ended = await follow_operation(
                link, started.id, step_printer(out), lambda: open_host_link(host)
            )
        except LinkError as exc:
            raise LinkError(
                f"{exc}; the agent goes on by itself: `eagle-console events {host.name}` says "
                "how it ended"
            ) from None
    finally:
        await link.close()
    return 0 if ended.state == "done" else 1


async def redeploy_with_advice(
    link: AgentLink, host: HostConfig, job_ref: str, argv: tuple[str, ...] | None,
    token_budget: int | None, out: Console,
) -> OperationInfo:  # fmt: skip
    """The advice for `job_ref` first, then the redeploy asked with the command it settles on."""
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    ended = ended_run_line(host.name, snapshot, job_ref)
    if ended is not None:  # a dataset whose run is over: say so, rather than "no job" and a list
        raise LinkError(ended)
    try:
        job = find_job(snapshot, job_ref)
    except JobNotFoundError as exc:
        raise RedeployError("find", str(exc)) from None
    if job.state not in LIVE_JOB_STATES:
        out.print(literal(f"{job.name} ({job.id}) is not running: it {job.state}; it starts "
                          "again on the new code"))  # fmt: skip
    start = restart_argv(job, argv, token_budget)
    for line in advice_lines(host.name, job_ref, budget_advice(job, snapshot), start, job):
        out.print(literal(line))
    edited = None if start == job.argv else start
    return await start_redeploy(link, host, job.id, edited)


def restart_argv(
    job: JobInfo, argv: tuple[str, ...] | None, token_budget: int | None
) -> tuple[str, ...]:
    """The command to start again: `--argv` or the job's own, with `--token-budget` applied."""
    start = argv if argv else job.argv
    return with_token_budget(start, token_budget) if token_budget is not None else start


def advice_lines(
    host: str, job_ref: str, advice: BudgetAdvice | None, start: tuple[str, ...], job: JobInfo
) -> list[str]:
    """The projection and suggestion (as the TUI's R shows them), and what this run will do."""
    if advice is None:
        return []
    lines = [advice.projection(), advice.suggestion()]
    if start == job.argv:
        lines.append(
            f"Restarting with its own command, as asked; to apply the suggestion instead: "
            f"eagle-console redeploy {host} {job_ref} --token-budget {advice.budget}"
        )
    return lines
