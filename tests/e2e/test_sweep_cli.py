"""`eagle-console sweep HOST`, as a user runs it: the steps as they happen, the best named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.export_data import write_jsonl
from tests.support.ports import free_port

PY = sys.executable


def config(tmp_path: Path) -> Path:
    port = free_port()
    write_jsonl(tmp_path / "held_out.jsonl", [{"id": i, "input_ids": [i + 1, 7]} for i in range(6)])
    server = [PY, "-m", "agent.simulator", "--port", str(port), "--speed", "4", "--mean-tokens",
              "400", "--sd-tokens", "1", "--seed", "4", "--vocab-size", "1000",
              "--speculative-accept-length", "1.8", "--speculative-num-draft-tokens", "4"]  # fmt: skip
    evaluate = [PY, "-m", "agent.pipeline.evaluate", "--server", f"http://127.0.0.1:{port}",
                "--prompts", str(tmp_path / "held_out.jsonl"), "--num-prompts", "4",
                "--concurrency", "1,4", "--max-new-tokens", "32", "--warmup", "0",
                "--out", str(tmp_path / "eval")]  # fmt: skip
    path = tmp_path / "eagle-console.toml"
    path.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{PY}"\nstate_dir = "{tmp_path / "state"}"\n'
        f'[hosts.box.jobs.drafter]\nkind = "drafter_server"\ngrace_s = 5\nargv = {server!r}\n'
        f'[hosts.box.jobs.evaluate]\nkind = "evaluate"\nargv = {evaluate!r}\n'.replace("'", '"')
    )
    return path


@pytest.mark.slow
async def test_the_sweep_is_followed_to_its_best_setting(tmp_path: Path, state_dir: Path) -> None:
    path = config(tmp_path)
    bare = await run_cli("sweep", "box", config=path)
    assert bare.code == 1
    assert "give the values to sweep: --steps, --topk, --draft-tokens (SGLang) or --tokens" in (
        bare.stderr
    )
    swept = await run_cli_ok("sweep", "box", "--draft-tokens", "2,6", config=path)
    assert "the agent carries the sweep as sweep-" in swept.stdout
    assert "drafter at 2 draft setting(s)" in swept.stdout
    assert "best at c=1: draft tokens " in swept.stdout
    vllm_only = await run_cli("sweep", "box", "--tokens", "3", config=path)
    assert vllm_only.code == 1
    assert "SGLang sets steps, top-k and draft tokens, not vLLM's --tokens" in vllm_only.stderr
