"""Each autopilot stage reads a snapshot and says what to do next; nothing here acts."""

from __future__ import annotations

import sys

from agent.operations.stages import (
    Context,
    Done,
    Fail,
    Launch,
    Skip,
    StopJobs,
    Wait,
    evaluate_gate,
    export_gate,
    free_gpus,
    generate,
    job_stage,
    serve,
)
from agent.protocol import (
    DatasetProgress,
    DatasetsConfig,
    DrafterCheck,
    DrafterEvaluation,
    DrafterField,
    ExportSummary,
    JobInfo,
    JobSpec,
    JobState,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    Snapshot,
)

PY = sys.executable
JOBS = {
    "inference": JobSpec((PY,), kind="inference", per_dataset=True, restart="on-failure"),
    "export": JobSpec((PY,), kind="export"),
    "vocab": JobSpec((PY,), kind="vocab"),
    "sglang": JobSpec((PY,), kind="server", gpu=True),
    "train": JobSpec((PY,), kind="train", gpu=True),
    "drafter": JobSpec((PY,), kind="drafter_server"),
    "evaluate": JobSpec((PY, "--baseline", "http://x"), kind="evaluate"),
}
PIPELINE = PipelineConfig(DatasetsConfig("/data", budget=100), jobs=JOBS)


def dataset(name: str, tokens: int, **fields: object) -> DatasetProgress:
    return DatasetProgress(name, 10, 1, tokens, 100, **fields)  # type: ignore[arg-type]


def job(
    name: str, state: JobState, started_at: float = 10.0, dataset: str | None = None,
    **fields: object,
) -> JobInfo:  # fmt: skip
    kind = JOBS[name].kind
    return JobInfo(f"{name}-{dataset}-{started_at}", name, kind, state, (), dataset=dataset,
                   started_at=started_at, **fields)  # type: ignore[arg-type]  # fmt: skip


def ctx(
    datasets: tuple[DatasetProgress, ...] = (), jobs: tuple[JobInfo, ...] = (),
    fresh_after: float = 0.0, **snapshot: object,
) -> Context:  # fmt: skip
    taken = Snapshot(100.0, "h", "/data", datasets, jobs=jobs, **snapshot)  # type: ignore[arg-type]
    return Context(taken, PIPELINE, fresh_after, autopilot_since=50.0)


def test_generate_starts_the_first_dataset_nobody_writes() -> None:
    datasets = (dataset("A", 100), dataset("B", 10, writer_active=True), dataset("C", 0))
    decision = generate(ctx(datasets))
    assert decision == Launch(LaunchParams("inference", "C"), "C", "starting inference on C")


def test_generate_is_done_when_every_dataset_is_at_its_budget() -> None:
    datasets = (dataset("A", 100, last_response_at=30.0), dataset("B", 150, last_response_at=40.0))
    assert generate(ctx(datasets)) == Done("2 dataset(s) at their budget or out of prompts", 40.0)


def test_generate_waits_for_a_restart_policy_rather_than_starting_a_second_run() -> None:
    crashed = job("inference", "failed", dataset="C", exit_code=1)  # not decided yet
    decision = generate(ctx((dataset("C", 0),), (crashed,)))
    assert isinstance(decision, Wait)
    scheduled = job("inference", "failed", dataset="C", exit_code=1,
                    restart_note="restarting at 10:00:00 (restart 1 of 5 within 1 h)")  # fmt: skip
    assert isinstance(generate(ctx((dataset("C", 0),), (scheduled,))), Wait)


def test_generate_retries_a_run_its_policy_gave_up_on_saying_how_it_ended() -> None:
    gave_up = job("inference", "failed", dataset="C", exit_code=1, restart_note="gave up: 5")
    decision = generate(ctx((dataset("C", 0),), (gave_up,)))
    assert isinstance(decision, Launch)
    assert decision.failed_before is not None
    assert "exit 1" in decision.failed_before


def test_a_run_stopped_on_request_pauses_the_autopilot_instead_of_being_undone() -> None:
    stopped = job("inference", "stopped", dataset="C", ended_at=60.0)
    decision = generate(ctx((dataset("C", 5),), (stopped,)))
    assert isinstance(decision, Fail)
    assert "stopped on request" in decision.reason


def test_generate_waits_for_datasets_and_cannot_go_on_without_an_inference_job() -> None:
    assert generate(ctx()) == Wait("a dataset under /data (none there yet)")
    unconfigured = Context(Snapshot(1.0, "h", None, ()), PipelineConfig(), 0.0, 0.0)
    assert isinstance(generate(unconfigured), Fail)
    config = PipelineConfig(DatasetsConfig("/d"))
    bare = Context(Snapshot(1.0, "h", "/d", (dataset("A", 0),)), config, 0.0, 0.0)
    assert generate(bare) == Fail(
        "no per-dataset job of kind inference is configured to generate with"
    )


