"""The pipeline's stages in order, each with its state from the agent, and the next sensible step.

generate -> export -> vocab -> stop server -> hidden states -> train -> serve with drafter ->
evaluate. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol import (
    LIVE_JOB_STATES,
    HiddenStatesCheck,
    HiddenStatesPlan,
    JobInfo,
    Snapshot,
)
from console.model.formatting import byte_size, duration
from console.model.safe_text import sanitise

ACTIVE = LIVE_JOB_STATES


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage and where it stands."""

    name: str
    state: str
    """not started, running, done, skipped or failed."""
    detail: str
    key: str
    """The key that moves it on."""


def stages(snapshot: Snapshot) -> list[Stage]:
    """Every stage, in pipeline order."""
    datasets = snapshot.datasets
    complete = sum(d.generation_done for d in datasets)
    writing = any(d.writer_active for d in datasets)
    generate = (
        "done"
        if datasets and complete == len(datasets)
        else ("running" if writing or complete else "not started")
    )
    server = _latest(snapshot.jobs, "server")
    trained = _state(_latest(snapshot.jobs, "train"))
    return [
        Stage("generate", generate, _generate_detail(snapshot, complete), "g"),
        _export_stage(snapshot),
        _job_stage("vocab", _latest(snapshot.jobs, "vocab"), "v"),
        _stop_server_stage(snapshot.jobs, server),
        _hidden_states_stage(snapshot),
        _job_stage("train", _latest(snapshot.jobs, "train"), "t"),
        _serve_stage(snapshot.jobs, trained, server),
        _evaluate_stage(snapshot),
    ]  # fmt: skip


def _stop_server_stage(jobs: tuple[JobInfo, ...], server: JobInfo | None) -> Stage:
    """Done once the GPUs were freed for a GPU stage, though a server may serve again since.

    After training the server comes back (the evaluation's baseline, or the drafter's): the
    stage read "not started" then, as if the GPUs had never been freed.
    """
    if server is None or server.state not in ACTIVE:
        return Stage("stop server", "done", "GPUs free", "s")
    gpu_stages = [job for kind in ("hidden_states", "train") if (job := _latest(jobs, kind))]
    if any((job.started_at or 0.0) < (server.started_at or 0.0) for job in gpu_stages):
        detail = sanitise(f"{server.name} serving again after training")
        return Stage("stop server", "done", detail, "s")
    return Stage("stop server", "not started", "the server holds the GPUs", "s")


def _generate_detail(snapshot: Snapshot, complete: int) -> str:
    """How many datasets are complete, and which of them ran past their budget (its alert's rule)."""
    over = sorted({alert.subject for alert in snapshot.alerts if alert.kind == "over_budget"})
    past = f", {len(over)} over budget ({sanitise(', '.join(over))})" if over else ""
    return f"{complete}/{len(snapshot.datasets)} datasets complete{past}"


def next_stage(items: list[Stage]) -> Stage | None:
    """The first stage that is neither done nor skipped."""
    return next((stage for stage in items if stage.state not in ("done", "skipped")), None)


def _export_stage(snapshot: Snapshot) -> Stage:
    """The export job, and its round trip.

    A conversation file that does not reproduce the tokens fails the stage, ids written or not.
    """
    job = _latest(snapshot.jobs, "export")
    later = any(_latest(snapshot.jobs, kind) for kind in ("vocab", "hidden_states", "train"))
    if job is None and later:
        return Stage("export", "skipped", "later stages started without an export", "x")
    stage = _job_stage("export", job, "x")
    export = snapshot.export
    if export is None or stage.state == "running":
        return stage
    checked = sum(d.roundtrip_checked for d in export.datasets)
    matched = sum(d.roundtrip_matched for d in export.datasets)
    verdict = "under" if export.roundtrip_flagged else "at or above"
    detail = (
        f"{matched:,} of {checked:,} conversations exact, {verdict} the "
        f"{export.roundtrip_threshold:.0%} asked (X: report)"
    )
    return Stage("export", "failed" if export.roundtrip_flagged else stage.state, detail, "x")


def _serve_stage(jobs: tuple[JobInfo, ...], trained: str, server: JobInfo | None) -> Stage:
    """A drafter_server job when one is configured and started; else the server after training."""
    drafter = _latest(jobs, "drafter_server")
    if drafter is not None and drafter.state in ACTIVE:  # serving is this stage done
        return Stage("serve with drafter", "done", sanitise(f"{drafter.name} serving"), "B")
    if drafter is not None:
        return _job_stage("serve with drafter", drafter, "B")
    running = trained == "done" and server is not None and server.state in ACTIVE
    return Stage("serve with drafter", "running" if running else "not started",
                 "start the server with the drafter once training is done", "s")  # fmt: skip


