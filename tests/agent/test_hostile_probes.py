"""A server whose info and metrics misbehave never makes the probe raise or the agent bloat.

A Prometheus NaN sample is legal ("no value now"); wrong types in /server_info (a string where a
count belongs, a list where a name belongs, a NaN) made the probe raise at every refresh, so the
server panel stayed empty. An endless /metrics took the agent to +4 GB within the probe's 5 s.
"""

from __future__ import annotations

from agent.probes.sglang_http import probe_sglang
from tests.support.hostile_metrics import METRICS, server


async def test_nan_samples_and_wrong_types_are_missing_figures_and_the_rest_is_shown() -> None:
    async with server(METRICS) as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert stats.model_path == "m/real"
    assert stats.speculative_algorithm is None
    assert stats.max_running_requests == 48
    assert stats.running_requests == 12
    assert stats.queued_requests == 2
    assert stats.token_usage is None
    assert stats.gen_throughput_tokens_per_s == 100.5


async def test_an_endless_metrics_answer_is_not_read_past_its_bound() -> None:
    async with server("endless") as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert stats.model_path == "m/real"
    assert stats.running_requests is None  # the metrics were refused, not read to the end
