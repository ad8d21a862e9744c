"""Probes: SGLang stats lines of every known form, nvidia-smi output, SGLang over HTTP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from agent.datasets.writers import WriterFinder
from agent.probes.cache import STARTING_GRACE_S, ProbeCache, nvidia_smi_binary, with_down_since
from agent.probes.gpus import read_gpus
from agent.probes.sglang_http import probe_sglang
from agent.probes.sglang_log import latest_decode_stats, parse_stat_line
from agent.protocol import (
    SNAPSHOT,
    Alert,
    JobInfo,
    PipelineConfig,
    ServerStats,
    Snapshot,
    SnapshotParams,
)
from agent.state.health import StateHealth
from agent.watch.snapshot_assembly import Finish, SnapshotAssembly
from tests.support.loopback_app import serving
from tests.support.operations import local_link, snapshot_where
from tests.support.simulator_process import running_simulator
from tests.support.waits import until

SAMPLES = {
    "[2026-11-29 10:00:00 TP0] Decode batch, #running-req: 12, #token: 34567, token usage: 0.21, "
    "cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0, ": {
        "kind": "decode", "#running-req": 12.0, "token usage": 0.21, "cuda graph": True,
        "gen throughput (token/s)": 1234.56, "#queue-req": 0.0,
    },
    "[2026-11-29 10:00:00 TP0] Decode batch. #running-req: 3, #token: 99, token usage: 0.01, "
    "accept len: 2.85, cuda graph: False, gen throughput (token/s): 88.10, #queue-req: 4": {
        "kind": "decode", "accept len": 2.85, "#queue-req": 4.0, "cuda graph": False,
    },
    "[11-29 10:00:00 DP0 TP0] Decode batch [120], #running-req: 1, #full token: 5, full token usage: 0.00, "
    "accept len: 3.10, accept rate: 0.52, cuda graph: True, gen throughput (token/s): 41.00, #queue-req: 0": {
        "kind": "decode", "accept rate": 0.52, "#full token": 5.0,
    },
    "[2026-11-29 10:00:00 TP0] Prefill batch, #new-seq: 3, #new-token: 2048, #cached-token: 512, "
    "token usage: 0.05, #running-req: 9, #queue-req: 40, #pending-token: 0, cuda graph: False, "
    "input throughput (token/s): 9876.54": {"kind": "prefill", "#new-seq": 3.0, "#cached-token": 512.0},
}  # fmt: skip


@pytest.mark.parametrize("line", SAMPLES)
def test_every_form_of_stats_line_parses(line: str) -> None:
    fields = parse_stat_line(line)
    assert fields is not None
    for key, value in SAMPLES[line].items():
        assert fields[key] == value


@pytest.mark.parametrize(
    "line",
    [
        "[2026-11-29 10:00:00 TP0] KV cache pool is full. Retract requests.",
        "Decode batch, #running-req: 1",
        "",
    ],
)
def test_other_lines_are_not_stats(line: str) -> None:
    assert parse_stat_line(line) is None


def test_the_latest_decode_line_wins(tmp_path: Path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(SAMPLES) + "\nsome other line\n")
    stats = latest_decode_stats(log)
    assert stats is not None
    assert stats["accept rate"] == 0.52
    assert latest_decode_stats(tmp_path / "missing.log") is None


FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=*) printf '0, GPU-aaa, NVIDIA H100 80GB HBM3, 97, 71234, 81559, 64, 612.50\\n1, GPU-bbb, NVIDIA H100 80GB HBM3, 0, 3, 81559, 31, [N/A]\\n' ;;
  --query-compute-apps=*) printf 'GPU-aaa, 4242, 70000\\n' ;;
esac
"""


async def test_nvidia_smi_output_is_read(tmp_path: Path) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    reading = await read_gpus(str(smi))
    first, second = reading.gpus
    assert (first.index, first.utilization_pct, first.memory_used_mib, first.pids) == (
        0,
        97.0,
        71234.0,
        (4242,),
    )
    assert (second.power_w, second.pids) == (None, ())


async def test_no_nvidia_smi_means_no_gpu(tmp_path: Path) -> None:
    reading = await read_gpus(str(tmp_path / "absent"))
    assert reading.gpus == ()
    assert reading.note.startswith("no GPU")