def _evaluate_stage(snapshot: Snapshot) -> Stage:
    """The evaluate job, with the verdict in words once there is one."""
    stage = _job_stage("evaluate", _latest(snapshot.jobs, "evaluate"), "B")
    if snapshot.evaluation is None or stage.state == "running":
        return stage
    return Stage("evaluate", stage.state, sanitise(snapshot.evaluation.verdict), "B")


def _hidden_states_stage(snapshot: Snapshot) -> Stage:
    """Skipped when training started without it (online training makes its own).

    Before it runs, its plan: the bytes it will write against the free space where it writes;
    while it runs, what it has written against the plan, its rate and ETA; once it exited, the
    check of what it wrote.
    """
    jobs, plan, check = snapshot.jobs, snapshot.hidden_states_plan, snapshot.hidden_states_check
    hidden = _latest(jobs, "hidden_states")
    if hidden is None and _latest(jobs, "train") is not None:
        return Stage(
            "hidden states", "skipped", "training runs online, without a hidden-states job", "t"
        )
    stage = _job_stage("hidden states", hidden, "t")
    if hidden is not None and check is not None and check.job_id == hidden.id:
        return Stage(stage.name, stage.state, sanitise(check_text(check)), stage.key)
    if plan is None:
        return stage
    if hidden is not None and stage.state == "running" and plan.job == hidden.name:
        return Stage(stage.name, stage.state, sanitise(writing_text(plan)), stage.key)
    if hidden is not None:
        return stage
    return Stage(stage.name, stage.state, sanitise(plan_text(plan)), stage.key)


def check_text(check: HiddenStatesCheck) -> str:
    """`checked: 1,200 files, 16 opened, all fine` or `check FAILED: data_2.ckpt: ...`."""
    if check.ok is None:
        return f"check: {check.note}"
    if check.ok:
        return f"checked: {check.files:,} files, {check.checked} opened, all fine"
    return f"check FAILED: {check.problems[0] if check.problems else '?'}"


def plan_text(plan: HiddenStatesPlan) -> str:
    """`plan: 1.2 TiB of 3.4 TiB free in /data/hs; time: measured once it runs`, or why not."""
    if plan.fits is None:
        return f"plan {plan.note}"
    needed, room = byte_size(plan.bytes_needed or 0), _room(plan)
    if not plan.fits:
        return f"plan: {needed}, only {room}: will not start"
    if plan.eta_s is not None and plan.bytes_per_s:
        time = f"≈ {duration(plan.eta_s)} at {byte_size(plan.bytes_per_s)}/s (its last run)"
    else:
        time = "time: measured once it runs"
    return f"plan: {needed} of {room}; {time}"


def writing_text(plan: HiddenStatesPlan) -> str:
    """`wrote 40.0 GiB of 120.0 GiB (33%), 1.2 GiB/s, ETA 1h 10m; 3.2 TiB free in /data/hs`."""
    written, needed = plan.bytes_written or 0, plan.bytes_needed
    of = f" of {byte_size(needed)} ({written / needed:.0%})" if needed else ""
    rate = (
        f", {byte_size(plan.bytes_per_s)}/s, ETA {duration(plan.eta_s)}"
        if plan.bytes_per_s and plan.rate_is_current
        else ", rate: measuring"
    )
    warning = "; WILL NOT FIT: stopped before the room runs out" if plan.fits is False else ""
    return f"wrote {byte_size(written)}{of}{rate}; {_room(plan)}{warning}"


def _room(plan: HiddenStatesPlan) -> str:
    free = byte_size(plan.bytes_free or 0)
    if plan.room_by_quota and plan.quota_bytes is not None:
        return f"{free} left of the {byte_size(plan.quota_bytes)} quota of {plan.output}"
    return f"{free} free in {plan.output}"


def _job_stage(name: str, job: JobInfo | None, key: str) -> Stage:
    state = _state(job)
    detail = (
        "—"
        if job is None
        else sanitise(f"{job.name} {job.state}")
        + (f", exit {job.exit_code}" if job.exit_code is not None else "")
    )
    return Stage(name, state, detail, key)


def _state(job: JobInfo | None) -> str:
    if job is None:
        return "not started"
    if job.state in ACTIVE:
        return "running"
    if job.state == "stopped":  # stopped on request: still to do, not a failure
        return "not started"
    return "done" if job.state == "exited" else "failed"


def _latest(jobs: tuple[JobInfo, ...], kind: str) -> JobInfo | None:
    mine = [job for job in jobs if job.kind == kind]
    return max(mine, key=lambda job: job.started_at or 0.0) if mine else None
