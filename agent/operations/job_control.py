"""Starting, stopping and finding jobs, for consoles, operations and restart policies alike.

Every launch passes here, whoever asks: the one-writer rule (an inference job is refused while
its dataset has a writer) and the GPU guard (a GPU job is refused while something holds the
GPUs) hold for a console's `g`, a redeploy's start, a restart and the autopilot the same way. A
hidden-states job whose plan does not fit is refused to a person unless confirmed (`force`).
This is what the operations get as their `Box` (agent/operations/box.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent.datasets.root_listing import DatasetsRootError
from agent.datasets.tracker import DatasetTracker
from agent.datasets.writers import WriterFinder, second_writer_refusal
from agent.errors import AgentError
from agent.host.procfs import process_info
from agent.jobs.end_watch import EndWatch
from agent.jobs.external import external_target, find_external
from agent.jobs.lines import latest_per_line
from agent.jobs.orphans import find_orphans
from agent.jobs.registry import STOP_FILE
from agent.jobs.spec import GpuBusyError, SpecError, uses_the_snapshot
from agent.jobs.stopper import StopPlan, StopTarget
from agent.jobs.supervisor import Supervisor, launch_params
from agent.plans.drafter_checks import DrafterChecks, failed_text
from agent.plans.hidden_states import no_room_text
from agent.probes.cache import ProbeCache
from agent.probes.training.checkpoints import best_checkpoint_now
from agent.protocol import (
    LIVE_JOB_STATES,
    ErrorCode,
    JobInfo,
    JobsList,
    JobsParams,
    LaunchParams,
    PipelineConfig,
    Request,
    Snapshot,
    StopParams,
    StopResult,
)
from agent.state.health import StateHealth


class JobControl:
    """The agent's jobs, its own and external ones: launch, stop, look."""

    def __init__(
        self, supervisor: Supervisor, probes: ProbeCache, state_health: StateHealth,
        pipeline: Callable[[], PipelineConfig], tracker: Callable[[], DatasetTracker | None],
        snapshot: Callable[[], Awaitable[Snapshot]], end_watch: EndWatch,
        drafter_checks: DrafterChecks | None = None,
    ) -> None:  # fmt: skip
        self.supervisor = supervisor
        self.probes = probes
        self.state_health = state_health
        self._pipeline = pipeline
        self._tracker = tracker
        self._snapshot = snapshot
        self.end_watch = end_watch
        self.drafter_checks = drafter_checks
        self.writers = WriterFinder()
        self._launching = asyncio.Lock()
        """Held from the one-writer check to the job's start, so two launches cannot both pass."""

    @property
    def pipeline(self) -> PipelineConfig:
        """The host's configuration as the agent holds it now."""
        return self._pipeline()

    def gpu_holders(self) -> list[str]:
        """What holds the GPUs now: running GPU jobs, and any process nvidia-smi sees using one."""
        jobs = self.all_jobs()
        holders = [
            f"{job.name} ({job.id})" for job in jobs if job.gpu and job.state in LIVE_JOB_STATES
        ]
        own = {job.pgid for job in jobs if job.pgid is not None and job.gpu}
        for gpu in self.probes.gpus.gpus:
            for pid in gpu.pids:
                info = process_info(pid)
                if info is not None and info.pgid not in own:
                    holders.append(f"pid {pid} on GPU{gpu.index}")
        return holders

    def all_jobs(self) -> tuple[JobInfo, ...]:
        """The agent's own jobs, then the external processes that match the configured patterns."""
        own = self.supervisor.jobs()
        own_groups = {job.pgid for job in own if job.pgid is not None}
        external = find_external(self.pipeline.external, own_groups)
        listed = {job.pid for job in external if job.pid is not None}
        orphans = tuple(j for j in find_orphans(own_groups) if j.pid not in listed)
        return own + external + orphans

    async def jobs_list(self, request: Request[JobsParams]) -> JobsList:
        """Every job: the agent's own and external ones."""
        return JobsList(await asyncio.to_thread(self.all_jobs))

    async def jobs_launch(self, request: Request[LaunchParams]) -> JobInfo:
        """Start a configured job (a retried request returns the job it started)."""
        return await self.launch(request.params, request.idempotency_key or "")

    async def launch(
        self, params: LaunchParams, key: str, lineage: Mapping[str, Any] | None = None
    ) -> JobInfo:
        """Start a configured job, for a console, an operation or a restart policy alike.

        An inference job is refused while its dataset has a writer (one writer per dataset), a
        GPU job while something holds the GPUs.
        """
        if lineage is None and not params.force and not self.supervisor.launched(key):
            await self._refuse_a_drafter_that_failed_its_check(params)
        async with self._launching:
            if not self.supervisor.launched(key):
                await self._refuse_a_second_writer(params)
                await self._refuse_an_overruled_restart(lineage)
                if lineage is None and not params.force:
                    await self._refuse_a_capture_that_does_not_fit(params)
            try:
                holders = await asyncio.to_thread(self.gpu_holders)
                seen = await self._seen_values(params)
                job = await self.supervisor.launch(
                    params, key, self.pipeline, self.dataset_names(), holders, lineage, seen
                )
                self.state_health.wrote(self.supervisor.registry.root)
                self.end_watch.watch([job])
                return job
            except GpuBusyError as exc:
                raise AgentError(ErrorCode.GPU_BUSY, str(exc)) from None
            except SpecError as exc:
                raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None
            except OSError as exc:  # its records could not be written: nothing was left running
                self.state_health.failed(exc)
                raise AgentError(
                    ErrorCode.STORAGE,
                    f"cannot write {exc.filename or self.supervisor.state_dir}: {exc.strerror}; nothing was "
                    f"started (a job whose records cannot be kept is not run). Free space in "
                    f"{self.supervisor.state_dir} and launch again",
                ) from None

    async def _seen_values(self, params: LaunchParams) -> dict[str, str | None]:
        """The placeholders a snapshot fills, for a job that uses them (a fresh snapshot then)."""
        spec = self.pipeline.jobs.get(params.job)
        if spec is None or not uses_the_snapshot(spec):
            return {}
        return {"best_checkpoint": best_checkpoint_now(await self._snapshot())}

    async def _refuse_a_second_writer(self, params: LaunchParams) -> None:
        spec = self.pipeline.jobs.get(params.job)
        if spec is None or spec.kind != "inference" or params.dataset is None:
            return
        tracker = self._tracker()
        if tracker is None or params.dataset not in self.dataset_names():
            return  # the launch itself says what is wrong
        files = tracker.dataset_files([params.dataset])
        jobs = await asyncio.to_thread(self.all_jobs)
        found = await asyncio.to_thread(self.writers.find, files, jobs, fresh=True)
        writers = found.get(params.dataset, [])
        if writers:
            raise AgentError(ErrorCode.DATASET_BUSY, second_writer_refusal(params.dataset, writers))

    async def _refuse_a_capture_that_does_not_fit(self, params: LaunchParams) -> None:
        """A hidden-states job whose plan does not fit, refused unless asked for with `force`.

        The autopilot does not start it either (agent/operations/stages.py); a restart of one
        that ran is the stop-loss's to watch.
        """
        spec = self.pipeline.jobs.get(params.job)
        if spec is None or spec.kind != "hidden_states":
            return
        plan = (await self._snapshot()).hidden_states_plan
        if plan is not None and plan.job == params.job and plan.fits is False:
            raise AgentError(ErrorCode.NO_ROOM, (
                f"the hidden states will not fit: {no_room_text(plan)}; to start it anyway, "
                "confirm in the console or use `start --force`"
            ))  # fmt: skip

    async def _refuse_a_drafter_that_failed_its_check(self, params: LaunchParams) -> None:
        """A drafter server whose checkpoint failed the drafter check, refused unless forced.

        Run before the launch lock (the check reads the checkpoint, seconds at most); a check
        that could not run holds nothing back. Restarts of a server that ran are not checked.
        """
        spec = self.pipeline.jobs.get(params.job)
        if spec is None or spec.kind != "drafter_server" or self.drafter_checks is None:
            return
        verdict = await self.drafter_checks.check_now(await self._snapshot(), job=params.job)
        if verdict.ok is False:
            raise AgentError(ErrorCode.DRAFTER_CHECK_FAILED, (
                f"the drafter {verdict.checkpoint} failed its check: {failed_text(verdict)}; "
                "`check-drafter HOST` says every field and its fix; to serve it anyway, confirm "
                "in the console or use `start --force`"
            ))  # fmt: skip

    async def _refuse_an_overruled_restart(self, lineage: Mapping[str, Any] | None) -> None:
        """A restart policy's launch, refused where a person overruled it while it waited.

        Checked under the launch lock, so a start by hand and a restart never both run: the job
        was stopped since it ended (stop.json), or its line (name and dataset) has a newer run.
        """
        replaced = (lineage or {}).get("restart_of")
        files = self.supervisor.registry.get(replaced) if isinstance(replaced, str) else None
        if files is None:
            return
        if files.read(STOP_FILE) is not None:
            raise AgentError(ErrorCode.OPERATION_BUSY, "a stop was asked for it while it waited")
        jobs = await asyncio.to_thread(self.supervisor.jobs)
        old = next((job for job in jobs if job.id == replaced), None)
        lines = {(job.name, job.dataset): job for job in latest_per_line(jobs)}
        newest = lines.get((old.name, old.dataset)) if old is not None else None
        if newest is not None and newest.id != replaced:
            raise AgentError(ErrorCode.OPERATION_BUSY, f"{newest.id} was started since")

    async def jobs_stop(self, request: Request[StopParams]) -> StopResult:
        """Stop a job: its stop signal, grace, SIGTERM, SIGKILL, with pid checks before each."""
        params = request.params
        target = external_target(params.job_id)
        if target is not None:
            jobs = await asyncio.to_thread(self.all_jobs)
            return await self.supervisor.stop_external(params.job_id, target, jobs)
        return await self.stop(params.job_id)

    async def stop(self, job_id: str) -> StopResult:
        """Stop one of the agent's own jobs with its plan."""
        try:
            return await self.supervisor.stop(job_id)
        except KeyError:
            raise AgentError(ErrorCode.NOT_FOUND, f"no job {job_id!r}") from None

    async def own_job(self, job_id: str) -> JobInfo | None:
        """One of the agent's own jobs as it stands now."""
        files = self.supervisor.registry.get(job_id)
        return None if files is None else await asyncio.to_thread(self.supervisor.info, files)

    def launch_params(self, job_id: str) -> LaunchParams | None:
        """The request that started one of the agent's own jobs."""
        files = self.supervisor.registry.get(job_id)
        return None if files is None else launch_params(files)

    async def fresh_snapshot(self) -> Snapshot:
        """A snapshot taken now (shared with one being taken)."""
        return await self._snapshot()

    async def stop_adopted(self, job_id: str, target: StopTarget, plan: StopPlan) -> StopResult:
        """Stop a process the agent did not start with `plan` (the budget guard's)."""
        jobs = await asyncio.to_thread(self.all_jobs)
        return await self.supervisor.stop_external(job_id, target, jobs, plan)

    def dataset_names(self) -> set[str]:
        """The datasets under the root now (none when it cannot be read)."""
        tracker = self._tracker()
        if tracker is None:
            return set()
        try:
            return set(tracker.names())
        except DatasetsRootError:
            return set()
