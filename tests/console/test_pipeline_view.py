"""The pipeline view: stage states from a snapshot, and the next step."""

from __future__ import annotations

import dataclasses

from agent.protocol import (
    Alert,
    DatasetProgress,
    DrafterEvaluation,
    EvalLevel,
    ExportDatasetQuality,
    ExportSummary,
    JobInfo,
    JobState,
    Snapshot,
)
from console.model.pipeline_view import next_stage, stages


def snapshot(
    datasets: tuple[DatasetProgress, ...], jobs: tuple[JobInfo, ...], **reports: object
) -> Snapshot:
    return Snapshot(1.0, "h", "/d", datasets, jobs=jobs, **reports)  # type: ignore[arg-type]


def job(name: str, kind: str, state: JobState, started: float, code: int | None = None) -> JobInfo:
    return JobInfo(f"{name}-{started}", name, kind, state, (), started_at=started, exit_code=code)


def test_while_generating_the_next_step_is_generation() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),
         DatasetProgress("B2", 10, 3, 30, 100, status="running", writer_active=True)),
        (job("sglang", "server", "running", 1.0),),
    ))  # fmt: skip
    assert [(s.name, s.state) for s in items] == [
        ("generate", "running"), ("export", "not started"), ("vocab", "not started"),
        ("stop server", "not started"), ("hidden states", "not started"), ("train", "not started"),
        ("serve with drafter", "not started"), ("evaluate", "not started"),
    ]  # fmt: skip
    upcoming = next_stage(items)
    assert upcoming is not None
    assert upcoming.name == "generate"


def test_after_vocab_and_a_stopped_server_the_next_step_is_hidden_states() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("sglang", "server", "stopped", 1.0), job("vocab", "vocab", "exited", 2.0, 0),
         job("hidden", "hidden_states", "failed", 3.0, 1)),
    ))  # fmt: skip
    states = {s.name: s.state for s in items}
    assert states["generate"] == "done"
    assert states["vocab"] == "done"
    assert states["stop server"] == "done"
    assert states["hidden states"] == "failed"
    upcoming = next_stage(items)
    assert upcoming is not None
    assert (upcoming.name, upcoming.key) == ("hidden states", "t")


def test_training_without_a_hidden_states_job_skips_that_stage() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("sglang", "server", "stopped", 1.0), job("vocab", "vocab", "exited", 2.0, 0),
         job("train", "train", "running", 3.0)),
    ))  # fmt: skip
    states = {s.name: s.state for s in items}
    assert states["hidden states"] == "skipped"
    upcoming = next_stage(items)
    assert upcoming is not None
    assert (upcoming.name, upcoming.state) == ("train", "running")


def test_a_job_stopped_on_request_is_still_to_do_not_failed() -> None:
    items = stages(snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),),
        (job("vocab", "vocab", "stopped", 1.0),),
    ))  # fmt: skip
    assert {s.name: s.state for s in items}["vocab"] == "not started"


DONE = (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),)


def export_summary(flagged: bool) -> ExportSummary:
    matched = 40 if flagged else 100
    dataset = ExportDatasetQuality(
        "B1", answers=100, tokens=1000, truncated=0, empty=0, looping=0, reasoning_closed=0,
        reasoning_unclosed=0, duplicates_skipped=0, unanswered_prompts=0, no_prompt=0,
        prompt_mismatch=0, corrupt_lines=0, dropped_answers=0, ids_lines=100,
        conversation_lines=matched, roundtrip_checked=100, roundtrip_matched=matched,
        roundtrip_flagged=flagged,
    )  # fmt: skip
    return ExportSummary(
        "x-1", "/out", 5.0, matched / 100, 0.99, flagged, 100, 1e6, datasets=(dataset,)
    )


def test_after_generation_the_next_step_is_the_export_and_its_round_trip_decides() -> None:
    upcoming = next_stage(stages(snapshot(DONE, ())))
    assert upcoming is not None
    assert (upcoming.name, upcoming.key) == ("export", "x")

    exported = job("export", "export", "exited", 2.0, 0)
    good = {s.name: s for s in stages(snapshot(DONE, (exported,), export=export_summary(False)))}
    bad = {s.name: s for s in stages(snapshot(DONE, (exported,), export=export_summary(True)))}
    assert good["export"].state == "done"
    assert bad["export"].state == "failed"
    # counts, not a rounded share: "99.0% below 99%" read as a contradiction
    assert bad["export"].detail == "40 of 100 conversations exact, under the 99% asked (X: report)"


def test_after_training_the_drafter_is_served_and_evaluated_with_b() -> None:
    trained = (job("export", "export", "exited", 1.0, 0), job("vocab", "vocab", "exited", 2.0, 0),
               job("train", "train", "exited", 3.0, 0))  # fmt: skip
    upcoming = next_stage(stages(snapshot(DONE, trained)))
    assert upcoming is not None
    assert (upcoming.name, upcoming.key) == ("serve with drafter", "s")

    serving = (*trained, job("drafter", "drafter_server", "running", 4.0))
    evaluated = (*serving, job("evaluate", "evaluate", "exited", 5.0, 0))
    verdict = DrafterEvaluation("evaluate-5.0", "/out", 6.0, "2.10× at concurrency 1, 0.80× at "
                                "32: slower than no drafter at high batch", True,
                                (EvalLevel(1, 210.0, 100.0, 2.1, 2.9, 0.5, 0.6),))  # fmt: skip
    items = {s.name: s for s in stages(snapshot(DONE, evaluated, evaluation=verdict))}
    assert (items["serve with drafter"].state, items["serve with drafter"].key) == ("done", "B")
    assert items["evaluate"].state == "done"
    assert items["evaluate"].detail.endswith("slower than no drafter at high batch")
    upcoming = next_stage(stages(snapshot(DONE, serving)))
    assert upcoming is not None
    assert (upcoming.name, upcoming.key) == ("evaluate", "B")