async def test_sglang_probe_against_the_simulator(tmp_path: Path) -> None:
    with running_simulator(tmp_path / "sim", "--model-path", "org/target-model") as sim:
        stats = await probe_sglang(sim.url)
    assert stats.healthy is True
    assert stats.model_path == "org/target-model"
    assert stats.max_running_requests == 64
    assert stats.running_requests == 0


async def test_a_dead_server_is_a_reading_and_an_alert(tmp_path: Path, state_dir: Path) -> None:
    stats = await probe_sglang("http://127.0.0.1:1")
    assert stats.healthy is False
    assert stats.detail.startswith(
        "unreachable: nothing listens on 127.0.0.1:1 (connection refused)"
    )
    assert "ssl:default" not in stats.detail, "aiohttp's own words are not the reason"
    async with local_link(state_dir, PipelineConfig(sglang_url="http://127.0.0.1:1")) as link:
        snapshot = await snapshot_where(link, lambda s: s.server is not None, 20)
    assert snapshot.server is not None
    assert snapshot.server.healthy is False
    assert [alert.kind for alert in snapshot.alerts] == ["server_down"]
    assert snapshot.gpu_note.startswith(("no GPU", "nvidia-smi failed")) or snapshot.gpus


def test_a_server_stopped_on_request_is_information_not_an_error() -> None:
    cache = ProbeCache()
    cache.server = ServerStats(url="http://127.0.0.1:1", healthy=False, detail="unreachable")
    crashed = JobInfo("sglang-1", "sglang", "server", "failed", (), started_at=1.0)
    stopped = JobInfo("sglang-2", "sglang", "server", "stopped", (), started_at=2.0)
    assert [a.severity for a in cache.alerts(3.0, (crashed,))] == ["error"]
    [alert] = cache.alerts(3.0, (crashed, stopped))
    assert alert.severity == "info"
    assert "stopped on request" in alert.message
    stopping = JobInfo("sglang-2", "sglang", "server", "stopping", (), started_at=2.0)
    [grace] = cache.alerts(3.0, (crashed, stopping))  # its stop signal's grace: asked, not failed
    assert grace.severity == "info"


def test_a_server_job_still_loading_is_a_warning_until_its_grace_ends() -> None:
    """At every demo start the server was a red error while its job loaded the model."""
    cache = ProbeCache()
    cache.server = ServerStats(url="http://127.0.0.1:1", healthy=False, detail="unreachable: x")
    job = JobInfo("sglang-1", "sglang", "server", "running", (), started_at=1000.0)
    [young] = cache.alerts(1030.0, (job,))
    assert young.severity == "warning"
    assert "is starting: job sglang launched 30 s ago (unreachable: x)" in young.message
    [old] = cache.alerts(1000.0 + STARTING_GRACE_S + 1, (job,))
    assert old.severity == "error"


def test_a_down_server_keeps_the_time_it_was_first_found_down() -> None:
    """The console says "down since HH:MM": the first probe that found it down, while it stays so."""
    url = "http://127.0.0.1:1"
    up = ServerStats(url, True, probed_at=10.0)
    down = [ServerStats(url, False, probed_at=at) for at in (20.0, 30.0)]
    first = with_down_since(up, down[0])
    assert first.down_since == 20.0
    assert with_down_since(first, down[1]).down_since == 20.0
    assert with_down_since(first, ServerStats(url, True, probed_at=40.0)).down_since is None
    other = ServerStats("http://127.0.0.1:2", False, probed_at=50.0)
    assert with_down_since(first, other).down_since == 50.0


async def test_readings_taken_for_another_server_config_are_dropped_at_once() -> None:
    cache = ProbeCache()
    cache.refresh_if_stale(PipelineConfig())  # the daemon's first scan, before any hello
    await until(lambda: cache.server, "a server reading", 20)
    assert cache.server is not None
    assert cache.server.url is None
    cache.refresh_if_stale(PipelineConfig(sglang_url="http://127.0.0.1:1"))
    assert reading(cache) is None, "a reading of no server is not a reading of this one"
    await until(lambda: reading(cache) is not None, "a reading of it", 20)
    assert (server := reading(cache)) is not None
    assert (server.url, server.healthy) == ("http://127.0.0.1:1", False)


def reading(cache: ProbeCache) -> ServerStats | None:
    """The cache's server reading now (a call, so a type checker does not carry it over)."""
    return cache.server


