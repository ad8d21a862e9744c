"""A redeploy, carried by the agent: stop, swap the files in, start, watch how the new run goes.

Each phase is written down before it runs and is safe to run again, so an agent restarted in
the middle goes on where it was; a link lost at any step changes nothing. When the new code
does not run (a file will not swap in, the start is refused, the new run fails) the files are
put back and the job is started again on its old code: the run ends on the new code or on the
old one, running, never stopped and forgotten. Only if even the old run cannot start again
does it end `failed`, and then it says so in an alert with the command that starts it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.datasets.code_digest import code_digest
from agent.errors import AgentError
from agent.files import FileError, Roots
from agent.operations import staged_files
from agent.operations.box import Box
from agent.operations.journal import Journal
from agent.operations.records import OperationRecord
from agent.operations.redeploy_watch import WATCH_S, Verdict, ending, read_run_record, settled
from agent.protocol import (
    LIVE_JOB_STATES,
    JobInfo,
    LaunchParams,
    RedeployParams,
    StagedFile,
    StepState,
    from_wire,
)

WATCH_POLL_S = 0.5
RUNNER_MODULE = "agent.pipeline.inference"
RUNNER_PACKAGE = Path(__file__).resolve().parents[1] / "pipeline" / "inference"


class Redeploy:
    """The phases of one redeploy, run from wherever its record says it stands."""

    def __init__(
        self, record: OperationRecord, box: Box, journal: Journal, roots: Callable[[], Roots]
    ) -> None:
        self.record = record
        self.box = box
        self.journal = journal
        self.roots = roots
        self.params = from_wire(RedeployParams, record.params)

    async def run(self) -> None:
        """Run the phases until the record ends."""
        phases: dict[str, Callable[[], Awaitable[None]]] = {
            "begin": self._stop, "stop": self._stop, "install": self._install,
            "start": self._start, "watch": self._watch, "rollback": self._rollback,
            "restore": self._restore,
        }  # fmt: skip
        while self.record.phase != "end":
            phase = phases.get(self.record.phase)
            if phase is None:
                self.journal.end(self.record, "failed", f"unknown phase {self.record.phase!r}")
                return
            await phase()

    # ------------------------------------------------------------ forward

    async def _stop(self) -> None:
        self.journal.phase(self.record, "stop")
        job = await self._old_job()
        if job is None:
            return
        if job.state not in LIVE_JOB_STATES:
            self._step("stop", "skipped", f"it had ended ({ending(job)})")
            self.journal.phase(self.record, "install")
            return
        self._step("stop", "running", f"stopping pid {job.pid} (its stop signal, then the grace)")
        try:
            result = await self.box.stop(job.id)
        except AgentError as exc:
            self._fail_before_change("stop", exc.message)
            return
        if result.outcome == "lost":
            why = "its processes can no longer be told apart from others (lost)"
            self._fail_before_change("stop", why)
            return
        steps = " → ".join(step.action for step in result.steps) or "it had exited"
        self._step("stop", "done", steps)
        self.journal.phase(self.record, "install")

    async def _install(self) -> None:
        files = self.params.files
        if not files:
            self._step("deploy", "skipped", "no file differs")
            self.journal.phase(self.record, "start")
            return
        installed: list[str] = self.record.notes.setdefault("installed", [])
        self._step("deploy", "running", f"swapping in {len(files)} file(s)")
        for item in files:
            if item.target in installed:
                continue
            try:
                await self._swap(item, installed)
            except (FileError, OSError) as exc:
                self._step("deploy", "failed", f"{item.target}: {exc}")
                self._why(f"the deploy failed at {item.target}: {exc}")
                self.journal.phase(self.record, "rollback")
                return
        names = ", ".join(installed) or "none (every file already was the new version)"
        self._step("deploy", "done", f"swapped in: {names}")
        self.journal.phase(self.record, "start")

    async def _swap(self, item: StagedFile, installed: list[str]) -> None:
        """Swap one file in, noting it before the swap so that a resumed redeploy knows."""
        notes, roots = self.record.notes, self.roots()
        if await asyncio.to_thread(staged_files.already_new, roots, item):
            if notes.get("installing") == item.target:  # swapped in before the agent restarted
                installed.append(item.target)
                self.journal.save(self.record)
            return
        notes["installing"] = item.target
        self.journal.save(self.record)
        await asyncio.to_thread(staged_files.swap_in, roots, item)
        installed.append(item.target)
        self.journal.save(self.record)

    async def _start(self) -> None:
        self.journal.phase(self.record, "start")
        params = self._launch_params(new=True)
        self._step("start", "running", f"starting {self.record.subject}")
        try:
            job = await self.box.launch(params, f"{self.record.id}:start")
        except AgentError as exc:
            self._step("start", "failed", exc.message)
            self._why(f"the new run could not start: {exc.message}")
            self.journal.phase(self.record, "rollback")
            return
        self.record.new_job_id = job.id
        self._step("start", "done", f"started as {job.id} (pid group {job.pgid})")
        self.journal.phase(self.record, "watch")

    async def _watch(self) -> None:
        until = float(self.record.notes.setdefault("watch_until", time.time() + WATCH_S))
        self._step("watch", "running", "waiting for the new run to report the new code, or to end")
        verdict = await self._verdict(until)
        if not verdict.good:
            self._step("watch", "failed", verdict.detail)
            self._why(verdict.detail)
            self.journal.phase(self.record, "rollback")
            return
        self._step("watch", "done", verdict.detail)
        said = "is on the new code" if verdict.ended else "runs the new code"
        self.journal.end(self.record, "done", f"{self.record.subject} {said}: {verdict.detail}")

    async def _verdict(self, until: float) -> Verdict:
        """Look until the new run reports the new code, ends, or the time allowed is up."""
        expected = code_digest(str(RUNNER_PACKAGE)) if self._is_runner() else None
        datasets = self.box.pipeline.datasets
        root = datasets.root if datasets is not None else ""
        while True:
            snapshot = await self.box.fresh_snapshot()
            job = next((j for j in snapshot.jobs if j.id == self.record.new_job_id), None)
            dataset = next((d for d in snapshot.datasets if job and d.name == job.dataset), None)
            where = job.dataset if job is not None and job.state not in LIVE_JOB_STATES else None
            record = await asyncio.to_thread(read_run_record, root, where) if where else None
            verdict = settled(job, dataset, expected, record, timed_out=time.time() >= until)
            if verdict is not None:
                return verdict
            await asyncio.sleep(WATCH_POLL_S)

    # ------------------------------------------------------------ back

    async def _rollback(self) -> None:
        self.journal.phase(self.record, "rollback")
        installed = list(self.record.notes.get("installed", []))
        if not installed:
            self._step("roll back", "skipped", "no file was swapped in")
            self.journal.phase(self.record, "restore")
            return
        said, failed = [], []
        for target in reversed(installed):
            try:
                said.append(await asyncio.to_thread(staged_files.put_back, self.roots(), target))
            except (FileError, OSError) as exc:
                failed.append(f"{target}: could not be put back: {exc}")
        self._step("roll back", "failed" if failed else "done", "; ".join(said + failed))
        if failed:  # what the phases after it must not say ("the old code runs again")
            self.record.notes["not_put_back"] = failed
        self.journal.phase(self.record, "restore")

    async def _restore(self) -> None:
        self.journal.phase(self.record, "restore")
        why = str(self.record.notes.get("why", "the redeploy failed"))
        if not_put_back := self.record.notes.get("not_put_back"):
            self.journal.end(self.record, "failed", (
                f"{why}; the roll back failed ({'; '.join(map(str, not_put_back))}): the new code "
                "is still on disk, so the job was not started again on it. Put the files back by "
                "hand (eagle-console deploy HOST --rollback PATH), then start the job"
            ))  # fmt: skip
            return
        if not self.record.notes.get("was_running"):
            self.journal.end(self.record, "rolled_back", f"{why}; the files are back as they "
                             "were; the job had ended before the redeploy, so none was started")  # fmt: skip
            return
        self._step("restart old", "running", "starting the run again on its old code")
        try:
            job = await self.box.launch(self._launch_params(new=False), f"{self.record.id}:restore")
        except AgentError as exc:
            self._step("restart old", "failed", exc.message)
            self.journal.end(self.record, "failed", self._left_stopped(why, exc.message))
            return
        self._step("restart old", "done", f"started as {job.id}")
        self.journal.end(self.record, "rolled_back", f"{why}; the old code runs again as {job.id}")

    # ------------------------------------------------------------ helpers

    async def _old_job(self) -> JobInfo | None:
        job = await self.box.own_job(self.record.job_id or "")
        if job is None:
            self._fail_before_change("stop", f"job {self.record.job_id} is gone from the records")
        return job

    def _launch_params(self, *, new: bool) -> LaunchParams:
        """The old job's own request; the new run takes the edited argv when one was given."""
        old = self.box.launch_params(self.record.job_id or "") or LaunchParams(self.record.subject)
        if new and self.params.argv is not None:
            return LaunchParams(old.job, old.dataset, self.params.argv)
        return old

    def _is_runner(self) -> bool:
        argv = self.params.argv or tuple(self.record.notes.get("argv", ()))
        return RUNNER_MODULE in argv

    def _step(self, name: str, state: StepState, detail: str) -> None:
        self.journal.step(self.record, name, state, detail)

    def _why(self, reason: str) -> None:
        self.record.notes["why"] = reason

    def _fail_before_change(self, step: str, reason: str) -> None:
        self._step(step, "failed", reason)
        self.journal.end(self.record, "failed", f"{reason}; nothing was deployed or started")

    def _left_stopped(self, why: str, refusal: str) -> str:
        job = self.box.launch_params(self.record.job_id or "")
        target = f"{job.job}/{job.dataset}" if job and job.dataset else (job.job if job else "JOB")
        return (
            f"{why}, and the old run could not start again: {refusal}. The run is STOPPED: "
            f"start it with `eagle-console start HOST {target}` (or g on its dataset)"
        )