def test_generation_done_names_the_datasets_that_ran_past_their_budget() -> None:
    over = Alert("over_budget", "error", "B3_math is 159,176 tokens past its budget", "B3_math")
    done = snapshot(
        (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),
         DatasetProgress("B3_math", 10, 10, 259_176, 100_000, status="complete")),
        (), alerts=(over,),
    )  # fmt: skip
    [generate] = [stage for stage in stages(done) if stage.name == "generate"]
    assert generate.state == "done"
    assert generate.detail == "2/2 datasets complete, 1 over budget (B3_math)"


def test_a_server_started_again_after_training_leaves_the_stop_stage_done() -> None:
    datasets = (DatasetProgress("B1", 10, 10, 100, 100, status="complete"),)
    trained = job("train", "train", "exited", 3.0, 0)
    again = stages(snapshot(datasets, (job("sglang", "server", "running", 5.0), trained)))
    stop = next(s for s in again if s.name == "stop server")
    assert (stop.state, stop.detail) == ("done", "sglang serving again after training")
    before = stages(snapshot(datasets, (job("sglang", "server", "running", 1.0), trained)))
    assert next(s for s in before if s.name == "stop server").state == "not started"


def test_before_it_runs_the_hidden_states_stage_shows_its_plan() -> None:
    """The bytes it will write against the free space where it writes."""
    from agent.protocol import HiddenStatesPlan
    from console.model.pipeline_view import plan_text

    fits = HiddenStatesPlan("hs", "specforge", 10**9, 57_360, 57_360 * 10**9, "/scratch/hs",
                            100 * 2**40, 2**30, True, "1,000,000,000 tokens × 57,360 bytes")  # fmt: skip
    assert plan_text(fits) == (
        "plan: 52.2 TiB of 100.0 TiB free in /scratch/hs; time: measured once it runs"
    )
    estimated = dataclasses.replace(fits, bytes_per_s=2**30, eta_s=53_460.0)
    assert plan_text(estimated) == (
        "plan: 52.2 TiB of 100.0 TiB free in /scratch/hs; ≈ 14h 51m at 1.0 GiB/s (its last run)"
    )
    tight = dataclasses.replace(fits, bytes_free=2 * 2**40, fits=False)
    assert plan_text(tight) == "plan: 52.2 TiB, only 2.0 TiB free in /scratch/hs: will not start"
    quota = dataclasses.replace(tight, quota_bytes=40 * 2**40, room_by_quota=True)
    assert plan_text(quota) == (
        "plan: 52.2 TiB, only 2.0 TiB left of the 40.0 TiB quota of /scratch/hs: will not start"
    )
    unknown = dataclasses.replace(fits, fits=None, note="unknown: the target's config.json")
    assert plan_text(unknown) == "plan unknown: the target's config.json"


def test_while_it_runs_the_hidden_states_stage_shows_what_it_wrote_its_rate_and_eta() -> None:
    from agent.protocol import HiddenStatesPlan

    plan = HiddenStatesPlan("hs", "specforge", 10**9, 57_360, 40 * 2**40, "/scratch/hs",
                            60 * 2**40, 2**30, True, "x", bytes_written=10 * 2**40,
                            bytes_per_s=2**30, rate_is_current=True, eta_s=30 * 1024.0)  # fmt: skip
    running = job("hs", "hidden_states", "running", 1.0)
    taken = dataclasses.replace(snapshot((), (running,)), hidden_states_plan=plan)
    [stage] = [s for s in stages(taken) if s.name == "hidden states"]
    assert (stage.state, stage.detail) == ("running", (
        "wrote 10.0 TiB of 40.0 TiB (25%), 1.0 GiB/s, ETA 8h 32m; 60.0 TiB free in /scratch/hs"
    ))  # fmt: skip
    first_look = dataclasses.replace(plan, bytes_per_s=None, rate_is_current=False, eta_s=None)
    taken = dataclasses.replace(taken, hidden_states_plan=first_look)
    [stage] = [s for s in stages(taken) if s.name == "hidden states"]
    assert stage.detail.startswith("wrote 10.0 TiB of 40.0 TiB (25%), rate: measuring;")
    short = dataclasses.replace(plan, fits=False)
    taken = dataclasses.replace(taken, hidden_states_plan=short)
    [stage] = [s for s in stages(taken) if s.name == "hidden states"]
    assert stage.detail.endswith("; WILL NOT FIT: stopped before the room runs out")


def test_after_it_ran_the_hidden_states_stage_shows_its_check() -> None:
    from agent.protocol import HiddenStatesCheck
    from console.model.pipeline_view import check_text

    assert check_text(HiddenStatesCheck("hs", True, 1_200, 1_200, 16)) == (
        "checked: 1,200 files, 16 opened, all fine"
    )
    failed = HiddenStatesCheck("hs", False, 3, 3, 3, ("data_2.ckpt: hidden_state: 1 NaN",))
    assert check_text(failed) == "check FAILED: data_2.ckpt: hidden_state: 1 NaN"
    assert check_text(HiddenStatesCheck("hs", None, note="checking")) == "check: checking"