async def test_a_server_down_is_named_by_the_configured_api() -> None:
    cache = ProbeCache()
    cache.refresh_if_stale(
        PipelineConfig(sglang_url="http://127.0.0.1:1", sglang_api="openai-chat")
    )
    await until(lambda: reading(cache) is not None, "a reading", 20)
    [alert] = cache.alerts(time.time())
    assert alert.message.startswith(
        "the OpenAI-compatible server at http://127.0.0.1:1: unreachable"
    )
    assert "SGLang" not in alert.message


async def test_the_demos_nvidia_smi_stand_in_shows_its_gpus_held_by_the_server_on_its_port(
    tmp_path: Path,
) -> None:
    """Its server, and its own workspace's trainers: another demo's trainer holds nothing."""
    workspace, other = tmp_path / "demo", tmp_path / "other-demo"
    (workspace / "agent-state" / "jobs" / "train-1").mkdir(parents=True)
    other.mkdir()
    standin = tmp_path / "nvidia-smi"
    standin.write_text(
        f"#!/bin/sh\nexec {sys.executable} -m agent.simulator.nvidia_smi --serving-port 4321 "
        f'--workspace {workspace} "$@"\n'
    )
    standin.chmod(0o755)
    idle = await read_gpus(str(standin))
    assert [(g.index, g.memory_used_mib, g.pids) for g in idle.gpus] == [(0, 3.0, ()), (1, 3.0, ())]
    looks_like = [sys.executable, "-c", "import time; time.sleep(60)", "agent.simulator"]
    trains = [sys.executable, "-c", "import time; time.sleep(60)", "agent.simulator.train"]
    processes = [
        server := subprocess.Popen([*looks_like, "--port", "4321"]),
        subprocess.Popen([*looks_like, "--port", "4322"]),
        trainer := subprocess.Popen(trains, cwd=workspace / "agent-state" / "jobs" / "train-1"),
        subprocess.Popen(trains, cwd=other),
    ]
    try:
        held = await read_gpus(str(standin))
    finally:
        for process in processes:
            process.kill()
            process.wait()
    holders = tuple(sorted((server.pid, trainer.pid)))
    assert [(g.memory_used_mib, g.pids) for g in held.gpus] == [(70000.0, holders)] * 2
    assert held.note == ""


def test_the_gpu_probe_runs_the_hosts_nvidia_smi_with_its_home_expanded() -> None:
    assert nvidia_smi_binary(PipelineConfig()) == "nvidia-smi"
    configured = PipelineConfig(nvidia_smi="~/bin/nvidia-smi")
    assert nvidia_smi_binary(configured) == str(Path.home() / "bin" / "nvidia-smi")


class ReadingsByHand(ProbeCache):
    """Probe readings only the test sets: no refresh of its own runs."""

    def refresh_if_stale(self, pipeline: PipelineConfig, every_s: float = 0.0) -> None:
        """Nothing: the readings are the test's."""


class LandingHealth(StateHealth):
    """A state folder's health whose alerts are asked after the probes' alerts: a probe refresh
    is made to land right then, between a snapshot's alerts and its server panel."""

    def __init__(self, root: Path, cache: ProbeCache, landing: ServerStats) -> None:
        super().__init__(root)
        self.cache, self.landing = cache, landing

    def alerts(self, now: float) -> list[Alert]:
        self.cache.server = self.landing
        return super().alerts(now)


async def test_a_refresh_landing_mid_snapshot_never_splits_its_server_from_its_alerts(
    tmp_path: Path,
) -> None:
    cache = ReadingsByHand()
    down = ServerStats("http://127.0.0.1:1", healthy=False, detail="unreachable")
    health = LandingHealth(tmp_path / "state", cache, down)
    assembly = SnapshotAssembly(cache, WriterFinder(), health)
    finish = Finish(jobs=lambda: (), alerts=lambda snapshot: snapshot)
    first = await assembly.take(finish, None, PipelineConfig())
    server_down = [a for a in first.alerts if a.kind == "server_down"]
    assert (first.server, server_down) == (None, [])  # the reading it began with, whole
    second = await assembly.take(finish, None, PipelineConfig())
    assert second.server == down
    assert [a.kind for a in second.alerts] == ["server_down"]


async def test_the_first_snapshot_of_a_fresh_agent_already_carries_its_server(
    state_dir: Path,
) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)  # a server busy loading: its first probe takes a while
        return web.Response(status=503, text="loading")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", slow)
    async with serving(app) as url, local_link(state_dir, PipelineConfig(sglang_url=url)) as link:
        first: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    assert first.server is not None, "the first status --json said server: null"
    assert first.server.healthy is False
