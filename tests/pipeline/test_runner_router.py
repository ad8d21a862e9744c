"""The runner and the probes behind the real sglang-router 0.3.2, in front of simulators."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.pipeline.inference.in_flight import ABORT_GRACE_S
from agent.probes.cache import ProbeCache
from agent.probes.sglang_http import probe_sglang
from agent.simulator.tokenizer import build_tokenizer
from tests.support.export_data import build_think_tokenizer, write_jsonl
from tests.support.ports import free_port
from tests.support.router_process import require_router, running_router
from tests.support.runner_files import (
    RUN_TIMEOUT_S,
    response_ids,
    run_runner,
    start_runner,
    status,
    wait_for_status,
    write_id_prompts,
)
from tests.support.simulator_process import SimulatorProcess, running_simulator
from tests.support.waits import wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_router()
    return build_tokenizer(tmp_path_factory.mktemp("router-tokenizer"))


@contextlib.contextmanager
def workers(
    folder: Path, tokenizer: Path, ports: list[int], *args: str
) -> Iterator[list[SimulatorProcess]]:
    """Simulators on the given ports, reporting the local tokenizer as their model."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                running_simulator(
                    folder / f"w{port}", "--port", str(port), "--model-path", str(tokenizer), *args
                )
            )
            for port in ports
        ]


def worker_urls(ports: list[int]) -> list[str]:
    return [f"http://127.0.0.1:{port}" for port in ports]


def errors(folder: Path) -> list[str]:
    path = folder / "errors.jsonl"
    return path.read_text().splitlines() if path.exists() else []


FAST = ("--speed", "20", "--mean-tokens", "80", "--sd-tokens", "30")


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_and_fails_nothing(tmp_path: Path, tokenizer: Path) -> None:
    folder = tmp_path / "R1"
    ids = write_id_prompts(folder, 240)
    ports = [free_port() for _ in range(3)]
    with (
        workers(tmp_path, tokenizer, ports, *FAST) as sims,
        running_router(
            tmp_path / "router", worker_urls(ports), tokenizer, ready_workers=3
        ) as router,
    ):
        runner = start_runner(folder, router.url, "--concurrency", "24")
        wait_for_status(folder, lambda s: s["responses"] >= 30)
        sims[1].process.kill()
        code = runner.wait(RUN_TIMEOUT_S)

    log = (folder / "runner.log").read_text()
    assert code == 0, log
    assert response_ids(folder) == dict.fromkeys(ids, 1)  # none lost, none twice
    assert errors(folder) == []  # none marked failed
    assert status(folder)["errors"] == 0
    assert "is an sglang-router" in log


@pytest.mark.slow
def test_an_outage_of_every_worker_is_waited_out(tmp_path: Path, tokenizer: Path) -> None:
    folder = tmp_path / "R2"
    ids = write_id_prompts(folder, 200)
    ports = [free_port() for _ in range(2)]
    with running_router(tmp_path / "router", worker_urls(ports), tokenizer) as router:
        with workers(tmp_path / "first", tokenizer, ports, *FAST) as sims:
            router.wait_ready(2)
            runner = start_runner(folder, router.url, "--concurrency", "16", "--max-retries", "2")
            wait_for_status(folder, lambda s: s["responses"] >= 20)
            for sim in sims:
                sim.process.kill()
            before = set(response_ids(folder, allow_torn_tail=True))
            waiting = wait_for_status(folder, lambda s: s["state"] == "waiting_for_server")
        with workers(tmp_path / "second", tokenizer, ports, *FAST):
            code = runner.wait(RUN_TIMEOUT_S)

    log = (folder / "runner.log").read_text()
    assert code == 0, log
    final = response_ids(folder)
    assert before <= set(final)  # nothing acknowledged before the outage was lost
    assert final == dict.fromkeys(ids, 1)  # every prompt once
    assert errors(folder) == []  # 503 no_available_workers is an outage, not a failed prompt
    assert waiting["errors"] == 0
    assert "no_available_workers" in log or "No available workers" in log or "unhealthy" in log


@pytest.mark.slow
def test_a_run_started_with_every_worker_dead_does_not_exit_0(
    tmp_path: Path, tokenizer: Path
) -> None:
    folder = tmp_path / "R3"
    write_id_prompts(folder, 20)
    dead = worker_urls([free_port(), free_port()])
    with running_router(tmp_path / "router", dead, tokenizer) as router:
        result = run_runner(folder, router.url, "--wait-for-server", "3")

    assert result.returncode == 1, result.stderr
    assert "no SGLang server became ready within 3 s" in result.stderr
    assert "/readiness answered HTTP 503" in result.stderr
    assert (status(folder)["state"], status(folder)["stop_reason"]) == ("failed", "not_ready")
    assert response_ids(folder) == {}


