"""The redeploy's watch ends when the new run does: a budget already met is a success, at once.

A run restarted with `--token-budget N` on a dataset already past N exits 0 at once: correct,
and the redeploy's aim. The watch waited its 180 s for the new code to be reported and then
spoke of code never reported; it now ends as soon as the new run has ended, saying why from the
runner's own record, and names the exit code of a run that failed.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from agent.operations.redeploy_watch import WATCH_S, exit_reason, settled
from agent.protocol import (
    JOBS_LAUNCH,
    OPERATIONS_REDEPLOY,
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    RedeployParams,
)
from tests.support.datasets import response_line
from tests.support.operations import jobs_where, local_link, operation_ended
from tests.support.runner_files import runner_command, write_id_prompts
from tests.support.simulator_process import running_simulator

BUDGET = 500
NEW = JobInfo("inference-B3-2", "inference", "inference", "running", ("python",), pid=4321,
              dataset="B3", log_path="/state/jobs/inference-B3-2/output.log")  # fmt: skip
MET = {"pid": 4321, "stop_reason": "budget", "completed": 0, "tokens": 1_000, "budget": BUDGET}


def test_a_new_run_that_exits_0_with_its_budget_met_is_a_success_that_says_so() -> None:
    exited = dataclasses.replace(NEW, state="exited", exit_code=0)
    verdict = settled(exited, None, "new-sha", MET, timed_out=False)
    assert verdict is not None
    assert (verdict.good, verdict.ended) == (True, True)
    assert verdict.detail == (
        "the new run ended with exit 0: budget already met (1,000 of 500 tokens): "
        "nothing to generate"
    )


def test_a_new_run_that_failed_is_a_failure_naming_its_exit_code_and_reason() -> None:
    failed = dataclasses.replace(NEW, state="failed", exit_code=1)
    record = {**MET, "stop_reason": "not_ready", "failure": "no server answered within 0 s\nmore"}
    verdict = settled(failed, None, "new-sha", record, timed_out=False)
    assert verdict is not None
    assert not verdict.good
    assert "failed, exit 1: no server answered within 0 s;" in verdict.detail
    assert "more" not in verdict.detail  # one line of the runner's words


def test_an_older_runs_record_is_not_taken_for_the_new_runs() -> None:
    exited = dataclasses.replace(NEW, state="exited", exit_code=0)
    verdict = settled(exited, None, "new-sha", {**MET, "pid": 999}, timed_out=False)
    assert verdict is not None
    assert verdict.good
    assert "budget" not in verdict.detail


def test_a_new_run_reporting_the_new_code_settles_the_watch_before_the_clock_does() -> None:
    writing = DatasetProgress("B3", 10, 4, 800, BUDGET, writer_active=True, runner_sha256="new")
    assert settled(NEW, dataclasses.replace(writing, runner_sha256="old"), "new", None,
                   timed_out=False) is None  # fmt: skip
    verdict = settled(NEW, writing, "new", None, timed_out=False)
    assert verdict is not None
    assert (verdict.good, verdict.ended) == (True, False)
    assert "reporting the new runner code" in verdict.detail


def test_the_reasons_of_a_clean_exit() -> None:
    assert exit_reason({"stop_reason": "budget", "completed": 3, "tokens": 600, "budget": 500}) == (
        "budget met (600 of 500 tokens) after 3 more response(s)"
    )
    assert "nothing to generate" in exit_reason({"stop_reason": "exhausted", "completed": 0})
    assert exit_reason(None) == "it had nothing left to do (its log says more)"


async def test_a_restart_with_its_budget_already_met_ends_the_redeploy_at_once(
    tmp_path: Path, state_dir: Path
) -> None:
    datasets = tmp_path / "datasets"
    folder = datasets / "B3"
    write_id_prompts(folder, 20)
    lines = [response_line(f"p{i}", 100) for i in range(10)]  # 1,000 tokens: past the budget
    (folder / "raw_responses.jsonl").write_text("".join(lines))
    sleeper = JobSpec((sys.executable, "-c", "import time; time.sleep(600)"), per_dataset=True,
                      kind="inference", grace_s=5)  # fmt: skip
    with running_simulator(tmp_path / "sim", "--speed", "0") as sim:
        pipeline = PipelineConfig(
            datasets=DatasetsConfig(str(datasets), budget=BUDGET), sglang_url=sim.url,
            jobs={"old-run": sleeper},
        )  # fmt: skip
        async with local_link(state_dir, pipeline) as link:
            old = await link.call(JOBS_LAUNCH, LaunchParams("old-run", "B3"), idempotency_key="o")
            await jobs_where(link, lambda jobs: any(j.state == "running" for j in jobs))
            argv = tuple(runner_command(folder, sim.url, "--token-budget", str(BUDGET)))
            asked = time.monotonic()
            started: OperationInfo = await link.call(
                OPERATIONS_REDEPLOY, RedeployParams(old.id, argv), idempotency_key="r"
            )
            done = await operation_ended(link, started.id, timeout_s=WATCH_S / 2)
    assert time.monotonic() - asked < WATCH_S / 2
    assert done.state == "done", done.outcome
    watch = next(step for step in done.steps if step.name == "watch")
    assert watch.state == "done"
    met = "exit 0: budget already met (1,000 of 500 tokens): nothing to generate"
    reported = "reporting the new runner code; resumed at 10 responses, 1,000 tokens"
    # the runner reports its code and ends at once: the watch may see either first, both succeed
    assert met in watch.detail or reported in watch.detail, watch.detail
    said = "is on the new code" if met in watch.detail else "runs the new code"
    assert said in done.outcome, done.outcome
    assert "not reported" not in done.outcome
