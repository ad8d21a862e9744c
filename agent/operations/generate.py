"""`G`, carried by the agent: the inference job started on many datasets, one after another.

Each dataset's start is a step with an idempotency key of its own, so a resumed operation never
starts a dataset twice; a refusal (its dataset already has a writer, say) is that step's
failure and the next dataset goes on.
"""

from __future__ import annotations

import time

from agent.errors import AgentError
from agent.operations.box import Box
from agent.operations.journal import Journal
from agent.operations.records import OperationRecord
from agent.protocol import GenerateParams, LaunchParams, StepState, from_wire

SAVE_EVERY_S = 1.0
"""The most often a generate's record is written again (and pushed to the consoles)."""


class Generate:
    """Start the job on each dataset not started yet, then end saying how many started."""

    def __init__(self, record: OperationRecord, box: Box, journal: Journal) -> None:
        self.record = record
        self.box = box
        self.journal = journal
        self.params = from_wire(GenerateParams, record.params)
        self._saved_at = -SAVE_EVERY_S

    async def run(self) -> None:
        """Start what is left, then end."""
        started: dict[str, str | None] = self.record.notes.setdefault("started", {})
        for dataset in self.params.datasets:
            if dataset not in started:
                started[dataset] = await self._start(dataset)
        ok = [name for name, job in started.items() if job is not None]
        refused = [name for name, job in started.items() if job is None]
        outcome = f"started {self.params.job} on {len(ok)} of {len(started)} dataset(s)"
        if refused:
            outcome += f"; refused: {', '.join(refused)} (see the steps)"
        self.journal.end(self.record, "done" if ok else "failed", outcome)

    async def _start(self, dataset: str) -> str | None:
        """Start one dataset's run; the record is saved at most every SAVE_EVERY_S.

        Each start has a key of its own, so a resumed operation that lost the last second of
        its record asks again for those starts and gets the same runs back, never second ones.
        """
        self.journal.step(
            self.record, dataset, "running", f"starting {self.params.job}", save=False
        )
        key = f"{self.record.id}:{dataset}"
        try:
            job = await self.box.launch(LaunchParams(self.params.job, dataset), key)
        except AgentError as exc:
            self._step(dataset, "failed", exc.message)
            return None
        self._step(dataset, "done", f"started as {job.id}")
        return job.id

    def _step(self, dataset: str, state: StepState, detail: str) -> None:
        due = time.monotonic() - self._saved_at >= SAVE_EVERY_S
        self.journal.step(self.record, dataset, state, detail, save=due)
        if due:
            self._saved_at = time.monotonic()
