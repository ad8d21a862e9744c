"""The autopilot's stages, each a pure look at a snapshot that says what to do next.

A stage reads the snapshot and the time the stage before it finished (so a job that ran on
older data is not taken for this run's), and answers with one decision: it is done, skipped,
waiting, or wants a job started or stopped, or it failed. The autopilot acts on the decision;
nothing here acts, so the same snapshot always gives the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from agent.jobs.lines import latest_per_line
from agent.operations.peak_stop import peak_passed
from agent.plans.drafter_checks import failed_text
from agent.plans.hidden_states import no_room_text
from agent.protocol import (
    FAILED_JOB_STATES,
    LIVE_JOB_STATES,
    ExportSummary,
    JobInfo,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    Snapshot,
)

SERVER_KINDS = ("server",)
GPU_STAGE_KINDS = ("hidden_states", "train")
PENDING_RESTART = ("restarting", "waiting")
"""How a restart note begins while the job's restart policy will start it again."""


@dataclass(frozen=True, slots=True)
class Context:
    """What a stage looks at."""

    snapshot: Snapshot
    pipeline: PipelineConfig
    fresh_after: float
    """When the stage before finished: a job started earlier ran on older data."""
    autopilot_since: float
    """When the autopilot started: a stop on request after it pauses the autopilot."""


@dataclass(frozen=True, slots=True)
class Done:
    """The stage is done (`done_at`: when its result was made)."""

    detail: str
    done_at: float


@dataclass(frozen=True, slots=True)
class Skip:
    """The stage has nothing to do on this host."""

    detail: str


@dataclass(frozen=True, slots=True)
class Wait:
    """The stage is under way, or waits for something, said in words."""

    detail: str


@dataclass(frozen=True, slots=True)
class Launch:
    """Start a job for `target` (a dataset, or the stage's own job)."""

    params: LaunchParams
    target: str
    detail: str
    failed_before: str | None = None
    """How the last try of this target ended, when it ended badly: retried once, then it pauses."""
    failed_log: str | None = None
    """That try's log, whose end may show a crash the same argv repeats: then no retry."""


@dataclass(frozen=True, slots=True)
class StopJobs:
    """Stop these jobs (the server, to free the GPUs)."""

    job_ids: tuple[str, ...]
    detail: str


@dataclass(frozen=True, slots=True)
class Fail:
    """The stage cannot go on by itself: the autopilot pauses with this reason."""

    reason: str


Decision = Done | Skip | Wait | Launch | StopJobs | Fail
Stage = Callable[[Context], Decision]


def generate(ctx: Context) -> Decision:
    """Every dataset to its budget: start the inference job where nobody writes."""
    datasets = ctx.snapshot.datasets
    if ctx.pipeline.datasets is None:
        return Fail("no datasets root is configured ([hosts.NAME.datasets] root)")
    if not datasets:  # an empty root, or a snapshot taken before the root was first read
        return Wait(f"a dataset under {ctx.pipeline.datasets.root} (none there yet)")
    left = [d for d in datasets if not d.generation_done]
    if not left:
        past = [
            job for job in ctx.snapshot.jobs
            if job.kind == "inference" and job.state in LIVE_JOB_STATES and not job.external
        ]  # fmt: skip
        if past:  # a run with no budget of its own (--max-samples) would go on past it
            return StopJobs(tuple(j.id for j in past), f"stopping {len(past)} run(s) done "
                            "with their dataset's budget")  # fmt: skip
        ended = max((d.last_response_at or 0.0) for d in datasets)
        return Done(f"{len(datasets)} dataset(s) at their budget or out of prompts", ended)
    name = next((n for n, s in ctx.pipeline.jobs.items() if s.kind == "inference" and s.per_dataset), None)  # fmt: skip
    if name is None:
        return Fail("no per-dataset job of kind inference is configured to generate with")
    lines = {job.dataset: job for job in latest_per_line(ctx.snapshot.jobs) if job.name == name}
    redeploying = _under_operation(ctx.snapshot)
    for dataset in left:
        job = lines.get(dataset.name)
        if dataset.writer_active or dataset.writer or (job and job.state in LIVE_JOB_STATES):
            continue
        if dataset.name in redeploying:  # a redeploy stops and starts its run: not ours to touch
            continue
        if job is not None and _restart_pending(job, ctx):
            continue
        if job is not None and _stopped_on_request(job, ctx):
            return Fail(f"{_named(job)} was stopped on request; resume to start it again")
        failed = _ending(job) if job is not None and _ended_badly(job, ctx) else None
        detail = f"starting {name} on {dataset.name}"
        log = job.log_path if job is not None and failed else None
        return Launch(LaunchParams(name, dataset.name), dataset.name, detail, failed, log)
    writing = sum(1 for d in left if d.writer_active or d.writer)
    done = len(datasets) - len(left)
    return Wait(f"{done} of {len(datasets)} dataset(s) at their budget; {writing} being written")