def test_a_job_stage_starts_waits_and_ends_on_an_exit_0_made_after_the_stage_before() -> None:
    vocab = job_stage("vocab")
    assert vocab(ctx()) == Launch(LaunchParams("vocab"), "vocab", "starting vocab")
    assert isinstance(vocab(ctx(jobs=(job("vocab", "running"),))), Wait)
    fresh = job("vocab", "exited", started_at=20.0, ended_at=25.0, exit_code=0)
    assert vocab(ctx(jobs=(fresh,), fresh_after=15.0)) == Done("vocab exited 0", 25.0)
    assert isinstance(vocab(ctx(jobs=(fresh,), fresh_after=30.0)), Launch), "older data: again"


def test_a_failed_job_stage_is_started_again_with_how_it_failed() -> None:
    failed = job("vocab", "failed", exit_code=1)
    decision = job_stage("vocab")(ctx(jobs=(failed,)))
    assert isinstance(decision, Launch)
    assert decision.failed_before is not None
    assert "exit 1" in decision.failed_before


def test_a_stage_with_no_job_configured_is_skipped() -> None:
    assert isinstance(job_stage("hidden_states")(ctx()), Skip)


def test_the_export_gate_stops_on_a_round_trip_below_its_threshold() -> None:
    exported = job("export", "exited", exit_code=0, ended_at=20.0)
    flagged = ExportSummary(exported.id, "/out", 1.0, 0.42, 0.99, True, 10, 1.0, ())
    decision = job_stage("export", export_gate)(ctx(jobs=(exported,), export=flagged))
    assert isinstance(decision, Fail)
    assert "42.0%" in decision.reason
    assert "99%" in decision.reason
    refused = job("export", "failed", exit_code=1, ended_at=20.0)  # the export exits 1 on it
    assert isinstance(job_stage("export", export_gate)(ctx(jobs=(refused,), export=flagged)), Fail)
    older = ExportSummary("an-older-export", "/out", 1.0, 1.0, 0.99, False, 10, 1.0, ())
    assert isinstance(job_stage("export", export_gate)(ctx(jobs=(exported,), export=older)), Wait)
    good = ExportSummary(exported.id, "/out", 1.0, 1.0, 0.99, False, 10, 1.0, ())
    assert job_stage("export", export_gate)(ctx(jobs=(exported,), export=good)) == Done(
        "export exited 0", 20.0
    )


def test_free_gpus_stops_the_server_only_when_something_will_train() -> None:
    server = job("sglang", "running")
    assert free_gpus(ctx(jobs=(server,))) == StopJobs(
        (server.id,), "stopping sglang to free the GPUs"
    )
    assert free_gpus(ctx(fresh_after=20.0)) == Done(
        "no server of the agent's holds the GPUs", 20.0
    ), "it makes no data: what the stage before made stays the data's time"
    untrained = Context(
        ctx(jobs=(server,)).snapshot, PipelineConfig(jobs={"sglang": JOBS["sglang"]}), 0, 0
    )
    assert isinstance(free_gpus(untrained), Skip)


def test_free_gpus_leaves_the_servers_when_training_is_already_done_on_this_data() -> None:
    """The autopilot started again after its verdict stopped the servers and trained again."""
    server, trained = job("sglang", "running", 90.0), job("train", "exited", 40.0)
    assert free_gpus(ctx(jobs=(server, trained), fresh_after=20.0)) == Done(
        "the GPU stages are done on this data: the servers stay", 20.0
    )
    stale = job("train", "exited", 10.0)  # trained on the data before: train again
    assert isinstance(free_gpus(ctx(jobs=(server, stale), fresh_after=20.0)), StopJobs)
    failed = job("train", "failed", 40.0)
    assert isinstance(free_gpus(ctx(jobs=(server, failed), fresh_after=20.0)), StopJobs)


def test_serve_starts_the_drafter_then_the_baseline_the_evaluation_compares_with() -> None:
    assert serve(ctx()) == Launch(LaunchParams("drafter"), "drafter", "starting drafter")
    drafter = job("drafter", "running", started_at=60.0)
    assert serve(ctx(jobs=(drafter,))) == Launch(
        LaunchParams("sglang"), "baseline", "starting sglang"
    )
    server = job("sglang", "running", started_at=70.0)
    assert serve(ctx(jobs=(drafter, server))) == Done("serving: drafter, sglang", 70.0)


