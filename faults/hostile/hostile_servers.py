"""Hostile servers: a model server and webhooks that misbehave, against the real daemon.

Each round, the daemon's probe reads a model server whose /server_info has wrong types and a
NaN and whose /metrics has NaN samples, then never ends; the server panel must show every valid
figure (model, running requests, healthy) at each refresh. Then a server_down alert (a fresh dead
server URL per hook) goes to a hook that answers an endless 200, one that redirects, and a good
one: the endless one counts as delivered without being read, the redirect is not followed and
is a dead letter, and the good one receives its alert. Last, a hook that drips a byte a second
(or, every other round, an https hook whose TLS handshake drips) holds a POST in flight while
`python -m agent stop` runs: the stop must end the daemon within its bound, and the next round's
attach start a new one. Figures: alerts delivered, the daemon's peak memory (VmHWM), time to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from agent.daemon import EXIT_DEADLINE_S
from agent.protocol import (
    NOTIFY_STATUS,
    SNAPSHOT,
    NotifyConfig,
    NotifyStatus,
    NotifyStatusParams,
    PipelineConfig,
    ServerStats,
    Snapshot,
    SnapshotParams,
)
from console.link.agent_link import AgentLink, LinkError
from faults.harness.agents import agent_cleanup, daemon_pid
from faults.harness.memory import resident_mb
from faults.hostile._hostile_server_peers import Peers, hostile_peers
from faults.result import Scale, ScenarioResult
from tests.support.operations import local_link
from tests.support.ports import free_port
from tests.support.simulator_process import agent_env
from tests.support.tls_hooks import tls_drip_hook
from tests.support.waits import wait_until

TITLE = "Hostile servers: NaN and wrong types, endless bodies, redirects, drips, a stop mid-POST"
WAIT_S = 40.0
STOP_LIMIT_S = EXIT_DEADLINE_S
"""`python -m agent stop` must end the daemon before its own exit deadline would."""
DAEMON_PEAK_LIMIT_MB = 300.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`rounds` rounds, each ending in a stop mid-POST; then one more attach."""
    result = ScenarioResult("hostile_servers", TITLE, seed)
    state = workdir / "state"
    peaks: list[float] = []
    async with agent_cleanup(state), hostile_peers() as peers:
        for round_ in range(scale.pick(full=3, quick=1)):
            await _round(result, state, peers, round_, peaks)
        await _attach_again(result, state)
    result.notes.append(
        f"daemon peak memory at most {max(peaks, default=0):.0f} MB "
        f"(limit {DAEMON_PEAK_LIMIT_MB:.0f}); stop times in recovery_s"
    )
    return result


async def _round(
    result: ScenarioResult, state: Path, peers: Peers, round_: int, peaks: list[float]
) -> None:
    await _probe_part(result, state, peers)
    for kind in ("endless", "redirect", "good"):
        await _hook_part(result, state, peers, kind)
    await _stop_part(result, state, peers, "drip" if round_ % 2 == 0 else "tls", peaks)


@contextlib.asynccontextmanager
async def _linked(
    state: Path, pipeline: PipelineConfig, *, apply: bool = True
) -> AsyncIterator[AgentLink]:
    """A link to the state folder's daemon (started if none runs), `pipeline` applied on purpose.

    With `apply` False the caller applies it when it is ready. Each part runs its own config on the one daemon: a hello only compares it.
    """
    async with local_link(state, pipeline) as link:
        if apply:
            await link.apply_pipeline(pipeline)
        yield link


async def _probe_part(result: ScenarioResult, state: Path, peers: Peers) -> None:
    for metrics in ("nan", "endless"):
        peers.metrics = metrics
        await _probe_once(result, state, peers, metrics)


async def _probe_once(result: ScenarioResult, state: Path, peers: Peers, metrics: str) -> None:
    """A refresh after now must show every valid figure of the hostile answers."""
    result.faults += 1
    result.attempted += 1
    since, seen = time.time(), list[ServerStats]()
    async with _linked(state, PipelineConfig(sglang_url=peers.model_url)) as link:
        shown = await wait_until(lambda: _shown(link, since, metrics, seen), WAIT_S)
    result.acknowledged += int(shown)
    if shown:
        result.notes.append(f"probe ({metrics} /metrics): {_panel(seen[-1])}")
    else:
        result.violate(
            f"probe ({metrics} /metrics): the panel never showed the valid figures: {seen[-1:]}"
        )


async def _shown(link: AgentLink, since: float, metrics: str, seen: list[ServerStats]) -> bool:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    server = snapshot.server
    if server is None or server.probed_at < since:
        return False
    seen.append(server)
    running = 12 if metrics == "nan" else None  # an endless /metrics is refused, not read
    return (
        server.healthy,
        server.model_path,
        server.running_requests,
        server.max_running_requests,
    ) == (True, "m/real", running, 48)


