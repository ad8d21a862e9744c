"""The simulator's drafter (--speculative-accept-length), each behaviour citing the SGLang line it
copies; paths are under `sglang/srt/` in the sglang 0.5.23 wheel (agent/simulator/speculative.py).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.probes.sglang_log import parse_stat_line
from agent.simulator.engine import Engine, EngineSettings, SimRequest
from agent.simulator.speculative import Speculation
from agent.simulator.tokens import PlannedAnswer
from tests.support.simulator_process import agent_env, running_simulator

FAST = ("--speed", "50", "--mean-tokens", "300", "--sd-tokens", "1", "--vocab-size", "1000")
DRAFTER = ("--speculative-accept-length", "2.5", "--speculative-num-draft-tokens", "4")


async def generate(http: aiohttp.ClientSession, url: str, n: int = 200) -> dict[str, Any]:
    body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": n}}
    async with http.post(f"{url}/generate", json=body) as response:
        assert response.status == 200
        answer: dict[str, Any] = await response.json()
        return answer


async def test_meta_info_carries_the_spec_fields_after_e2e_latency(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # managers/tokenizer_manager.py:2753-2756 (after e2e_latency, only with an algorithm),
    # :3155-3172 (accept_rate = correct / (verify_ct * (num_draft_tokens - 1)),
    # accept_length = completion_tokens / verify_ct)
    with (
        running_simulator(tmp_path / "d", *FAST, *DRAFTER) as drafter,
        running_simulator(tmp_path / "b", *FAST) as plain,
    ):
        meta = (await generate(http, drafter.url))["meta_info"]
        plain_meta = (await generate(http, plain.url))["meta_info"]
    keys = list(meta)
    assert keys[keys.index("e2e_latency") + 1 :] == [
        "spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts",
        "spec_num_proposed_drafts", "spec_verify_ct", "spec_correct_drafts_histogram",
    ]  # fmt: skip
    verify = meta["spec_verify_ct"]
    assert meta["spec_accept_length"] == meta["completion_tokens"] / verify
    assert meta["spec_accept_length"] == pytest.approx(2.5, rel=0.02)
    assert meta["spec_num_proposed_drafts"] == verify * 3
    assert meta["spec_accept_rate"] == meta["spec_num_correct_drafts"] / (verify * 3)
    assert not [key for key in plain_meta if key.startswith("spec_")]


async def test_decode_lines_and_metrics_say_the_accept_length(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # managers/scheduler_components/metrics_reporter.py:972-1005 ("accept len: a, accept rate: b, "
    # before "cuda graph"); observability/metrics_collector.py:511-522 (gauges), 1865-1869 (counter)
    with running_simulator(tmp_path, *FAST, *DRAFTER) as sim:
        await asyncio.gather(*(generate(http, sim.url, 300) for _ in range(4)))
        async with http.get(f"{sim.url}/metrics") as response:
            metrics = await response.text()
        async with http.get(f"{sim.url}/server_info") as response:
            info = await response.json()
    decode = [line for line in sim.log_file.read_text().splitlines() if "Decode batch" in line]
    assert decode
    assert re.search(
        r"token usage: [0-9.]+, accept len: [0-9.]+, accept rate: [0-9.]+, cuda graph: True",
        decode[-1],
    )
    stats = parse_stat_line(decode[-1])  # the agent's own reading of the line
    assert stats is not None
    assert stats["accept len"] == pytest.approx(2.5, rel=0.02)
    assert stats["accept rate"] == pytest.approx(0.5, rel=0.05)
    gauge = re.search(r"^sglang:spec_accept_length\{[^}]*\} ([0-9.]+)$", metrics, re.MULTILINE)
    assert gauge is not None
    assert float(gauge[1]) == pytest.approx(2.5, rel=0.02)
    assert re.search(r"^sglang:spec_verify_calls_total\{[^}]*\} [1-9]", metrics, re.MULTILINE)
    assert (info["speculative_algorithm"], info["speculative_num_draft_tokens"]) == ("EAGLE3", 4)


def run_engine(speculation: Speculation | None, requests: int) -> float:
    """Tokens per simulated second each of `requests` running requests gets, one tick of 1 s."""
    settings = EngineSettings(decode_tokens_per_s=5000, max_tokens_per_s_per_request=80,
                              max_running_requests=256, speculation=speculation)  # fmt: skip
    engine = Engine(settings, lambda line: None)
    for n in range(requests):
        engine.submit(SimRequest(str(n), 1, PlannedAnswer(list(range(100_000)), "length"), 100_000))
    engine._admit()
    engine._tick(1.0)
    return engine.running[0].produced


@pytest.mark.parametrize(
    ("running", "expected"), [(1, 2.0 / 1.25), (8, 2.0 / 1.25), (128, 2.0 / 4)]
)
def test_a_drafter_helps_at_low_batch_and_hurts_at_high_batch(
    running: int, expected: float
) -> None:
    """Alone: A / (1 + overhead) faster. A full batch: A / num_draft_tokens of the throughput."""
    drafter = Speculation(accept_length=2.0, num_draft_tokens=4, step_overhead=0.25)
    assert run_engine(drafter, running) / run_engine(None, running) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            ("--speculative-accept-length", "5"),
            "must be between 1 and --speculative-num-draft-tokens (4)",
        ),
        (("--speculative-accept-length", "0.5"), "must be between 1 and"),
        (
            ("--speculative-accept-length", "2", "--speculative-num-draft-tokens", "1"),
            "must be 2 or more",
        ),
    ],
)
def test_an_impossible_drafter_is_refused_in_one_line(flags: tuple[str, ...], words: str) -> None:
    ran = subprocess.run([sys.executable, "-m", "agent.simulator", "--port", "0", *flags],
                         env=agent_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 2
    assert words in ran.stderr
