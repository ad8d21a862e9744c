"""Hostile peers, read in process: a webhook and a server's metrics that misbehave.

(a) The agent's webhook sender against hooks that answer an endless 200, drip a byte a second,
or redirect. Checks: the endless answer is delivered without being read; each drip costs one
deadline per try and later alerts still go; a redirect is no delivery; the sender stops at
once while a POST hangs. Peak memory of this process before and after.
(b) The server probe against NaN samples, wrong types in /server_info and an endless /metrics.
Checks: the probe answers within its timeout with every valid figure, and memory stays flat.
The model server's hostile answers against the real runner are the hostile_answers scenario; the
same peers seen through a running daemon and its link are hostile_servers.
"""

from __future__ import annotations

import time
from pathlib import Path

from agent.probes.sglang_http import TIMEOUT_S, probe_sglang
from agent.watch import notify
from faults.harness.memory import own_peak_mb
from faults.result import Scale, ScenarioResult
from tests.support.hostile_hooks import alert, hook, notifier_for, settled
from tests.support.hostile_metrics import METRICS, server

TITLE = "Hostile peers in process: a webhook and metrics that misbehave"
AGENT_GROWTH_LIMIT_MB = 100.0
HOOK_DEADLINE_S = 3.0
"""A POST's deadline here (15 s in the agent), so a drip's three tries fit the wait."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The two peers, one after the other."""
    result = ScenarioResult("hostile_peers", TITLE, seed)
    before_mb = own_peak_mb()
    await _webhook_part(result)
    await _probe_part(result, scale.pick(full=20, quick=3))
    grown = own_peak_mb() - before_mb
    result.notes.append(f"webhook and probe parts: this process's peak memory grew {grown:.0f} MB")
    if grown > AGENT_GROWTH_LIMIT_MB:
        result.violate(f"peak memory grew {grown:.0f} MB reading hostile answers")
    return result


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