def job_stage(
    kind: str, gate: Callable[[Context, JobInfo], Decision | None] | None = None,
    before: Callable[[Context], Decision | None] | None = None,
) -> Stage:  # fmt: skip
    """A stage that runs the one configured job of `kind` to exit 0 (then through `gate`).

    `before` may refuse or hold its first start (a plan that does not fit, a check under way).
    """

    def stage(ctx: Context) -> Decision:
        names = [n for n, s in ctx.pipeline.jobs.items() if s.kind == kind and not s.per_dataset]
        if not names:
            return _unconfigured(ctx, kind)
        job = _latest(ctx.snapshot.jobs, set(names), ctx.fresh_after)
        if job is None:
            refused = before(ctx) if before is not None else None
            return refused or _first_start(ctx, names[0], kind)
        if (operation := _operation_on(job, ctx.snapshot)) is not None:
            return Wait(f"{operation.kind} {operation.id} is under way on {job.name}")
        if job.state in LIVE_JOB_STATES or _restart_pending(job, ctx):
            return Wait(f"{job.name} {job.state}" + _note(job))
        verdict = gate(ctx, job) if gate is not None and job.state in ("exited", "failed") else None
        if isinstance(verdict, Fail):  # a gate that failed is not mended by running it again
            return verdict
        if job.state == "exited":
            return verdict or Done(f"{job.name} exited 0", job.ended_at or ctx.snapshot.taken_at)
        if (peaked := _stopped_at_peak(job, ctx)) is not None:
            return Done(peaked, job.ended_at or ctx.snapshot.taken_at)
        if _stopped_on_request(job, ctx):
            return Fail(f"{_named(job)} was stopped on request; resume to start it again")
        if (spanned := _spans_boxes(ctx, names[0])) is not None:
            return Fail(f"{_named(job)} {job.state}{_note(job)}; {spanned}")
        again = f"starting {names[0]} again"
        return Launch(LaunchParams(names[0]), kind, again, _ending(job), job.log_path)

    return stage


def _first_start(ctx: Context, name: str, kind: str) -> Decision:
    """Start the stage's job, or wait for the console where only it can start the job."""
    spanned = _spans_boxes(ctx, name)
    if spanned is not None:
        return Wait(f"waiting for {name}: {spanned}")
    return Launch(LaunchParams(name), kind, f"starting {name}")


def _spans_boxes(ctx: Context, name: str) -> str | None:
    """What to do about a job across boxes, which an agent cannot start alone; None otherwise."""
    nodes = ctx.pipeline.jobs[name].nodes
    if not nodes:
        return None
    return (
        f"it spans {len(nodes)} boxes ({', '.join(nodes)}), which only the console starts "
        f"together: t in the dashboard, or `eagle-console start HOST {name}`"
    )


def hidden_states_room(ctx: Context) -> Fail | None:
    """A hidden-states job whose plan does not fit its disk is not started: it would fill it."""
    plan = ctx.snapshot.hidden_states_plan
    if plan is None or plan.fits is not False:
        return None
    return Fail(f"the hidden states will not fit: {no_room_text(plan)}")


def hidden_states_checked(ctx: Context) -> Decision | None:
    """Training waits for the check of the hidden states, and never starts on failed ones.

    A check that could not be run (an unknown target or trainer) holds nothing: it says why.
    """
    check = ctx.snapshot.hidden_states_check
    names = {n for n, spec in ctx.pipeline.jobs.items() if spec.kind == "hidden_states"}
    capture = _latest(ctx.snapshot.jobs, names, ctx.fresh_after)
    if capture is None or capture.state != "exited":
        return None
    if check is None or check.job_id != capture.id or check.note == "checking":
        return Wait(f"checking the hidden states {capture.name} wrote")
    if check.ok is False:
        return Fail(f"the hidden states {capture.name} wrote failed their check ({check.files:,} "
                    f"files, {check.checked} opened): {'; '.join(check.problems[:3])}")  # fmt: skip
    return None


