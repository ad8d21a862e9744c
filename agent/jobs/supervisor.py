"""Launching, listing and stopping the agent's jobs; what the daemon's job methods call.

Every job runs under its own shim in a new session (setsid), stdin from /dev/null, output to its
log in the state directory, so it outlives the console and the daemon. Everything known about a
job is in its folder, so a restarted daemon lists and stops the jobs an earlier one started.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.bundle import AGENT_PACKAGE
from agent.files import FileError, sha256_of
from agent.host.procfs import boot_id, is_same_process, process_info, same_boot, start_ticks
from agent.host.sglang_auth import KEY_FILE_ENV
from agent.host.signals import kill_group
from agent.jobs.evaluation_exclude import with_evaluation_excluded
from agent.jobs.nodes import node_record, node_values, read_node
from agent.jobs.registry import (
    CHILD_FILE,
    EXIT_FILE,
    JOB_FILE,
    RESTART_FILE,
    SHIM_FILE,
    STOP_FILE,
    JobFiles,
    Registry,
)
from agent.jobs.spec import GpuBusyError, SpecError, check_dataset_name, render
from agent.jobs.stopper import GroupIdentity, StopPlan, StopTarget, parse_signal, stop_group
from agent.logs import bounded_reason
from agent.pipeline.tokenizer import TRUST_FLAG
from agent.protocol import (
    LIVE_JOB_STATES,
    JobEvent,
    JobInfo,
    JobSpec,
    JobState,
    LaunchParams,
    PipelineConfig,
    StopOutcome,
    StopResult,
    StopStep,
)

Emit = Callable[[JobEvent], Awaitable[None]]
EXTERNAL_PLAN = StopPlan(signal.SIGTERM, 30.0, 10.0)
EXTERNAL_STATE_AFTER: dict[StopOutcome, JobState] = {
    "stopped": "killed",
    "already_exited": "exited",
    "lost": "lost",
}
"""An external process's state once a stop ends (an outcome is not a state: already_exited)."""
STOP_OUTCOMES: tuple[StopOutcome, ...] = typing.get_args(StopOutcome)
HALF_LAUNCHED_S = 60.0
"""A job with neither shim.json nor child.json this long after its launch is lost: its daemon
died between writing job.json and starting the shim."""
STOP_ASKED = "asked"
"""stop.json's outcome from a stop's first signal until its end is recorded over it."""


