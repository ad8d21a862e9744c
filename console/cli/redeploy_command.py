"""`eagle-console redeploy HOST JOB [--token-budget N] [--argv ...]`: the R key, for scripts.

Before anything is stopped it prints the advice the TUI's `R` shows (console.model.budget_advice):
a run heading past its budget gets its projection and the suggested `--token-budget`, which
`--token-budget N` applies. Host text is sanitised and never read as markup.
"""

from __future__ import annotations

from rich.console import Console

from agent.protocol import SNAPSHOT, JobInfo, Snapshot, SnapshotParams
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.link.redeploy import RedeployOutcome, find_job, redeploy
from console.model.budget_advice import BudgetAdvice, budget_advice, with_token_budget
from console.model.safe_text import literal


async def run_redeploy(
    host: HostConfig, job_ref: str, argv: tuple[str, ...] | None, token_budget: int | None,
    out: Console,
) -> int:  # fmt: skip
    """Say the advice, then stop, deploy and restart the job; returns the exit code."""
    if host.read_only:
        raise LinkError(
            f"{host.name} is read_only in the config: refusing to stop or start anything"
        )
    link = await open_host_link(host)
    try:
        outcome = await redeploy_with_advice(link, host, job_ref, argv, token_budget, out)
    finally:
        await link.close()
    out.print(literal(outcome.summary()))
    return 0


async def redeploy_with_advice(
    link: AgentLink, host: HostConfig, job_ref: str, argv: tuple[str, ...] | None,
    token_budget: int | None, out: Console,
) -> RedeployOutcome:  # fmt: skip
    """The advice for `job_ref` first, then the redeploy with the command it settles on."""
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    job = find_job(snapshot, job_ref)
    start = restart_argv(job, argv, token_budget)
    for line in advice_lines(host.name, job_ref, budget_advice(job, snapshot), start, job):
        out.print(literal(line))
    edited = None if start == job.argv else start
    return await redeploy(link, host, job.id, edited, report=lambda m: _say(out, m))


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


def _say(out: Console, message: str) -> None:
    out.print(literal(message))