def export_gate(ctx: Context, job: JobInfo) -> Decision | None:
    """An export whose conversations do not reproduce the ids is not training data."""
    export = ctx.snapshot.export
    if export is None or export.job_id != job.id:
        return Wait("the export's report")
    if export.roundtrip_flagged:
        return Fail(
            f"the export's conversation form is exact for {_exact_share(export)}, under the "
            f"{export.roundtrip_threshold:.0%} asked (X shows the first difference, why, and "
            "whether another --chat-template would help); train from ids.jsonl, the exact tokens "
            "(the export's trainers/specforge.json)"
        )
    return None


def _exact_share(export: ExportSummary) -> str:
    """Counts where the report has them; else the share rounded down (never up to the gate)."""
    checked = sum(d.roundtrip_checked for d in export.datasets)
    if checked:
        return f"{sum(d.roundtrip_matched for d in export.datasets):,} of {checked:,} conversations"
    share = export.roundtrip_share
    return "no conversation" if share is None else f"{math.floor(share * 1000) / 10:.1f}%"


def evaluate_gate(ctx: Context, job: JobInfo) -> Decision | None:
    """The evaluation is done once its verdict is read."""
    evaluation = ctx.snapshot.evaluation
    if evaluation is None or evaluation.job_id != job.id:
        return Wait("the evaluation's eval.json")
    return Done(evaluation.verdict, job.ended_at or ctx.snapshot.taken_at)


def free_gpus(ctx: Context) -> Decision:
    """Stop the agent's server jobs when a later stage needs the GPUs.

    It makes no data: its done time is the stage before's, so what the GPU stages did on this
    data stays done. Where they all already have (an autopilot started again after its verdict),
    the servers are left serving.
    """
    kinds = {spec.kind for spec in ctx.pipeline.jobs.values()}
    if not kinds & set(GPU_STAGE_KINDS):
        return Skip("no hidden-states or training job needs the GPUs")
    if _gpu_stages_done(ctx):
        return Done("the GPU stages are done on this data: the servers stay", ctx.fresh_after)
    servers = [
        job for job in ctx.snapshot.jobs
        if job.kind in SERVER_KINDS and job.state in LIVE_JOB_STATES and not job.external
    ]  # fmt: skip
    if servers:
        names = ", ".join(job.name for job in servers)
        return StopJobs(tuple(job.id for job in servers), f"stopping {names} to free the GPUs")
    return Done("no server of the agent's holds the GPUs", ctx.fresh_after)


def _gpu_stages_done(ctx: Context) -> bool:
    """True when each configured GPU stage's job has a run on this data that the stage takes."""
    for kind in GPU_STAGE_KINDS:
        names = {n for n, s in ctx.pipeline.jobs.items() if s.kind == kind and not s.per_dataset}
        if not names:
            continue
        job = _latest(ctx.snapshot.jobs, names, ctx.fresh_after)
        if job is None or (job.state != "exited" and _stopped_at_peak(job, ctx) is None):
            return False
    return True


def serve(ctx: Context) -> Decision:
    """The drafter's server, and the baseline server when the evaluation compares with one."""
    wanted = [("drafter_server", "drafter")]
    evaluate = [s for s in ctx.pipeline.jobs.values() if s.kind == "evaluate"]
    if any("--baseline" in spec.argv for spec in evaluate):
        wanted.append(("server", "baseline"))
    started: list[JobInfo] = []
    for kind, target in wanted:
        names = [n for n, s in ctx.pipeline.jobs.items() if s.kind == kind and not s.per_dataset]
        if not names:
            if kind == "drafter_server":
                return Skip("no job of kind drafter_server is configured")
            continue
        job = _latest(ctx.snapshot.jobs, set(names), 0.0)
        if job is None or job.state not in LIVE_JOB_STATES:
            held = drafter_checked(ctx) if kind == "drafter_server" else None
            if held is not None:
                return held
            failed = _ending(job) if job and _ended_badly(job, ctx) else None
            log = job.log_path if job and failed else None
            return Launch(LaunchParams(names[0]), target, f"starting {names[0]}", failed, log)
        started.append(job)
    return Done(
        "serving: " + ", ".join(job.name for job in started),
        max(job.started_at or 0.0 for job in started),
    )


