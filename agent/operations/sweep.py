"""A draft-settings sweep, carried by the agent: each setting served, evaluated and stopped in turn.

People do not know which draft settings to serve with (sglang #3883); SpecForge's bench_eagle3.py
sweeps steps × top-k × draft tokens with a server per setting. Here each setting is the drafter
server job started with its flags edited (agent/plans/draft_settings.py), the evaluate job run
into a folder of its own, the server stopped; then the best setting per concurrency level (by
speedup where the evaluation has a baseline, else tokens/s) is named with the command line that
serves it. Every start has its own idempotency key, so a resumed sweep (the daemon restarted)
finds the jobs it had started, never second ones; a setting already measured is not run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from pathlib import Path
from typing import Any

from agent.errors import AgentError
from agent.operations.box import Box
from agent.operations.journal import Journal
from agent.operations.records import OperationRecord
from agent.plans.draft_settings import setting_argv, setting_name, with_flag
from agent.probes.pipeline_reports import PipelineReports, out_dir
from agent.protocol import (
    LIVE_JOB_STATES,
    DraftSetting,
    JobInfo,
    LaunchParams,
    SweepParams,
    from_wire,
)

POLL_S = 2.0
SWEEP_FOLDER = "sweep"


class Sweep:
    """Serve, evaluate and stop each setting not measured yet; then name the best per level."""

    def __init__(self, record: OperationRecord, box: Box, journal: Journal) -> None:
        self.record = record
        self.box = box
        self.journal = journal
        self.params = from_wire(SweepParams, record.params)

    async def run(self) -> None:
        """Each setting in turn, then the verdict."""
        results: dict[str, Any] = self.record.notes.setdefault("results", {})
        for index, setting in enumerate(self.params.settings):
            if str(index) not in results:
                results[str(index)] = await self._measure(index, setting)
                self.journal.save(self.record)
        measured = [results[str(i)] for i in range(len(self.params.settings))]
        best = best_per_level(measured)
        self.record.notes["best"] = best
        if not best:
            self.journal.end(
                self.record, "failed", "no setting was measured: " + _first_error(measured)
            )
            return
        self.journal.end(self.record, "done", verdict(best))

    async def _measure(self, index: int, setting: DraftSetting) -> dict[str, Any]:
        name = setting_name(setting)
        step = f"{index + 1}/{len(self.params.settings)}: {name}"
        server_argv = setting_argv(self.box.pipeline.jobs[self.params.server_job].argv, setting)
        result: dict[str, Any] = {"setting": name, "argv": list(server_argv), "levels": []}
        self.journal.step(self.record, step, "running", f"starting {self.params.server_job}")
        key = f"{self.record.id}:{index}"
        try:
            server = await self.box.launch(
                LaunchParams(self.params.server_job, argv=server_argv), f"{key}:server"
            )
        except AgentError as exc:
            return self._failed(
                step, result, f"{self.params.server_job} not started: {exc.message}"
            )
        try:
            evaluation = await self._evaluate(index, step, key)
        except asyncio.CancelledError:
            raise  # the daemon stops: the server runs on, and the resumed sweep finds it again
        except Exception:
            await self._stop(server)
            raise
        await self._stop(server)
        if isinstance(evaluation, str):
            return self._failed(step, result, evaluation)
        result["levels"] = evaluation
        self.journal.step(self.record, step, "done", _levels_text(evaluation))
        return result

    async def _evaluate(self, index: int, step: str, key: str) -> list[list[Any]] | str:
        """Run the evaluate job into this setting's folder; its levels, or why there are none."""
        spec = self.box.pipeline.jobs[self.params.evaluate_job]
        folder = Path(out_dir(spec.argv) or ".") / SWEEP_FOLDER / self.record.id / str(index)
        argv = with_flag(spec.argv, "--out", str(folder))
        self.journal.step(self.record, step, "running", f"evaluating into {folder}")
        try:
            job = await self.box.launch(
                LaunchParams(self.params.evaluate_job, argv=argv), f"{key}:eval"
            )
        except AgentError as exc:
            return f"{self.params.evaluate_job} not started: {exc.message}"
        ended = await self._ended(job)
        found = PipelineReports().evaluation((ended,))
        if ended.state != "exited" or found is None:
            return f"the evaluation {ended.state}" + (
                f": {ended.exit_reason}" if ended.exit_reason else ""
            )
        return [[level.concurrency, level.tokens_per_s, level.speedup, level.accept_length]
                for level in found.levels]  # fmt: skip

    async def _ended(self, job: JobInfo) -> JobInfo:
        while True:
            now = await self.box.own_job(job.id)
            if now is None or now.state not in LIVE_JOB_STATES:
                return now or job
            await asyncio.sleep(POLL_S)

    async def _stop(self, server: JobInfo) -> None:
        with contextlib.suppress(KeyError, AgentError):  # gone already: nothing holds its GPUs
            await self.box.stop(server.id)

    def _failed(self, step: str, result: dict[str, Any], why: str) -> dict[str, Any]:
        self.journal.step(self.record, step, "failed", why)
        return result | {"error": why}


def best_per_level(measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per concurrency level, the setting with the best speedup (else tokens/s), and its argv."""
    best: dict[int, tuple[float, dict[str, Any]]] = {}
    for result in measured:
        for concurrency, tokens_per_s, speedup, accept in result.get("levels", []):
            score = speedup if speedup is not None else tokens_per_s
            if concurrency not in best or score > best[concurrency][0]:
                best[concurrency] = (score, {
                    "concurrency": concurrency, "setting": result["setting"],
                    "speedup": speedup, "tokens_per_s": tokens_per_s, "accept_length": accept,
                    "command": shlex.join(result["argv"]),
                })  # fmt: skip
    return [entry for _, (_, entry) in sorted(best.items())]


def verdict(best: list[dict[str, Any]]) -> str:
    """`best at c=1: steps 3 · top-k 1 · draft tokens 4 (2.10×); at c=8: … Serve c=1's with: …`."""
    parts = [
        f"c={entry['concurrency']}: {entry['setting']} ("
        + (f"{entry['speedup']:.2f}×" if entry["speedup"] is not None
           else f"{entry['tokens_per_s']:,.0f} tok/s") + ")"
        for entry in best
    ]  # fmt: skip
    return (
        f"best at {'; '.join(parts)}. Serve c={best[0]['concurrency']}'s with: {best[0]['command']}"
    )


def _levels_text(levels: list[list[Any]]) -> str:
    return ", ".join(
        f"c={c}: {s:.2f}×" if s is not None else f"c={c}: {t:,.0f} tok/s" for c, t, s, _ in levels
    )


def _first_error(measured: list[dict[str, Any]]) -> str:
    return next((str(r["error"]) for r in measured if r.get("error")), "no level was measured")
