"""Operations across crashes: a retried key, a record of another shape, a flood.

(a) A sequence that starts the train job is asked with a key; the daemon is stopped and the kept
answer removed, as if it died between the operation's record and the answer; the same key is
asked again. Checks: the same operation comes back, and train was started once (a second start
is duplicated). (b) A redeploy record whose params this agent cannot read is left under way on a
live job, and the daemon started again. Checks: it ends failed with a reason, and a redeploy of
the job is then taken and done (it once read "running" for ever and refused them all). (c) 700
ended operation records are left on disk and the daemon started again. Checks: a snapshot
carries at most SHOWN_IN_SNAPSHOT of them and its line stays small; at most KEEP stay on disk
once an operation begins. detection_s is how long the unreadable record took to end.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from agent.attach import stop_daemon
from agent.host.signals import kill_process
from agent.operations.operations import SHOWN_IN_SNAPSHOT
from agent.operations.records import KEEP, OperationRecord
from agent.protocol import (
    JOBS_LAUNCH,
    OPERATIONS_REDEPLOY,
    OPERATIONS_SEQUENCE,
    SNAPSHOT,
    JobInfo,
    JobSpec,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    RedeployParams,
    SequenceParams,
    SequenceStep,
    Snapshot,
    SnapshotParams,
    to_wire,
)
from agent.state import StatePaths, read_json
from console.link.agent_link import AgentLink
from faults.harness.agents import local_agent
from faults.result import Scale, ScenarioResult
from tests.support.operations import jobs_now, local_link, operation_ended

TITLE = "Operations across crashes: a retried key, a record of another shape, 700 records"

PY = sys.executable
SLEEPER = (PY, "-c", "import time; print('up', flush=True); time.sleep(600)")
PIPELINE = PipelineConfig(jobs={
    "train": JobSpec((PY, "-c", "print('training', flush=True)"), kind="train"),
    "worker": JobSpec(SLEEPER, grace_s=5),
})  # fmt: skip
FLOOD = 700
SNAPSHOT_LINE_LIMIT = 64 * 1024


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three parts; (a) and (b) `trials` times each."""
    result = ScenarioResult("operation_crashes", TITLE, seed)
    trials = scale.pick(full=5, quick=1)
    for trial in range(trials):
        await _retried_key(workdir / f"key-{trial}" / "state", result, f"key #{trial + 1}")
        await _other_shape(workdir / f"shape-{trial}" / "state", result, f"shape #{trial + 1}")
    await _flood(workdir / "flood" / "state", result)
    return result


async def _retried_key(state: Path, result: ScenarioResult, name: str) -> None:
    params = SequenceParams("start train once", (SequenceStep("start", job="train"),))
    async with local_agent(state, PIPELINE) as link:
        first: OperationInfo = await link.call(OPERATIONS_SEQUENCE, params, idempotency_key="k")
        await operation_ended(link, first.id)
    stop_daemon(StatePaths(state))
    answers = state / "idempotency.jsonl"
    kept = [line for line in answers.read_text().splitlines(keepends=True) if '"k"' not in line]
    answers.write_text("".join(kept))  # the daemon died before it kept the answer
    result.faults += 1
    result.attempted += 1
    async with local_agent(state, PIPELINE) as link:
        retried: OperationInfo = await link.call(OPERATIONS_SEQUENCE, params, idempotency_key="k")
        trains = [job for job in await jobs_now(link) if job.name == "train"]
    result.duplicated += max(0, len(trains) - 1)
    if retried.id != first.id or len(trains) != 1:
        result.violate(f"{name}: the retry began {retried.id} (first {first.id}); "
                       f"train started {len(trains)} time(s)")  # fmt: skip
        return
    result.acknowledged += 1


async def _other_shape(state: Path, result: ScenarioResult, name: str) -> None:
    async with local_agent(state, PIPELINE) as link:
        job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("worker"), idempotency_key="w")
        kill_process(int(read_json(state / "daemon.json")["pid"]), signal.SIGKILL)
    record = _unreadable_redeploy(job.id)
    (state / "operations" / f"{record['id']}.json").write_text(json.dumps(record))
    result.faults += 1
    result.attempted += 1
    async with local_agent(state, PIPELINE) as link:
        started = time.monotonic()
        ended = await operation_ended(link, str(record["id"]))
        result.detection_s.append(time.monotonic() - started)
        asked = await _redeploy(link, job.id)
        after = await operation_ended(link, asked.id) if asked else None
    if ended.state != "failed" or after is None or after.state != "done":
        said = after.outcome if after else "refused"
        result.violate(f"{name}: the record ended {ended.state}; the redeploy after it: {said}")
        return
    result.acknowledged += 1


def _unreadable_redeploy(job_id: str) -> dict[str, object]:
    """A redeploy under way whose files are of a shape this agent never wrote."""
    return {
        "id": "redeploy-20260101-000000-aaaaaa", "kind": "redeploy", "subject": "worker",
        "params": {"job_id": job_id, "files": [["worker.py", "staged"]]}, "started_at": 1.0,
        "asked_by": None, "phase": "watch", "state": "running", "ended_at": None, "outcome": "",
        "job_id": job_id, "new_job_id": job_id, "notes": {}, "steps": [],
    }  # fmt: skip


async def _redeploy(link: AgentLink, job_id: str) -> OperationInfo | None:
    try:
        info: OperationInfo = await link.call(
            OPERATIONS_REDEPLOY, RedeployParams(job_id), idempotency_key="again"
        )
    except Exception:  # operation_busy: the fault this part looks for
        return None
    return info


async def _flood(state: Path, result: ScenarioResult) -> None:
    folder = state / "operations"
    folder.mkdir(parents=True)
    for number in range(FLOOD):
        record = OperationRecord(f"sequence-{number:05d}", "sequence", f"op {number}", {},
                                 time.time() - FLOOD + number)  # fmt: skip
        record.end("done", "ok " + "x" * 300)
        (folder / f"{record.id}.json").write_text(json.dumps(record.to_json()))
    result.faults += 1
    result.attempted += 1
    try:
        async with local_link(state, PIPELINE) as link:
            snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
            params = SequenceParams("one more", (SequenceStep("start", job="train"),))
            await link.call(OPERATIONS_SEQUENCE, params, idempotency_key="more")
    finally:
        stop_daemon(StatePaths(state))
    line = len(json.dumps(to_wire(snapshot)))
    on_disk = len(list(folder.glob("*.json")))
    result.notes.append(
        f"{FLOOD} ended records: a snapshot carried {len(snapshot.operations)} "
        f"({line / 1024:.0f} KB in all); {on_disk} on disk once one more began (KEEP {KEEP})"
    )
    if len(snapshot.operations) > SHOWN_IN_SNAPSHOT or line > SNAPSHOT_LINE_LIMIT:
        result.violate(f"a snapshot carried {len(snapshot.operations)} operations, {line:,} bytes")
    elif on_disk > KEEP + 1:
        result.violate(f"{on_disk} records stayed on disk past KEEP {KEEP}")
    else:
        result.acknowledged += 1
