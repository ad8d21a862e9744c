"""A GPU hand-over (and B) is one operation of the agent: asked once, carried whatever the link.

Stop the holder, wait for the GPUs, start the job: the console that asked leaves at once, and
the agent still ends with the holder stopped and the job started; a step that fails ends the
sequence there and says which, with nothing after it started.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import (
    JOBS_LAUNCH,
    OPERATIONS_SEQUENCE,
    JobInfo,
    JobSpec,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    SequenceParams,
    SequenceStep,
)
from agent.state import StatePaths
from console.link.local_link import open_local_link
from tests.support.operations import jobs_now, local_link, operation_ended, text_appears

PY = sys.executable
HOLDER = (PY, "-c", "import time; print('holding', flush=True); time.sleep(600)")
PIPELINE = PipelineConfig(jobs={
    "server": JobSpec(HOLDER, kind="server", gpu=True, grace_s=5),
    "train": JobSpec((PY, "-c", "print('training', flush=True)"), kind="train", gpu=True),
})  # fmt: skip


async def test_a_hand_over_asked_once_ends_with_the_job_started_though_the_console_left(
    state_dir: Path,
) -> None:
    link = await open_local_link(state_dir, PIPELINE)
    holder: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("server"), idempotency_key="s")
    await text_appears(Path(holder.log_path or ""), "holding")
    steps = (SequenceStep("stop", job_id=holder.id), SequenceStep("wait_gpus"),
             SequenceStep("start", job="train"))  # fmt: skip
    asked: OperationInfo = await link.call(
        OPERATIONS_SEQUENCE, SequenceParams("GPU hand-over to train", steps), idempotency_key="h"
    )
    await link.close()

    async with local_link(state_dir, PIPELINE) as again:
        done = await operation_ended(again, asked.id)
        jobs = {job.name: job for job in await jobs_now(again)}
    assert done.state == "done", done.outcome
    assert [(s.name, s.state) for s in done.steps] == [
        (f"1. stop {holder.id}", "done"), ("2. wait_gpus the GPUs", "done"),
        ("3. start train", "done"),
    ]  # fmt: skip
    assert jobs["server"].state == "stopped"
    assert jobs["train"].started_at is not None


async def test_a_step_that_fails_ends_the_sequence_with_nothing_after_it_started(
    state_dir: Path,
) -> None:
    async with local_link(state_dir, PIPELINE) as link:
        steps = (SequenceStep("stop", job_id="no-such-job"), SequenceStep("start", job="train"))
        asked: OperationInfo = await link.call(
            OPERATIONS_SEQUENCE, SequenceParams("hand-over", steps), idempotency_key="h"
        )
        done = await operation_ended(link, asked.id)
        jobs = await jobs_now(link)
    assert done.state == "failed"
    assert done.outcome == "step 1 (1. stop no-such-job): no job 'no-such-job'"
    assert jobs == ()


async def test_a_key_retried_after_the_answer_was_lost_gets_the_operation_it_began(
    state_dir: Path,
) -> None:
    """The agent killed between an operation's record and the kept answer: the retry of the
    same key must not begin the operation a second time."""
    params = SequenceParams("start train once", (SequenceStep("start", job="train"),))
    async with local_link(state_dir, PIPELINE) as link:
        first: OperationInfo = await link.call(OPERATIONS_SEQUENCE, params, idempotency_key="once")
        await operation_ended(link, first.id)
    stop_daemon(StatePaths(state_dir))
    answers = state_dir / "idempotency.jsonl"
    kept = [line for line in answers.read_text().splitlines(keepends=True) if '"once"' not in line]
    answers.write_text("".join(kept))  # as if the daemon died before it kept the answer

    async with local_link(state_dir, PIPELINE) as again:
        retried: OperationInfo = await again.call(
            OPERATIONS_SEQUENCE, params, idempotency_key="once"
        )
        trains = [job for job in await jobs_now(again) if job.name == "train"]
    assert retried.id == first.id
    assert len(trains) == 1, "train was started once"
