"""The agent runs the hidden-states check once a capture has exited 0, and keeps its verdict.

The check itself (`python -m agent.pipeline.hidden_states_check`) runs bounded in time and output
(agent/host/bounded_process.py), with the interpreter and the bundle the jobs run with; its JSON
report is read as any peer's answer is: size-capped, each field checked. The verdict is in every
snapshot (`hidden_states_check`), a failure is an error alert, and the training stage waits for a
passed one (stages.py `hidden_states_checked`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from agent.bundle import AGENT_PACKAGE
from agent.host.bounded_process import run_bounded
from agent.probes.values import count
from agent.protocol import Alert, HiddenStatesCheck, HiddenStatesPlan, JobInfo, Snapshot
from agent.tasks import TaskOwner

CHECK_TIMEOUT_S = 900.0
"""Sixteen samples of a 7168-wide target at 2,048 tokens are about 2 GB read."""
MAX_REPORT_BYTES = 256 * 1024
SHOWN_PROBLEMS = 10


class HiddenStatesChecks:
    """The check of each capture that exited 0, run once, its verdict kept."""

    def __init__(self, tasks: TaskOwner) -> None:
        self.tasks = tasks
        self._verdicts: dict[str, HiddenStatesCheck] = {}
        self._latest: str | None = None

    async def heard(self, snapshot: Snapshot) -> None:
        """Start the check of the latest capture that exited 0 (an observer listener)."""
        job = latest_capture(snapshot.jobs)
        if job is None or job.state != "exited" or job.id in self._verdicts:
            return
        self._latest = job.id
        plan = snapshot.hidden_states_plan
        why_not = _why_unchecked(plan)
        if why_not or plan is None:
            self._verdicts[job.id] = HiddenStatesCheck(job.id, None, note=f"not checked: {why_not}")
            return
        self._verdicts[job.id] = HiddenStatesCheck(job.id, None, note="checking")
        _ = self.tasks.spawn(self._check(job, plan), f"hidden-states check {job.id}")

    def latest(self) -> HiddenStatesCheck | None:
        """The verdict on the latest capture (safe from any thread)."""
        return self._verdicts.get(self._latest) if self._latest is not None else None

    def alerts(self, now: float) -> list[Alert]:
        """An error while the latest capture's check failed."""
        verdict = self.latest()
        if verdict is None or verdict.ok is not False:
            return []
        return [Alert("hidden_states_check_failed", "error", (
            f"hidden states of {verdict.job_id} failed their check: "
            + "; ".join(verdict.problems[:3]) + "; training will not start on them"
        ), verdict.job_id, now)]  # fmt: skip

    async def _check(self, job: JobInfo, plan: HiddenStatesPlan) -> None:
        expected = ("--expected", str(plan.records)) if plan.records is not None else ()
        argv = (sys.executable, "-m", "agent.pipeline.hidden_states_check", "--hidden-states",
                plan.output, "--trainer", plan.trainer, "--hidden-size", str(plan.hidden_size),
                "--dtype", plan.dtype, *expected)  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(AGENT_PACKAGE.parent))
        try:
            answer = await run_bounded(argv, CHECK_TIMEOUT_S, MAX_REPORT_BYTES, env)
        except OSError as exc:
            self._verdicts[job.id] = HiddenStatesCheck(job.id, None, note=f"not run: {exc}")
            return
        if answer.timed_out or answer.flooded:
            why = "no answer within" if answer.timed_out else "more output than"
            limit = f"{CHECK_TIMEOUT_S:g} s" if answer.timed_out else f"{MAX_REPORT_BYTES:,} bytes"
            self._verdicts[job.id] = HiddenStatesCheck(job.id, None, note=f"not run: {why} {limit}")
            return
        self._verdicts[job.id] = verdict_of(job.id, answer.out, answer.err)


def latest_capture(jobs: tuple[JobInfo, ...]) -> JobInfo | None:
    """The agent's latest hidden-states job."""
    captures = [j for j in jobs if j.kind == "hidden_states" and not j.external]
    return max(captures, key=lambda j: (j.started_at or 0.0, j.id), default=None)


def verdict_of(job_id: str, out: bytes, err: bytes) -> HiddenStatesCheck:
    """The check's report read as a peer's answer: an unreadable one is no verdict."""
    try:
        report: Any = json.loads(out)
        files, checked = count(report["files"]), count(report["checked"])
        expected = report["expected"]
        problems = tuple(_problem(p) for p in report["problems"][:SHOWN_PROBLEMS])
        ok = report["ok"]
        if files is None or checked is None or not isinstance(ok, bool):
            raise ValueError("a count or the verdict is not one")
    except (ValueError, KeyError, TypeError) as exc:
        said = err.decode(errors="replace").strip().splitlines()[-1:] or [str(exc)]
        return HiddenStatesCheck(job_id, None, note=f"no report: {said[0][:200]}")
    return HiddenStatesCheck(job_id, ok, files, count(expected), checked, problems)


def _problem(item: Any) -> str:
    return f"{str(item['file'])[:200]}: {str(item['field'])[:60]}: {str(item['problem'])[:300]}"


def _why_unchecked(plan: HiddenStatesPlan | None) -> str:
    if plan is None:
        return "no hidden-states job is configured"
    if not plan.trainer or plan.hidden_size is None:
        return f"the target or the trainer is unknown ({plan.note})"
    return ""
