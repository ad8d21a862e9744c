"""doctor's tokenizer line over a real SSH server: loaded on the host, with the host's trust setting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.datasets import write_sample_root
from tests.support.remote_code.folder import KimiLikeTokenizer, build_kimi_like_tokenizer
from tests.support.ssh_servers import SshEndpoint

INFERENCE_JOB = """
[hosts.gpu.jobs.inference]
argv = ["{python}", "-m", "agent.pipeline.inference", "--dataset-dir", "{dataset_dir}",
        "--tokenizer", "{tokenizer}", %s]
per_dataset = true
"""


@pytest.fixture(scope="module")
def kimi(tmp_path_factory: pytest.TempPathFactory) -> KimiLikeTokenizer:
    return build_kimi_like_tokenizer(tmp_path_factory.mktemp("models") / "kimi")


def config(
    tmp_path: Path, endpoint: SshEndpoint, state_dir: Path, tokenizer: str, flag: str = ""
) -> Path:
    root = tmp_path / "datasets"
    write_sample_root(root)
    path = tmp_path / "eagle-console.toml"
    body = endpoint.config_toml("gpu", python=sys.executable, state_dir=state_dir,
                                datasets_root=root)  # fmt: skip
    path.write_text(body + tokenizer + INFERENCE_JOB % flag)
    return path


def tokenizer_line(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.split()[1:2] == ["tokenizer"]]
    return line


@pytest.mark.parametrize(
    ("trust", "flag", "verdict", "fragments"),
    [
        ("true", '"{trust_remote_code}"', "ok",
         ["TikTokenTokenizer, vocab 329, chat template, assistant turn opens with <think>",
          "its own code trusted"]),
        ("false", '"{trust_remote_code}"', "FAIL",
         ["ships its own code (tokenization_kimi.py)", "pass --trust-remote-code"]),
        ("true", "", "FAIL",
         ["assistant turn opens with <think>", "job(s) inference do not pass {trust_remote_code}"]),
    ],
)  # fmt: skip
@pytest.mark.slow
@pytest.mark.timeout(480)  # each doctor run imports transformers on the host: minutes under load
async def test_doctor_loads_the_configured_tokenizer_on_the_host(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, kimi: KimiLikeTokenizer,
    trust: str, flag: str, verdict: str, fragments: list[str],
) -> None:  # fmt: skip
    table = f"[hosts.gpu.tokenizer]\npath = {json.dumps(str(kimi.path))}\n"
    path = config(tmp_path, asyncssh_endpoint, state_dir, table + f"trust_remote_code = {trust}\n",
                  flag)  # fmt: skip
    result = await run_cli("doctor", "gpu", config=path)
    line = tokenizer_line(result.stdout)
    assert line.split()[0] == verdict, line
    assert str(kimi.path) in line
    for fragment in fragments:
        assert fragment in line, line
    assert "Traceback" not in result.stdout + result.stderr


async def test_doctor_names_a_job_that_needs_a_tokenizer_nobody_configured(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    path = config(tmp_path, asyncssh_endpoint, state_dir, "")
    result = await run_cli("doctor", "gpu", config=path)
    line = tokenizer_line(result.stdout)
    assert line.startswith("FAIL")
    assert (
        "job(s) inference use {tokenizer}, but no path is set under [hosts.gpu.tokenizer]" in line
    )
