"""The drafter check run by the agent: on the checkpoint the drafter server would serve, kept.

The check (`python -m agent.pipeline.drafter_check`) runs bounded in time and output, with the
agent's interpreter and bundle, once per checkpoint and inputs (a new export of the folder, a new
vocab, another best checkpoint run it again); its JSON report is read as a peer's answer. The
verdict is in every snapshot (`drafter_check`), a failure is an error alert, the autopilot's serve
stage waits for a passed one, and a start of the drafter server by hand is refused unless forced
(agent/operations/job_control.py). `check_now` runs it at once on any folder (`check-drafter HOST PATH`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.bundle import AGENT_PACKAGE
from agent.host.bounded_process import run_bounded
from agent.plans.drafter_inputs import DrafterInputs, drafter_inputs, drafter_server
from agent.probes.training.checkpoints import best_checkpoint_now
from agent.protocol import Alert, DrafterCheck, DrafterField, PipelineConfig, Snapshot
from agent.tasks import TaskOwner

CHECK_TIMEOUT_S = 20.0
"""Reading d2t, t2d and two shapes (a SpecForge training step opened with mmap): seconds. Within a
console's request timeout, so a start by hand is answered; a check past it holds nothing back."""
MAX_REPORT_BYTES = 256 * 1024
MAX_FIELDS = 24
MAX_TEXT = 600
LOOK_EVERY_S = 15.0
"""How often the inputs are looked at again while nothing else changed (they are config files)."""
KEPT = 32
"""Verdicts kept: the one shown, and the recent ones a start by hand may ask for again."""
STAMPED = ("config.json", "model.safetensors", "model.safetensors.index.json", "training_state.pt")


class DrafterChecks:
    """The check of the checkpoint to serve, run once per checkpoint and inputs, its verdict kept."""

    def __init__(self, tasks: TaskOwner, pipeline: Callable[[], PipelineConfig]) -> None:
        self.tasks = tasks
        self.pipeline = pipeline
        self._verdicts: dict[tuple[Any, ...], DrafterCheck] = {}
        self._latest: tuple[Any, ...] | None = None
        self._looked: tuple[float, str | None] = (0.0, None)
        self._why_not = ""

    async def heard(self, snapshot: Snapshot) -> None:
        """Check the checkpoint the drafter server would serve now (an observer listener)."""
        pipeline = self.pipeline()
        if drafter_server(pipeline) is None:
            self._latest, self._why_not = None, ""
            return
        best = best_checkpoint_now(snapshot)
        last, seen = self._looked
        if time.monotonic() - last < LOOK_EVERY_S and best == seen:
            return
        self._looked = (time.monotonic(), best)
        inputs = await asyncio.to_thread(drafter_inputs, pipeline, snapshot)
        if inputs.checkpoint is None:
            self._latest, self._why_not = None, inputs.why_not
            return
        if not await asyncio.to_thread(os.path.exists, inputs.checkpoint):
            # not there yet (training or its export still to run): nothing to alert about
            self._latest, self._why_not = None, f"{inputs.checkpoint} does not exist yet"
            return
        key = await asyncio.to_thread(_key, inputs)
        self._latest = key
        if key not in self._verdicts:
            self._keep(key, DrafterCheck(inputs.checkpoint, None, note="checking"))
            _ = self.tasks.spawn(self._store(key, inputs), f"drafter check {inputs.checkpoint}")

    async def check_now(
        self, snapshot: Snapshot, checkpoint: str | None = None, job: str | None = None
    ) -> DrafterCheck:
        """The verdict on `checkpoint`, else on what drafter server `job` would serve (kept, or run now)."""
        inputs = await asyncio.to_thread(drafter_inputs, self.pipeline(), snapshot, checkpoint, job)
        if inputs.checkpoint is None:
            return DrafterCheck("", None, note=f"not checked: {inputs.why_not}")
        if not await asyncio.to_thread(os.path.exists, inputs.checkpoint):
            return missing(inputs.checkpoint)
        key = await asyncio.to_thread(_key, inputs)
        kept = self._verdicts.get(key)
        if kept is not None and kept.note != "checking":
            return kept
        verdict = await run_check(inputs)
        self._keep(key, verdict)
        return verdict

    def latest(self) -> DrafterCheck | None:
        """The verdict on the checkpoint to serve (safe from any thread)."""
        if self._latest is None:
            return (
                DrafterCheck("", None, note=f"not checked: {self._why_not}")
                if self._why_not
                else None
            )
        return self._verdicts.get(self._latest)

    def alerts(self, now: float) -> list[Alert]:
        """An error while the checkpoint to serve failed its check."""
        verdict = self.latest()
        if verdict is None or verdict.ok is not False:
            return []
        return [Alert("drafter_check_failed", "error", (
            f"the drafter {verdict.checkpoint} failed its check: {failed_text(verdict)}; it will "
            "not be served (check-drafter says every field; start --force serves it anyway)"
        ), verdict.checkpoint, now)]  # fmt: skip

    def _keep(self, key: tuple[Any, ...], verdict: DrafterCheck) -> None:
        """Keep a verdict; past KEPT, the oldest go (every best checkpoint of a run is one)."""
        self._verdicts.pop(key, None)
        self._verdicts[key] = verdict
        while len(self._verdicts) > KEPT:
            oldest = next(iter(self._verdicts))
            if oldest == self._latest:
                self._verdicts[oldest] = self._verdicts.pop(oldest)  # the one shown stays
            else:
                del self._verdicts[oldest]

    async def _store(self, key: tuple[Any, ...], inputs: DrafterInputs) -> None:
        try:
            self._keep(key, await run_check(inputs))
        except Exception as exc:  # never left "checking": the serve stage would wait on it
            self._keep(key, DrafterCheck(inputs.checkpoint or "", None, note=f"not run: {exc}"))
            raise


