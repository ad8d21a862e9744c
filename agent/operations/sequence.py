"""Steps in order, carried by the agent: stop these, wait for the GPUs, start that.

What a console used to do in several requests (the GPU hand-over: stop the holders, wait for
their memory, start the job; B: the servers, then the evaluation) is asked once and done here,
so a link lost between two steps leaves no holder stopped and nothing started. Each step is
noted done before the next begins; a resumed sequence goes on from the first step not done, and
a start reuses its idempotency key, so none is started twice. A step that fails ends it, saying
which and why; the steps before it stay done.
"""

from __future__ import annotations

import asyncio
import time

from agent.errors import AgentError
from agent.operations.box import Box
from agent.operations.journal import Journal
from agent.operations.records import OperationRecord
from agent.protocol import ErrorCode, LaunchParams, SequenceParams, SequenceStep, from_wire

GPU_WAIT_S = 60.0
"""How long a step waits for the GPUs to be free (memory released, no holder)."""
POLL_S = 1.0


class Sequence:
    """Run the steps not yet done, in order."""

    def __init__(self, record: OperationRecord, box: Box, journal: Journal) -> None:
        self.record = record
        self.box = box
        self.journal = journal
        self.params = from_wire(SequenceParams, record.params)

    async def run(self) -> None:
        """Each remaining step, then the end."""
        first = int(self.record.notes.get("done", 0))
        for index, step in enumerate(self.params.steps[first:], start=first):
            name = _name(index, step)
            self.journal.step(self.record, name, "running", _doing(step))
            failure = await self._take(index, step)
            if failure is not None:
                self.journal.step(self.record, name, "failed", failure)
                self.journal.end(self.record, "failed", f"step {index + 1} ({name}): {failure}")
                return
            self.record.notes["done"] = index + 1
            self.journal.step(self.record, name, "done", self.record.notes.pop("said", "done"))
        self.journal.end(self.record, "done", f"{len(self.params.steps)} step(s) done")

    async def _take(self, index: int, step: SequenceStep) -> str | None:
        """Do one step; the reason it failed, or None."""
        if step.action == "stop":
            return await self._stop(step.job_id or "")
        if step.action == "wait_gpus":
            return await self._wait_gpus()
        return await self._start(
            index, LaunchParams(step.job or "", step.dataset, force=step.force)
        )

    async def _stop(self, job_id: str) -> str | None:
        try:
            result = await self.box.stop(job_id)
        except AgentError as exc:
            return exc.message
        if result.outcome == "lost":
            return f"{job_id} could not be told apart from other processes (lost): not signalled"
        self.record.notes["said"] = " → ".join(s.action for s in result.steps) or "it had exited"
        return None

    async def _wait_gpus(self) -> str | None:
        deadline = time.monotonic() + GPU_WAIT_S
        while time.monotonic() < deadline:
            snapshot = await self.box.fresh_snapshot()
            held = [gpu for gpu in snapshot.gpus if gpu.pids]
            if not held:
                self.record.notes["said"] = "no process holds a GPU"
                return None
            await asyncio.sleep(POLL_S)
        self.record.notes["said"] = f"GPUs still held after {GPU_WAIT_S:g} s; the start will say"
        return None

    async def _start(self, index: int, params: LaunchParams) -> str | None:
        deadline = time.monotonic() + GPU_WAIT_S
        while True:
            try:
                job = await self.box.launch(params, f"{self.record.id}:{index}")
            except AgentError as exc:
                if exc.code == ErrorCode.GPU_BUSY and time.monotonic() < deadline:
                    await asyncio.sleep(POLL_S)  # a holder's memory still being released
                    continue
                return exc.message
            self.record.notes["said"] = f"started as {job.id} (pid group {job.pgid})"
            return None


def _name(index: int, step: SequenceStep) -> str:
    what = step.job_id if step.action == "stop" else step.job or "the GPUs"
    return f"{index + 1}. {step.action} {what}"


def _doing(step: SequenceStep) -> str:
    if step.action == "stop":
        return "its stop signal, then the grace"
    if step.action == "wait_gpus":
        return f"until no process holds a GPU (at most {GPU_WAIT_S:g} s)"
    return f"starting {step.job}" + (f" on {step.dataset}" if step.dataset else "")