def drafter_checked(ctx: Context) -> Decision | None:
    """The drafter is served only once its checkpoint passed the drafter check.

    A check that could not be run (no target found, say) holds nothing: the panel says why.
    """
    check = ctx.snapshot.drafter_check
    if check is not None and check.ok is None and check.note == "checking":
        return Wait(f"checking the drafter {check.checkpoint}")
    if check is not None and check.ok is False:
        lines = failed_text(check, fixes=True)
        return Fail(f"the drafter {check.checkpoint} failed its check: {lines}; fix it and "
                    "resume, or serve it anyway by hand (start --force)")  # fmt: skip
    return None


STAGES: tuple[tuple[str, Stage], ...] = (
    ("generate", generate),
    ("export", job_stage("export", export_gate)),
    ("vocab", job_stage("vocab")),
    ("free gpus", free_gpus),
    ("hidden states", job_stage("hidden_states", before=hidden_states_room)),
    ("train", job_stage("train", before=hidden_states_checked)),
    ("export drafter", job_stage("drafter_export")),
    ("serve", serve),
    ("evaluate", job_stage("evaluate", evaluate_gate)),
)


def _under_operation(snapshot: Snapshot) -> set[str | None]:
    """The datasets whose run an operation under way stops and starts again."""
    jobs = {job.id: job for job in snapshot.jobs}
    return {
        jobs[info.job_id].dataset
        for info in snapshot.operations
        if not info.ended and info.job_id in jobs
    }


def _unconfigured(ctx: Context, kind: str) -> Decision:
    """No job of `kind` in the config: skipped, unless one still runs (an apply removed it).

    `apply` removing the train job while it ran made the autopilot skip training, serve the
    drafter, evaluate it and report a verdict while training still ran.
    """
    live = [j for j in ctx.snapshot.jobs if j.kind == kind and j.state in LIVE_JOB_STATES]
    if live:
        return Fail(
            f"{_named(live[0])} ({kind}) still runs, but the config names no {kind} job any more: "
            "apply a config with it, or stop it, then resume"
        )
    return Skip(f"no job of kind {kind} is configured")


def _operation_on(job: JobInfo, snapshot: Snapshot) -> OperationInfo | None:
    """An operation under way that stops and starts `job` (a redeploy): its stop is not a person's."""
    return next(
        (info for info in snapshot.operations
         if not info.ended and job.id in (info.job_id, info.new_job_id)),
        None,
    )  # fmt: skip


def _latest(jobs: tuple[JobInfo, ...], names: set[str], since: float) -> JobInfo | None:
    mine = [j for j in jobs if j.name in names and not j.external and (j.started_at or 0) >= since]
    return max(mine, key=lambda job: (job.started_at or 0.0, job.id)) if mine else None


def _restart_pending(job: JobInfo, ctx: Context) -> bool:
    """True while the job's restart policy will (or may yet decide to) start it again."""
    if job.state not in FAILED_JOB_STATES:
        return False
    if job.restart_note is not None:
        return job.restart_note.startswith(PENDING_RESTART)
    spec = ctx.pipeline.jobs.get(job.name)
    return spec is not None and spec.restart == "on-failure"  # not decided yet


def _ended_badly(job: JobInfo, ctx: Context) -> bool:
    return job.state in FAILED_JOB_STATES and (job.started_at or 0) >= ctx.fresh_after


def _stopped_at_peak(job: JobInfo, ctx: Context) -> str | None:
    """How a train job stopped after its peak (`stop_after_peak_evals`) ended, or None."""
    run = next((t for t in ctx.snapshot.training if t.job_id == job.id), None)
    if (
        job.state != "stopped"
        or run is None
        or not peak_passed(ctx.pipeline.jobs.get(job.name), run)
    ):
        return None
    kept = run.best_checkpoint or f"step {run.best_eval_step}"
    return f"{job.name} stopped after its peak; its best is {kept}"


def _stopped_on_request(job: JobInfo, ctx: Context) -> bool:
    return job.state == "stopped" and (job.ended_at or 0) >= ctx.autopilot_since


def _named(job: JobInfo) -> str:
    return f"job {job.name}" + (f" ({job.dataset})" if job.dataset else "")


def _note(job: JobInfo) -> str:
    return f" ({job.restart_note})" if job.restart_note else ""


def _ending(job: JobInfo) -> str:
    how = f"exit {job.exit_code}" if job.exit_code is not None else (job.exit_signal or job.state)
    return f"{_named(job)} {job.state} ({how}){_note(job)}; see its log ({job.log_path})"