async def run_check(inputs: DrafterInputs) -> DrafterCheck:
    """Run the check on `inputs`; its verdict, or why there is none."""
    checkpoint = inputs.checkpoint or ""
    argv = (sys.executable, "-m", "agent.pipeline.drafter_check", "--checkpoint", checkpoint,
            *inputs.args)  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(AGENT_PACKAGE.parent))
    try:
        answer = await run_bounded(argv, CHECK_TIMEOUT_S, MAX_REPORT_BYTES, env)
    except OSError as exc:
        return DrafterCheck(checkpoint, None, note=f"not run: {exc}")
    if answer.timed_out or answer.flooded:
        why = "no answer within" if answer.timed_out else "more output than"
        limit = f"{CHECK_TIMEOUT_S:g} s" if answer.timed_out else f"{MAX_REPORT_BYTES:,} bytes"
        return DrafterCheck(checkpoint, None, note=f"not run: {why} {limit}")
    return verdict_of(checkpoint, answer.out, answer.err)


def missing(checkpoint: str) -> DrafterCheck:
    """The verdict on a folder that is not there: nothing to serve."""
    return DrafterCheck(checkpoint, False, (DrafterField(
        "loads", False, f"{checkpoint} does not exist", "the drafter's folder",
        "train it (and export it, for SpecForge) first, or fix the path in the drafter server's "
        "command",
    ),))  # fmt: skip


def verdict_of(checkpoint: str, out: bytes, err: bytes) -> DrafterCheck:
    """The check's report read as a peer's answer: an unreadable one is no verdict."""
    try:
        report: Any = json.loads(out)
        fields = tuple(_field(item) for item in report["fields"][:MAX_FIELDS])
        ok, layout, server = report["ok"], str(report["layout"]), str(report["server"])
        if not isinstance(ok, bool):
            raise ValueError("its verdict is not true or false")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        said = err.decode(errors="replace").strip().splitlines()[-1:] or [str(exc)]
        return DrafterCheck(checkpoint, None, note=f"no report: {said[0][:200]}")
    return DrafterCheck(checkpoint, ok, fields, layout[:40], server[:20], checked_at=time.time())


def failed_text(verdict: DrafterCheck, shown: int = 3, fixes: bool = False) -> str:
    """The failed fields in one line: name, found, expected (and each fix, with `fixes`)."""
    failed = [f for f in verdict.fields if f.ok is False]
    return "; ".join(
        f"{f.name}: {f.found}, expected {f.expected}" + (f" ({f.fix})" if fixes else "")
        for f in failed[:shown]
    )


def _field(item: Any) -> DrafterField:
    ok = item["ok"]
    if ok is not None and not isinstance(ok, bool):
        raise ValueError(f"field {item['name']!r}: ok is {ok!r}")
    return DrafterField(
        str(item["name"])[:60], ok, str(item["found"])[:MAX_TEXT],
        str(item.get("expected", ""))[:MAX_TEXT], str(item.get("fix", ""))[:MAX_TEXT],
    )  # fmt: skip


def _key(inputs: DrafterInputs) -> tuple[Any, ...]:
    """The inputs and their files' times: a new export of the folder, a new vocab, checked again."""
    folder = Path(inputs.checkpoint or "")
    files = [folder / name for name in STAMPED]
    args = inputs.args
    for flag, name in (("--target-config", ""), ("--vocab-dir", "vocab_report.json")):
        if flag in args[:-1]:
            files.append(Path(args[args.index(flag) + 1]) / name)
    return (inputs.checkpoint, args, *map(_stamp, files))


def _stamp(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
