"""Kill, deploy, restart, and watch until the job runs the new code: the one-key fix.

Each step is said as it happens; a step that fails stops the whole thing with the step's name
and the reason, so nothing half-done goes unreported. The restart uses the job's own spec
(optionally with an edited argv), and the runner resumes from the responses on disk.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    SNAPSHOT,
    DatasetProgress,
    JobInfo,
    LaunchParams,
    Snapshot,
    SnapshotParams,
    StopParams,
    StopResult,
    bundle_digest,
)
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.bundle import local_bundle
from console.link.deploy import deploy, plan_deploy

T = TypeVar("T")
STOP_TIMEOUT_S = 900.0
WATCH_TIMEOUT_S = 180.0
RUNNER_MODULE = "agent.pipeline.inference"


class RedeployError(LinkError):
    """A step of a redeploy failed; nothing after it was done."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"redeploy stopped at step '{step}': {reason}")
        self.step = step


@dataclass(frozen=True, slots=True)
class RedeployOutcome:
    """What a redeploy did and where the job resumed."""

    job: JobInfo
    new_job: JobInfo
    deployed: tuple[str, ...]
    took_s: float
    resumed: DatasetProgress | None

    def summary(self) -> str:
        """One line: what was redeployed, how long it took, and where it resumed."""
        where = f" ({self.job.dataset})" if self.job.dataset else ""
        resumed = ""
        if self.resumed is not None:
            resumed = (
                f": resumed at {self.resumed.responses:,} responses, {self.resumed.tokens:,} tokens"
            )
        return f"{self.job.name}{where} redeployed in {self.took_s:.1f} s{resumed}"


def expected_runner_sha256() -> str:
    """The runner_sha256 a runner started from this console's agent code reports."""
    prefix = "agent/pipeline/"
    return bundle_digest(
        (path[len(prefix) :], content)
        for path, content in local_bundle().files
        if path.startswith(prefix + "inference/")
    )


async def redeploy(
    link: AgentLink, host: HostConfig, job_ref: str, argv: tuple[str, ...] | None = None,
    report: Callable[[str], None] = lambda message: None,
) -> RedeployOutcome:  # fmt: skip
    """Stop `job_ref` (id or name), deploy, start it again, and wait for the new code to run."""
    started = time.monotonic()
    job = find_job(await _snapshot(link), job_ref)
    report(f"stopping {job.name} (pid {job.pid})")
    stop: StopResult = await _step("stop", link.call(
        JOBS_STOP, StopParams(job.id), idempotency_key=_key("stop"), timeout_s=STOP_TIMEOUT_S))  # fmt: skip
    if stop.outcome not in ("stopped", "already_exited"):
        raise RedeployError("stop", f"the job is {stop.outcome}; nothing was deployed or started")
    report(f"stopped ({' → '.join(s.action for s in stop.steps) or 'it had exited'}); deploying")
    plans = await _step("deploy", plan_deploy(link, host.deploy)) if host.deploy else []
    installed = await _step("deploy", deploy(link, plans))
    report(f"deployed {len(installed)} file(s); starting {job.name} again")
    new_job: JobInfo = await _step("start", link.call(
        JOBS_LAUNCH, LaunchParams(job.name, job.dataset, argv), idempotency_key=_key("launch")))  # fmt: skip
    resumed = await _step("watch", watch_new_code(link, job, new_job))
    return RedeployOutcome(
        job, new_job, tuple(r.target for r in installed), time.monotonic() - started, resumed
    )


def find_job(snapshot: Snapshot, job_ref: str) -> JobInfo:
    """The job with this id; or the one running job with this name, or writing this dataset.

    `inference/B3_math` names the running `inference` job on dataset B3_math.
    """
    name, _, dataset = job_ref.partition("/")
    live = [job for job in snapshot.jobs if job.state in ("running", "starting")]
    by_id = [job for job in snapshot.jobs if job.id == job_ref]
    by_name = [job for job in live if job.name == name and (not dataset or job.dataset == dataset)]
    by_dataset = [job for job in live if job.dataset == job_ref]
    found = by_id or by_name or by_dataset
    if len(found) != 1:
        names = (
            ", ".join(sorted({f"{j.name} ({j.id}, {j.state})" for j in snapshot.jobs})) or "none"
        )
        what = "no" if not found else "more than one running"
        raise RedeployError("find", f"{what} job {job_ref!r}; jobs: {names}")
    return found[0]


async def watch_new_code(link: AgentLink, old: JobInfo, new: JobInfo) -> DatasetProgress | None:
    """Wait until the new job runs; for our runner, until its runner.json shows the new code."""
    is_runner = RUNNER_MODULE in old.argv
    expected = expected_runner_sha256() if is_runner else None
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while time.monotonic() < deadline:
        snapshot = await _snapshot(link)
        job = next((j for j in snapshot.jobs if j.id == new.id), None)
        dataset = next((d for d in snapshot.datasets if d.name == new.dataset), None)
        if job is not None and job.state in ("failed", "lost", "killed"):
            raise RedeployError(
                "watch", f"the new {job.name} {job.state} (exit {job.exit_code}); see its log"
            )
        if (
            job is not None
            and job.state == "running"
            and (
                expected is None
                or (
                    dataset is not None
                    and dataset.runner_sha256 == expected
                    and dataset.writer_active
                )
            )
        ):
            return dataset
        await asyncio.sleep(0.2)
    raise RedeployError(
        "watch", f"the new {new.name} did not report the new code within {WATCH_TIMEOUT_S:g} s"
    )


async def _snapshot(link: AgentLink) -> Snapshot:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    return snapshot


async def _step(name: str, work: Awaitable[T]) -> T:
    try:
        return await work
    except RedeployError:
        raise
    except LinkError as exc:
        raise RedeployError(name, str(exc)) from None


def _key(what: str) -> str:
    return f"redeploy-{what}-{secrets.token_hex(6)}"
