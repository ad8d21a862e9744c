"""Hostile peers: a model server, a webhook and a server's metrics that misbehave (#28).

(a) The real runner against a server on loopback that gives nine prompts in ten a hostile answer
on every try (negative, boolean and trillion token counts, ids as strings or -1, a NaN, a list
for meta_info, a 20 MB body, a body cut mid-way). Checks: the run ends by itself; only the good
answers are records (no bad record written, none lost); every hostile prompt is marked in
errors.jsonl with its reason; the runner's peak memory stays small.
(b) The agent's webhook sender against hooks that answer an endless 200, drip a byte a second,
or redirect. Checks: the endless answer is delivered without being read; each drip costs one
deadline per try and later alerts still go; a redirect is no delivery; the sender stops at
once while a POST hangs. Peak memory of this process before and after.
(c) The server probe against NaN samples, wrong types in /server_info and an endless /metrics.
Checks: the probe answers within its timeout with every valid figure, and memory stays flat.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import time
from pathlib import Path

from agent.probes.sglang_http import TIMEOUT_S, probe_sglang
from agent.watch import notify
from faults._hostile_common import watch_peak_mb
from faults.result import Scale, ScenarioResult
from tests.support.hostile_hooks import alert, hook, notifier_for, settled
from tests.support.hostile_metrics import METRICS, server
from tests.support.hostile_server import HOSTILE, hostile_server
from tests.support.runner_files import response_ids, runner_command, status, write_id_prompts
from tests.support.simulator_process import agent_env

TITLE = "Hostile peers: a model server, a webhook and metrics that misbehave"
RUN_TIMEOUT_S = 300.0
RUNNER_RSS_LIMIT_MB = 400.0
AGENT_GROWTH_LIMIT_MB = 100.0
HOOK_DEADLINE_S = 3.0
"""A POST's deadline here (15 s in the agent), so a drip's three tries fit the wait."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three peers, one after the other."""
    result = ScenarioResult("hostile_peers", TITLE, seed)
    await asyncio.to_thread(_runner_part, result, workdir, scale.pick(full=200, quick=20))
    before_mb = _peak_mb()
    await _webhook_part(result)
    await _probe_part(result, scale.pick(full=20, quick=3))
    grown = _peak_mb() - before_mb
    result.notes.append(f"webhook and probe parts: this process's peak memory grew {grown:.0f} MB")
    if grown > AGENT_GROWTH_LIMIT_MB:
        result.violate(f"peak memory grew {grown:.0f} MB reading hostile answers")
    return result


def _runner_part(result: ScenarioResult, workdir: Path, prompts: int) -> None:
    folder = workdir / "B1"
    write_id_prompts(folder, prompts)
    good = {f"p{i}" for i in range(0, prompts, 10)}
    with hostile_server(workdir / "server", prompts) as url:
        started = time.monotonic()
        command = runner_command(folder, url, "--api", "sglang", "--max-retries", "1")
        runner = subprocess.Popen(command, env=agent_env(), stderr=subprocess.DEVNULL)
        peak_mb = watch_peak_mb(runner, RUN_TIMEOUT_S)
        took = time.monotonic() - started
    result.faults += prompts - len(good)
    result.attempted += prompts
    records = response_ids(folder)
    result.acknowledged += len(records)
    result.lost += len(good - set(records))
    result.corrupt += len(set(records) - good)
    errors = folder / "errors.jsonl"
    marked = {json.loads(line)["id"] for line in errors.read_text().splitlines()}
    unmarked = sorted(set(f"p{i}" for i in range(prompts)) - good - marked)
    if unmarked:
        result.violate(f"runner: {len(unmarked)} hostile prompt(s) with no errors.jsonl line")
    if status(folder).get("state") != "stopped" and runner.returncode is None:
        result.violate("runner: the run did not end")
    result.recovery_s.append(took)
    result.notes.append(
        f"runner: {prompts} prompts, {len(records)} good answers written, "
        f"{len(marked)} hostile ones marked ({len(HOSTILE)} kinds), exit {runner.returncode} "
        f"in {took:.1f} s; runner peak memory {peak_mb:.0f} MB (limit {RUNNER_RSS_LIMIT_MB:.0f})"
    )
    if peak_mb > RUNNER_RSS_LIMIT_MB:
        result.violate(f"runner: peak memory {peak_mb:.0f} MB")


async def _webhook_part(result: ScenarioResult) -> None:
    saved = notify.POST_DEADLINE_S, notify.BACKOFF_S
    notify.POST_DEADLINE_S, notify.BACKOFF_S = HOOK_DEADLINE_S, 0.1  # a drip's 3 tries, quicker
    try:
        await _each_hook(result)
    finally:
        notify.POST_DEADLINE_S, notify.BACKOFF_S = saved


async def _each_hook(result: ScenarioResult) -> None:
    for behaviour, expect_sent in (("endless", 1), ("redirect", 0), ("drip", 0)):
        with hook(behaviour) as (url, posts):
            notifier, tasks = notifier_for(url)
            started = time.monotonic()
            try:
                await alert(notifier, behaviour)
                await settled(notifier, 1)
            finally:
                closing = time.monotonic()
                await tasks.close()
                stop_s = time.monotonic() - closing
        result.faults += 1
        result.attempted += 1
        ok = notifier.sent == expect_sent and notifier.sent + notifier.dead_letters == 1
        result.acknowledged += int(ok)
        if not ok:
            result.violate(
                f"webhook {behaviour}: sent {notifier.sent}, lost {notifier.dead_letters}"
            )
        result.detection_s.append(time.monotonic() - started)
        result.notes.append(
            f"webhook {behaviour}: {len(posts)} POST(s) reached it, sent {notifier.sent}, "
            f"dead letters {notifier.dead_letters} ({notifier.last_failure[0] if notifier.last_failure else '-'}), "
            f"settled in {closing - started:.1f} s (POST deadline {HOOK_DEADLINE_S:g} s), "
            f"sender stopped in {stop_s * 1000:.0f} ms"
        )


async def _probe_part(result: ScenarioResult, rounds: int) -> None:
    for metrics in ("nan and wrong types", "endless"):
        took: list[float] = []
        for _ in range(rounds):
            async with server(METRICS if metrics != "endless" else "endless") as url:
                started = time.monotonic()
                stats = await probe_sglang(url)
                took.append(time.monotonic() - started)
            result.faults += 1
            result.attempted += 1
            shown = stats.healthy is True and stats.model_path == "m/real"
            if metrics != "endless":
                shown = shown and stats.running_requests == 12 and stats.token_usage is None
            result.acknowledged += int(shown)
            if not shown:
                result.violate(f"probe ({metrics}): the valid figures were not all shown: {stats}")
        result.notes.append(
            f"probe ({metrics}): {rounds} reading(s), slowest {max(took):.2f} s "
            f"(timeout {TIMEOUT_S:g} s)"
        )


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