def _panel(server: ServerStats) -> str:
    return (
        f"healthy {server.healthy}, model {server.model_path}, running {server.running_requests}, "
        f"queued {server.queued_requests}, max running {server.max_running_requests}, "
        f"token usage {server.token_usage}"
    )


async def _hook_part(result: ScenarioResult, state: Path, peers: Peers, kind: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # its server_down alert is the one watched for
    pipeline = PipelineConfig(sglang_url=dead, notify=NotifyConfig(f"{peers.hooks_url}/{kind}"))
    async with _linked(state, pipeline, apply=False) as link:
        # counted before the new hook is in place: the agent may probe the dead server, raise its
        # alert and deliver it between an apply and the next request (a full parallel run did)
        before = await _notify_status(link)
        await link.apply_pipeline(pipeline)
        started = time.monotonic()
        settled = await wait_until(
            lambda: _delivered(peers, dead) if kind == "good" else _settled(link, before), WAIT_S
        )
        # the hook has the body before the agent has read its answer and counted it sent: under
        # a loaded machine that gap read as "sent 0" (seen in a full parallel run)
        settled = settled and await wait_until(lambda: _settled(link, before), WAIT_S)
        after = await _notify_status(link)
        await wait_until(lambda: _quiet(link), WAIT_S)  # its tries end before the next hook
    took = time.monotonic() - started
    sent, lost = after.sent - before.sent, after.dead_letters - before.dead_letters
    ok = settled and not peers.posts["followed"] and _as_expected(kind, sent, lost)
    _count_hook(result, kind, ok, took)
    if not ok:
        result.violate(
            f"hook {kind}: sent {sent}, dead letters {lost} ({after.last_failure}), "
            f"redirects followed {peers.posts['followed']}"
        )
    result.notes.append(
        f"hook {kind}: {peers.posts[kind]} POST(s) so far; sent {sent}, lost {lost} "
        f"({(after.last_failure if lost else None) or '-'}) in {took:.1f} s"
    )


def _as_expected(kind: str, sent: int, lost: int) -> bool:
    """A redirect is a dead letter; an endless 200 and a good hook are deliveries."""
    return (sent, lost > 0) == (0, True) if kind == "redirect" else sent > 0 and lost == 0


def _count_hook(result: ScenarioResult, kind: str, ok: bool, took: float) -> None:
    result.faults += kind != "good"
    result.attempted += 1
    result.acknowledged += int(ok)
    if kind == "good":  # the alert a working hook must get, whatever came before it
        result.detection_s.append(took)
        result.lost += int(not ok)


async def _delivered(peers: Peers, dead: str) -> bool:
    return any(json.loads(body).get("dataset") == dead for body in peers.delivered)


async def _notify_status(link: AgentLink) -> NotifyStatus:
    status: NotifyStatus = await link.call(NOTIFY_STATUS, NotifyStatusParams())
    return status


async def _quiet(link: AgentLink) -> bool:
    """Nothing queued or being tried: what follows is the next hook's alone."""
    return (await _notify_status(link)).pending == 0


async def _settled(link: AgentLink, before: NotifyStatus) -> bool:
    now = await _notify_status(link)
    return now.sent + now.dead_letters > before.sent + before.dead_letters


async def _stop_part(
    result: ScenarioResult, state: Path, peers: Peers, kind: str, peaks: list[float]
) -> None:
    with tls_drip_hook() as (tls_url, accepted):
        url = tls_url if kind == "tls" else f"{peers.hooks_url}/drip"
        dead = f"http://127.0.0.1:{free_port()}"
        async with _linked(state, PipelineConfig(sglang_url=dead, notify=NotifyConfig(url))):
            pass
        in_flight = await wait_until(
            lambda: bool(accepted if kind == "tls" else peers.posts["drip"]), WAIT_S
        )
        peaks.append(resident_mb(daemon_pid(state), "VmHWM"))
        took, code = await asyncio.to_thread(_stop, state)
    result.faults += 1
    result.recovery_s.append(took)
    if not in_flight:
        result.violate(f"stop ({kind} hook): no POST reached the hook")
    if code != 0 or took > STOP_LIMIT_S:
        result.violate(
            f"stop ({kind} hook): `python -m agent stop` exited {code} after {took:.1f} s"
        )
    if peaks[-1] > DAEMON_PEAK_LIMIT_MB:
        result.violate(f"daemon peak memory {peaks[-1]:.0f} MB")
    result.notes.append(f"stop with a {kind} hook's POST in flight: {took:.2f} s, exit {code}")


def _stop(state: Path) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "agent", "stop", "--state-dir", str(state)],
        env=agent_env(), capture_output=True, timeout=60.0, check=False,
    )  # fmt: skip
    return time.monotonic() - started, done.returncode


async def _attach_again(result: ScenarioResult, state: Path) -> None:
    result.attempted += 1
    try:
        async with _linked(state, PipelineConfig()):
            result.acknowledged += 1
    except LinkError as exc:
        result.violate(f"attach after the stop: {exc}")