def test_serve_waits_for_the_drafter_check_and_never_serves_a_failed_one() -> None:
    checking = DrafterCheck("/out/run-step4", None, note="checking")
    assert serve(ctx(drafter_check=checking)) == Wait("checking the drafter /out/run-step4")
    wrong = DrafterField("d2t/t2d", False, "no d2t in the weights", "d2t int64[K]", "save it")
    failed = DrafterCheck("/out/run-step4", False, (DrafterField("loads", True, "ok"), wrong))
    decision = serve(ctx(drafter_check=failed))
    assert isinstance(decision, Fail)
    assert "d2t/t2d: no d2t in the weights, expected d2t int64[K] (save it)" in decision.reason
    unchecked = DrafterCheck("", None, note="not checked: the target's folder is unknown")
    assert serve(ctx(drafter_check=unchecked)) == Launch(
        LaunchParams("drafter"), "drafter", "starting drafter"
    )  # a check that could not run holds nothing back; the panel says why
    running = job("drafter", "running", started_at=60.0)
    assert isinstance(serve(ctx(jobs=(running,), drafter_check=failed)), Launch)  # its baseline


def test_the_evaluation_is_done_with_its_verdict() -> None:
    finished = job("evaluate", "exited", exit_code=0, ended_at=90.0)
    assert isinstance(job_stage("evaluate", evaluate_gate)(ctx(jobs=(finished,))), Wait)
    verdict = DrafterEvaluation(finished.id, "/out", 1.0, "2.1x at concurrency 1", False, ())
    decision = job_stage("evaluate", evaluate_gate)(ctx(jobs=(finished,), evaluation=verdict))
    assert decision == Done("2.1x at concurrency 1", 90.0)


def test_generate_stops_runs_still_writing_datasets_already_at_their_budget() -> None:
    overrunning = job("inference", "running", dataset="B3")
    decision = generate(ctx((dataset("B3", 180, last_response_at=9.0),), (overrunning,)))
    assert decision == StopJobs(
        (overrunning.id,), "stopping 1 run(s) done with their dataset's budget"
    )


def test_generate_leaves_a_dataset_alone_while_a_redeploy_stops_and_starts_its_run() -> None:
    stopped = job("inference", "stopped", dataset="B3", ended_at=60.0)
    redeploy = OperationInfo("r-1", "redeploy", "inference (B3)", "running", (), 55.0,
                             job_id=stopped.id)  # fmt: skip
    decision = generate(ctx((dataset("B3", 5),), (stopped,), operations=(redeploy,)))
    assert isinstance(decision, Wait)


def test_a_job_stage_waits_while_a_redeploy_stops_and_starts_its_job() -> None:
    stopped = job("train", "stopped", ended_at=60.0)
    redeploy = OperationInfo("r-2", "redeploy", "train", "running", (), 55.0, job_id=stopped.id)
    decision = job_stage("train")(ctx(jobs=(stopped,), operations=(redeploy,)))
    assert decision == Wait("redeploy r-2 is under way on train"), "not 'stopped on request'"


def test_a_job_removed_from_the_config_while_it_runs_pauses_rather_than_skips() -> None:
    running = JobInfo("t-1", "train", "train", "running", (), started_at=10.0)
    without_train = {name: spec for name, spec in JOBS.items() if name != "train"}
    taken = Snapshot(100.0, "h", "/data", (), jobs=(running,))
    decision = job_stage("train")(
        Context(taken, PipelineConfig(DatasetsConfig("/data"), jobs=without_train), 0.0, 50.0)
    )
    assert isinstance(decision, Fail)
    assert (
        "job train (train) still runs, but the config names no train job any more"
        in decision.reason
    )


def test_a_train_job_stopped_after_its_peak_is_training_done_not_a_pause() -> None:
    """`stop_after_peak_evals` stops it on purpose: the autopilot goes on to serve its best."""
    from dataclasses import replace

    from agent.protocol import TrainingProgress

    peaked = replace(JOBS["train"], stop_after_peak_evals=3)
    pipeline = replace(PIPELINE, jobs={**JOBS, "train": peaked})
    stopped = job("train", "stopped", started_at=60.0, ended_at=90.0)
    run = TrainingProgress(stopped.id, 1_600, None, 4, 1.2, None, None, None, 2.9, 400, None,
                           evals_since_best=3, best_checkpoint="/ckpt/r-step400")  # fmt: skip
    taken = Snapshot(100.0, "h", "/data", (), jobs=(stopped,), training=(run,))
    decision = job_stage("train")(Context(taken, pipeline, 0.0, autopilot_since=50.0))
    assert decision == Done("train stopped after its peak; its best is /ckpt/r-step400", 90.0)
    short = replace(run, evals_since_best=2)  # stopped by a person before its peak count
    taken = replace(taken, training=(short,))
    assert isinstance(job_stage("train")(Context(taken, pipeline, 0.0, 50.0)), Fail)