def test_on_budget_cancel_closes_the_connections_at_once_without_abort_request(
    tmp_path: Path, tokenizer: Path
) -> None:
    folder = tmp_path / "R4"
    write_id_prompts(folder, 200)
    ports = [free_port()]
    slow = ("--speed", "5", "--mean-tokens", "60", "--sd-tokens", "20", "--runaway-share", "0.2")
    with (
        workers(tmp_path, tokenizer, ports, *slow),
        running_router(
            tmp_path / "router", worker_urls(ports), tokenizer, ready_workers=1
        ) as router,
    ):
        runner = start_runner(
            folder, router.url, "--concurrency", "8", "--token-budget", "600",
            "--max-new-tokens", "20000", "--on-budget", "cancel",
        )  # fmt: skip
        wait_for_status(folder, lambda s: s["state"] in ("cancelling", "stopped"))
        cancelling_seen = time.monotonic()
        code = runner.wait(RUN_TIMEOUT_S)
        took_s = time.monotonic() - cancelling_seen

    log = (folder / "runner.log").read_text()
    assert code == 0, log
    assert "/abort_request is not there (HTTP 404, a router?): closing" in log
    assert took_s < ABORT_GRACE_S  # not the grace an /abort_request would have been given
    final = status(folder)
    assert final["cancelled_requests"] > 0
    assert final["completed"] == sum(response_ids(folder).values())


def write_chat(folder: Path, count: int) -> None:
    write_jsonl(folder / "prompts.jsonl", [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"why is the sum so w{i}"}]}
        for i in range(count)
    ])  # fmt: skip


def kept(folder: Path) -> list[dict[str, Any]]:
    path = folder / "raw_responses.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_the_openai_apis_through_a_router_are_refused_with_the_way_to_exact_ids(
    tmp_path: Path, tokenizer: Path
) -> None:
    """sglang-router 0.3.2 drops return_token_ids/sglext and refuses id prompts."""
    think = tmp_path / "think"
    build_think_tokenizer(think)
    chat, completions = tmp_path / "chat", tmp_path / "completions"
    write_chat(chat, 6)
    write_id_prompts(completions, 6)
    ports = [free_port()]
    chat_args = ("--api", "openai-chat", "--tokenizer", str(think), "--max-new-tokens", "60")
    with (
        workers(tmp_path, tokenizer, ports, *FAST, "--vocab-size", "41"),
        running_router(
            tmp_path / "router", worker_urls(ports), tokenizer, ready_workers=1
        ) as router,
    ):
        refused_chat = run_runner(chat, router.url, *chat_args)
        refused_ids = run_runner(completions, router.url, "--api", "openai-completions")
        chat_written = kept(chat)
        advised = run_runner(chat, router.url, "--tokenizer", str(think), "--max-new-tokens", "60")
        asked = run_runner(
            chat, router.url, *chat_args, "--reencode", "--responses-file", "re.jsonl"
        )

    for refused in (refused_chat, refused_ids):
        assert refused.returncode == 2, refused.stderr
        [line] = [line for line in refused.stderr.splitlines() if line.startswith("runner:")]
        assert f"{router.url} is an sglang-router" in line
        assert "use --api sglang" in line
    assert (chat_written, kept(completions)) == ([], []), "nothing recorded re-encoded"
    assert (errors(chat), errors(completions)) == ([], [])
    assert advised.returncode == 0, advised.stderr  # the advice works: exact ids via /generate
    assert sorted(record["id"] for record in kept(chat)) == [f"c{i}" for i in range(6)]
    assert asked.returncode == 0, asked.stderr  # SGLang serves the router's `model: "unknown"`
    reencoded = [json.loads(line) for line in (chat / "re.jsonl").read_text().splitlines()]
    assert {record["tokens"] for record in reencoded} == {"reencoded"}


async def generate_forever(url: str, first_id: int) -> None:
    """One request that runs for ~20 minutes through `url`, until cancelled."""
    body = {"input_ids": [first_id, 2], "sampling_params": {"max_new_tokens": 200000}}
    async with aiohttp.ClientSession() as http, http.post(f"{url}/generate", json=body):
        pass


BUSY = ("--speed", "1", "--mean-tokens", "100000", "--sd-tokens", "1", "--context-length", "300000")


@pytest.mark.slow
async def test_the_probe_shows_a_router_as_one_with_its_workers(
    tmp_path: Path, tokenizer: Path
) -> None:
    ports = [free_port(), free_port()]
    with (
        running_router(tmp_path / "router", worker_urls(ports), tokenizer) as router,
        workers(tmp_path, tokenizer, ports, *BUSY) as sims,
    ):
        router.wait_ready(2)
        pending = [asyncio.create_task(generate_forever(router.url, i)) for i in range(4)]
        up = await probe_sglang(router.url)
        while up.running_requests != 4:
            await asyncio.sleep(0.1)
            up = await probe_sglang(router.url)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for sim in sims:
            sim.process.kill()
        await wait_until(lambda: router.readiness()[0] != 200, 30, 0.2)
        down = await probe_sglang(router.url)

    assert (up.is_router, up.healthy, up.healthy_workers, up.total_workers) == (True, True, 2, 2)
    assert sorted(part.name for part in up.parts) == sorted(worker_urls(ports))
    assert all(part.healthy for part in up.parts)
    assert up.running_requests == sum(part.running_requests or 0 for part in up.parts) == 4
    assert up.model_path == str(tokenizer)
    assert (down.is_router, down.healthy) == (True, False)
    assert "no healthy worker" in down.detail
    cache = ProbeCache()
    cache.server = down
    [alert] = cache.alerts(time.time())
    assert (alert.kind, alert.severity) == ("server_down", "error")