class Supervisor:
    """The agent's own jobs, from their folders under `<state>/jobs`."""

    def __init__(
        self, state_dir: Path, emit: Emit, write_failed: Callable[[OSError], None] = lambda _: None
    ) -> None:
        self.state_dir = state_dir
        self.registry = Registry(state_dir / "jobs")
        self.emit = emit
        self.write_failed = write_failed
        """Told of a record that could not be written while the action itself went ahead."""
        self._shims: dict[str, subprocess.Popen[bytes]] = {}
        self._stopping: set[str] = set()

    # ------------------------------------------------------------ reading

    def jobs(self) -> tuple[JobInfo, ...]:
        """Every job, oldest first, with its state as of now."""
        self._reap()
        return tuple(self.info(files) for files in self.registry.all())

    def info(self, files: JobFiles) -> JobInfo:
        """One job's state, derived from its files and /proc."""
        job = files.read(JOB_FILE) or {}
        shim, child = files.read(SHIM_FILE), files.read(CHILD_FILE)
        ended, stopped = files.read(EXIT_FILE), files.read(STOP_FILE)
        state, code, signal_name, ended_at = _state(
            files.id in self._stopping, shim, child, ended, stopped, _number(job.get("launched_at"))
        )
        restarts, decision = job.get("restarts"), files.read(RESTART_FILE) or {}
        return JobInfo(
            id=files.id, name=job.get("name", "?"), kind=job.get("kind", "command"), state=state,
            argv=tuple(job.get("argv", ())), pid=(child or {}).get("pid"), pgid=(shim or {}).get("pid"),
            dataset=job.get("dataset"), started_at=job.get("launched_at"), ended_at=ended_at,
            exit_code=code, exit_signal=signal_name, gpu=bool(job.get("gpu")),
            log_path=str(files.log), code_sha256=job.get("code_sha256"), cwd=job.get("cwd"),
            restart_of=_text(job.get("restart_of")),
            restarts=len(restarts) if isinstance(restarts, list) else 0,
            restart_note=_text(decision.get("note")) if state not in LIVE_JOB_STATES else None,
            exit_reason=bounded_reason((ended or {}).get("reason")) if state == "failed" else None,
            node=read_node(job.get("node")),
        )  # fmt: skip

    # ------------------------------------------------------------ launching

    def launched(self, key: str) -> bool:
        """True if a launch with this idempotency key already started its job."""
        return bool(key) and self.registry.by_idempotency_key(key) is not None

    async def launch(
        self, params: LaunchParams, key: str, pipeline: PipelineConfig, datasets: set[str],
        gpu_holders: Sequence[str] = (), lineage: Mapping[str, Any] | None = None,
        seen: Mapping[str, str | None] | None = None,
    ) -> JobInfo:  # fmt: skip
        """Start a configured job; a repeated idempotency key returns the job it started.

        A job with `gpu = true` is refused while `gpu_holders` (other GPU jobs, processes holding
        GPU memory) is not empty: the GPU guard. `lineage` (restart_of, restarts) goes into its
        job.json, so a restarted daemon still counts a restart policy's restarts. `seen` holds
        the values a snapshot gives ({best_checkpoint}).
        """
        existing = self.registry.by_idempotency_key(key)
        if existing is not None:
            return self.info(existing)
        spec = pipeline.jobs.get(params.job)
        if spec is None:
            known = ", ".join(sorted(pipeline.jobs)) or "none"
            raise SpecError(f"no job {params.job!r} in the host config (configured: {known})")
        if spec.gpu and gpu_holders:
            raise GpuBusyError(params.job, list(gpu_holders))
        values = self._values(spec, params, pipeline, datasets) | dict(seen or {})
        rendered = render(params.job, spec, values, params.argv)
        rendered = replace(
            rendered, argv=with_evaluation_excluded(rendered.argv, spec.kind, pipeline, values)
        )
        files = self.registry.create(
            f"{params.job}-{params.dataset}" if params.dataset else params.job,
            {
                "name": params.job, "kind": spec.kind, "dataset": params.dataset,
                "argv": list(rendered.argv), "cwd": rendered.cwd,
                "env": with_key_file(rendered.env, pipeline),
                "gpu": spec.gpu, "stop_signal": spec.stop_signal, "grace_s": spec.grace_s,
                "term_grace_s": spec.term_grace_s, "idempotency_key": key,
                "launched_at": time.time(), "mark": secrets.token_hex(16), "code_sha256": _script_sha256(rendered.argv, rendered.cwd),
                "launch": {"job": params.job, "dataset": params.dataset,
                           "argv": list(params.argv) if params.argv is not None else None},
                "node": node_record(params.node),
                **(lineage or {}),
            },
        )  # fmt: skip
        try:
            self._start_shim(files)
        except OSError:
            shutil.rmtree(files.folder, ignore_errors=True)
            raise
        info = self.info(files)
        await self.emit(JobEvent(info, f"launched {info.name} as pid group {info.pgid}"))
        return info

    def _values(
        self, spec: JobSpec, params: LaunchParams, pipeline: PipelineConfig, datasets: set[str]
    ) -> dict[str, str | None]:
        values: dict[str, str | None] = {
            "python": sys.executable,
            "bundle": str(AGENT_PACKAGE.parent),
            "state_dir": str(self.state_dir),
            "sglang_url": pipeline.sglang_url,
            "api": pipeline.sglang_api or "sglang",
            "model": pipeline.sglang_model,
            "api_key_file": key_file_path(pipeline),
            "tokenizer": pipeline.tokenizer,
            "trust_remote_code": TRUST_FLAG if pipeline.trust_remote_code else "",
            "dataset": None, "dataset_dir": None, "budget": None, "best_checkpoint": None,
            **node_values(params.job, spec, params.node),
        }  # fmt: skip
        if spec.per_dataset and params.dataset is None:
            raise SpecError(f"job {params.job} runs per dataset: say which dataset")
        if params.dataset is not None and pipeline.datasets is not None:
            name = check_dataset_name(params.dataset, datasets)
            config = pipeline.datasets
            budget = config.budgets.get(name, config.budget)
            values |= {
                "dataset": name,
                "dataset_dir": str(Path(config.root) / name),
                "budget": str(budget) if budget is not None else None,
            }
        return values

    def _start_shim(self, files: JobFiles) -> None:
        env = dict(os.environ, PYTHONPATH=str(AGENT_PACKAGE.parent))
        with files.log.open("ab") as log:
            shim = subprocess.Popen(
                [sys.executable, "-m", "agent", "shim", "--job-dir", str(files.folder)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=files.folder, env=env,
                start_new_session=True,
            )  # fmt: skip
        try:
            files.write(
                SHIM_FILE,
                {"pid": shim.pid, "start_ticks": start_ticks(shim.pid), "boot_id": boot_id()},
            )
        except OSError:
            _kill_unrecorded(shim)  # nobody could find it to stop it later: stop it now
            raise
        self._shims[files.id] = shim

    # ------------------------------------------------------------ stopping

    async def stop(self, job_id: str) -> StopResult:
        """Stop one job with its plan, reporting each step as a job event."""
        files = self.registry.get(job_id)
        if files is None:
            raise KeyError(job_id)
        recorded, before = files.read(STOP_FILE), self.info(files)
        if isinstance(recorded, dict) and before.state not in LIVE_JOB_STATES:
            return StopResult(before, _recorded_outcome(recorded), ())  # history stays as it was
        job = files.read(JOB_FILE) or {}
        identity = _identity(files)
        plan = StopPlan(parse_signal(job.get("stop_signal", "SIGTERM")),
                        float(job.get("grace_s", 30)), float(job.get("term_grace_s", 10)))  # fmt: skip

        async def report(step: StopStep) -> None:
            await self.emit(JobEvent(self.info(files), f"sent {step.action} to {list(step.pids)}"))

        self._write_asked(files)
        self._stopping.add(job_id)
        try:
            outcome, steps = await stop_group(identity, plan, report)
        finally:
            self._stopping.discard(job_id)
        self._reap()
        said = ""
        try:
            files.write(
                STOP_FILE,
                {"outcome": outcome, "steps": [s.action for s in steps], "at": time.time()},
            )
        except OSError as exc:  # the job is stopped all the same; only the record is missing
            self.write_failed(exc)
            said = f" (not recorded: cannot write {exc.filename}: {exc.strerror})"
        info = self.info(files)
        await self.emit(JobEvent(info, f"stop of {info.name}: {outcome}{said}"))
        return StopResult(info, outcome, tuple(steps))

    def _write_asked(self, files: JobFiles) -> None:
        """Write the stop down before its first signal.

        An agent killed mid-stop then leaves a record that the job ended because it was asked
        to, so no restart policy undoes the stop.
        """
        try:
            files.write(STOP_FILE, {"outcome": STOP_ASKED, "steps": [], "at": time.time()})
        except OSError as exc:  # the stop goes on; only a restart after an agent crash could follow
            self.write_failed(exc)

    async def stop_external(
        self, job_id: str, target: StopTarget, jobs: tuple[JobInfo, ...],
        plan: StopPlan = EXTERNAL_PLAN,
    ) -> StopResult:  # fmt: skip
        """Stop a process the agent did not start (SIGTERM, 30 s, SIGKILL unless `plan` says).

        The same pid and start-time checks as for the agent's own jobs.
        """
        found = next((job for job in jobs if job.id == job_id), None)
        info = found or JobInfo(job_id, "external", "external", "lost", (), external=True)

        async def report(step: StopStep) -> None:
            await self.emit(JobEvent(info, f"sent {step.action} to {list(step.pids)}"))

        outcome, steps = await stop_group(target, plan, report)
        final = replace(info, state=EXTERNAL_STATE_AFTER[outcome])
        await self.emit(JobEvent(final, f"stop of external {info.name}: {outcome}"))
        return StopResult(final, outcome, tuple(steps))

    def _reap(self) -> None:
        for job_id, shim in list(self._shims.items()):
            if shim.poll() is not None:
                self._shims.pop(job_id, None)  # jobs() may run in two threads at once


def key_file_path(pipeline: PipelineConfig) -> str | None:
    """The host's api_key_file as a path on this box (`~` expanded): never the key itself."""
    key_file = pipeline.sglang_api_key_file
    return str(Path(key_file).expanduser()) if key_file else None


def with_key_file(env: dict[str, str], pipeline: PipelineConfig) -> dict[str, str]:
    """A job's environment with EAGLE_API_KEY_FILE set to the host's key file, if configured.

    The job's own env wins where it sets the variable; the runner and the evaluation read it.
    """
    path = key_file_path(pipeline)
    return {KEY_FILE_ENV: path, **env} if path else env


def _kill_unrecorded(shim: subprocess.Popen[bytes]) -> None:
    """SIGKILL the group of a shim not yet reaped (so its pid cannot have been reused)."""
    with contextlib.suppress(ProcessLookupError):
        kill_group(shim.pid, signal.SIGKILL)
    shim.wait()


def _identity(files: JobFiles) -> GroupIdentity:
    """The group to signal, proven by the processes recorded in this boot (none from another)."""
    shim, child = files.read(SHIM_FILE) or {}, files.read(CHILD_FILE) or {}
    mark = (files.read(JOB_FILE) or {}).get("mark")
    known = tuple(
        (int(record["pid"]), int(record["start_ticks"]))
        for record in (shim, child)
        if record.get("pid") and record.get("start_ticks") is not None
        and same_boot(record.get("boot_id"))
    )  # fmt: skip
    return GroupIdentity(_proven_group(shim, child), known, mark=_text(mark))


def _proven_group(shim: Mapping[str, Any], child: Mapping[str, Any]) -> int | None:
    """The job's group, or None when no record proves one (never 0: that is our own group).

    The shim's pid leads the group; for a job half launched (the daemon died before writing
    shim.json) it is the group of the recorded job process, once /proc shows that very process.
    """
    shim_pid = shim.get("pid")
    if isinstance(shim_pid, int) and shim_pid > 1:
        return shim_pid
    pid, ticks = child.get("pid"), child.get("start_ticks")
    if not (isinstance(pid, int) and isinstance(ticks, int) and same_boot(child.get("boot_id"))):
        return None
    info = process_info(pid)
    if info is None or info.start_ticks != ticks or info.pgid <= 1 or info.pgid == os.getpgid(0):
        return None
    return info.pgid


def launch_params(files: JobFiles) -> LaunchParams:
    """The request that started this job, to start it again the same way."""
    job = files.read(JOB_FILE) or {}
    found = job.get("launch")
    launch: dict[str, Any] = found if isinstance(found, dict) else {}
    argv = launch.get("argv")
    return LaunchParams(
        str(launch.get("job") or job.get("name", "?")),
        _text(launch.get("dataset", job.get("dataset"))),
        tuple(str(part) for part in argv) if isinstance(argv, list) else None,
        node=read_node(job.get("node")),
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _state(
    stopping: bool,
    shim: Mapping[str, Any] | None,
    child: Mapping[str, Any] | None,
    ended: Mapping[str, Any] | None,
    stopped: Mapping[str, Any] | None,
    launched_at: float | None = None,
) -> tuple[JobState, int | None, str | None, float | None]:
    """(state, exit code, exit signal, ended at) from a job's files and /proc."""
    if ended is not None:
        code, signal_name = ended.get("exit_code"), ended.get("exit_signal")
        state: JobState = "exited" if code == 0 else ("killed" if signal_name else "failed")
        if _asked_to_stop(stopped):
            state = "stopped"  # ended because the user stopped it, whatever its exit code says
        elif stopping:
            state = (
                "stopping"  # it exited on the stop's signal; `stopped` once the stop is recorded
            )
        return state, code, signal_name, ended.get("ended_at")
    if shim is None and child is None:  # a launch under way, or one its daemon died in
        fresh = launched_at is None or time.time() - launched_at < HALF_LAUNCHED_S
        return ("starting" if fresh else "lost"), None, None, None
    alive = any(
        record is not None
        and same_boot(record.get("boot_id"))
        and is_same_process(int(record["pid"]), int(record.get("start_ticks") or -1))
        for record in (shim, child)
    )
    if alive:
        live: JobState = (
            "stopping" if stopping else ("running" if child is not None else "starting")
        )
        return live, None, None, None
    if stopped is not None and _asked_to_stop(stopped):
        return (
            "stopped",
            None,
            "SIGKILL" if "SIGKILL" in stopped.get("steps", ()) else None,
            stopped.get("at"),
        )
    return "lost", None, None, None


def _asked_to_stop(stopped: Mapping[str, Any] | None) -> bool:
    """Whether a stop record says the job was stopped, or asked to stop by a stop cut short."""
    return stopped is not None and stopped.get("outcome") in ("stopped", STOP_ASKED)


def _recorded_outcome(recorded: Mapping[str, Any]) -> StopOutcome:
    """The outcome a stop record holds; already_exited when the record is not one we wrote."""
    outcome = "stopped" if recorded.get("outcome") == STOP_ASKED else recorded.get("outcome")
    return next((known for known in STOP_OUTCOMES if known == outcome), "already_exited")


def _script_path(argv: tuple[str, ...], cwd: str | None) -> Path | None:
    """The first .py file in argv: the script a stale-code check compares."""
    part = next((p for p in argv[1:] if p.endswith(".py")), None)
    if part is None:
        return None
    return Path(part) if part.startswith("/") else Path(cwd or ".", part)


def _script_sha256(argv: tuple[str, ...], cwd: str | None) -> str | None:
    path = _script_path(argv, cwd)
    try:  # read a block at a time, and never a FIFO or a device put in the script's place
        return sha256_of(path) if path else None
    except (OSError, FileError):
        return None


def stale_script(job: JobInfo) -> str | None:
    """The script a running job started from, if the file on disk differs from it now."""
    if job.code_sha256 is None:
        return None
    path = _script_path(job.argv, job.cwd)
    now = _script_sha256(job.argv, job.cwd)
    return str(path) if now is not None and now != job.code_sha256 else None
