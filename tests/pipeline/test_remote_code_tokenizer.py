"""A tokenizer that ships its own code (Kimi-K2's layout), through the runner and the vocab job.

With --trust-remote-code the chat-templated ids are exactly what the template and the tiktoken
encoding give; without it the folder is refused in one line before anything is sent, whatever
stdin is (a terminal must never get transformers' "[y/N]" question and hang there).
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.remote_code.blocker import without_package_env
from tests.support.remote_code.folder import (
    THINK_MARKER,
    KimiLikeTokenizer,
    build_kimi_like_tokenizer,
    kimi_chats,
)
from tests.support.runner_files import RUN_TIMEOUT_S, run_runner, runner_command, status
from tests.support.simulator_process import SimulatorProcess, agent_env

REFUSAL_WAIT_S = 30.0
"""A refusal reads two small files and never imports transformers: under a second when idle.
A question, were one asked, fails the test by its "[y/N]" text, or by this bound if it waits."""


@pytest.fixture(scope="module")
def kimi(tmp_path_factory: pytest.TempPathFactory) -> KimiLikeTokenizer:
    return build_kimi_like_tokenizer(tmp_path_factory.mktemp("models") / "kimi")


def write_lines(folder: Path, lines: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prompts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def responses(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "raw_responses.jsonl").read_text().splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def generate_requests(simulator: SimulatorProcess) -> float:
    with urllib.request.urlopen(f"{simulator.url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("sglang:num_requests_total"))  # fmt: skip


@pytest.mark.slow
def test_chat_prompts_get_exactly_the_ids_of_the_template_and_encoding(
    simulator: SimulatorProcess, tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    chats = kimi_chats()
    text = "Write a poem about the sea and the stars."
    write_lines(tmp_path / "chat", [{"id": f"c{i}", "messages": c} for i, c in enumerate(chats)]
                + [{"id": "t", "prompt": text}])  # fmt: skip
    expected = {f"c{i}": kimi.chat_ids(chat) for i, chat in enumerate(chats)}
    expected["t"] = kimi.text_ids(text)
    write_lines(tmp_path / "ids", [{"id": key, "input_ids": ids} for key, ids in expected.items()])

    chat = run_runner(tmp_path / "chat", simulator.url, "--tokenizer", str(kimi.path),
                      "--trust-remote-code")  # fmt: skip
    reference = run_runner(tmp_path / "ids", simulator.url)

    assert (chat.returncode, reference.returncode) == (0, 0), chat.stderr + reference.stderr
    think = kimi.encoding.encode_single_token(THINK_MARKER)
    assert all(ids[-1] == think for key, ids in expected.items() if key != "t")
    got, want = responses(tmp_path / "chat"), responses(tmp_path / "ids")
    for key, ids in expected.items():
        assert got[key]["prompt_tokens"] == len(ids), key
        # the simulator's answer is a hash of the exact ids it was sent
        assert got[key]["output_ids"] == want[key]["output_ids"], key


@pytest.mark.slow
def test_vocab_job_reads_v_from_the_tokenizer_only_with_the_flag(
    tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    root = tmp_path / "datasets"
    (root / "B1").mkdir(parents=True)
    lines = [{"id": str(i), "output_ids": [i % 50, 300, 7]} for i in range(20)]
    (root / "B1" / "raw_responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    config = tmp_path / "config.json"  # the model's, whose vocab_size the trainers size by
    config.write_text(json.dumps({"vocab_size": kimi.vocab_size}))
    command = ["-m", "agent.pipeline.vocab", "--datasets-root", str(root), "--tokenizer",
               str(kimi.path), "--draft-vocab-size", "16", "--model-config", str(config)]  # fmt: skip

    refused = run_python(command + ["--out", str(tmp_path / "refused")], stdin=subprocess.DEVNULL)
    built = run_python(command + ["--out", str(tmp_path / "vocab"), "--trust-remote-code"])

    assert refused.returncode == 2
    assert_refusal(refused.stderr, "vocab: ", kimi)
    assert not (tmp_path / "refused").exists()
    assert built.returncode == 0, built.stderr
    report = json.loads((tmp_path / "vocab" / "vocab_report.json").read_text())
    assert report["target_vocab_size"] == kimi.vocab_size == 256 + 64 + 9


def test_without_the_flag_stdin_closed_it_is_refused_before_any_request(
    simulator: SimulatorProcess, tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    folder = tmp_path / "B1"
    write_lines(folder, [{"id": "c0", "messages": kimi_chats()[0]}])
    command = runner_command(folder, simulator.url, "--tokenizer", str(kimi.path))

    result = subprocess.run(["/bin/sh", "-c", 'exec "$@" <&-', "sh", *command], env=agent_env(),
                            capture_output=True, text=True, timeout=REFUSAL_WAIT_S)  # fmt: skip

    assert result.returncode == 2
    assert_refusal(result.stderr, "runner: ", kimi)
    assert_nothing_marked_failed(folder, simulator)


def test_without_the_flag_stdin_a_terminal_it_is_refused_without_a_question(
    simulator: SimulatorProcess, tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    folder = tmp_path / "B1"
    write_lines(folder, [{"id": "c0", "messages": kimi_chats()[0]}])
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            runner_command(folder, simulator.url, "--tokenizer", str(kimi.path)), env=agent_env(),
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            out, err = process.communicate(timeout=REFUSAL_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"the runner waited on the terminal: {out!r} {err!r}")
    finally:
        os.close(terminal)
        os.close(controller)
    assert process.returncode == 2
    assert "[y/N]" not in out + err
    assert_refusal(err, "runner: ", kimi)
    assert_nothing_marked_failed(folder, simulator)


def test_a_package_the_tokenizer_needs_is_named_not_a_traceback(
    tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    folder = tmp_path / "B1"
    write_lines(folder, [{"id": "c0", "messages": kimi_chats()[0]}])
    env = without_package_env(tmp_path / "no-tiktoken", "tiktoken")
    command = runner_command(folder, "http://127.0.0.1:9", "--tokenizer", str(kimi.path),
                             "--trust-remote-code")  # fmt: skip

    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"runner: the tokenizer at {kimi.path} needs the Python package tiktoken"
    )
    assert "pip install tiktoken" in line
    assert status(folder)["state"] == "refused"
    assert not (folder / "errors.jsonl").exists()


def run_python(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=agent_env(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, **kwargs)  # fmt: skip


def assert_refusal(stderr: str, prefix: str, kimi: KimiLikeTokenizer) -> None:
    """One line that names the folder, the code it ships and the flag to pass."""
    [line] = stderr.splitlines()
    assert line.startswith(f"{prefix}the tokenizer at {kimi.path} ships its own code "
                           "(tokenization_kimi.py)"), line  # fmt: skip
    assert "pass --trust-remote-code" in line


def assert_nothing_marked_failed(
    folder: Path, simulator: SimulatorProcess, refusal: str = "tokenization_kimi.py"
) -> None:
    record = status(folder)
    assert (record["state"], record["stop_reason"]) == ("refused", "refused")
    assert refusal in record["refusal"]
    assert (record["dispatched"], record["errors"], record["failure"]) == (0, 0, None)
    assert not (folder / "errors.jsonl").exists()
    assert not (folder / "raw_responses.jsonl").exists()
    assert generate_requests(simulator) == 0


LATE_IMPORT_CODE = """
import importlib

from transformers import PreTrainedTokenizer


class LateTokenizer(PreTrainedTokenizer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    @property
    def vocab_size(self):
        return 128

    def get_vocab(self):
        return {chr(i): i for i in range(128)}

    def _tokenize(self, text, **kwargs):
        importlib.import_module("tiktoken")  # imported only when it first encodes
        return list(text)

    def _convert_token_to_id(self, token):
        return ord(token) % 128

    def _convert_id_to_token(self, index):
        return chr(index)
"""


@pytest.mark.slow
def test_a_package_imported_only_when_encoding_refuses_the_run_not_every_prompt(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    tokenizer = tmp_path / "late"
    tokenizer.mkdir()
    (tokenizer / "tokenization_late.py").write_text(LATE_IMPORT_CODE)
    config = {"auto_map": {"AutoTokenizer": ["tokenization_late.LateTokenizer", None]},
              "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}  # fmt: skip
    (tokenizer / "tokenizer_config.json").write_text(json.dumps(config))
    folder = tmp_path / "B1"
    write_lines(folder, [{"id": f"c{i}", "messages": chat} for i, chat in enumerate(kimi_chats())])
    command = runner_command(folder, simulator.url, "--tokenizer", str(tokenizer),
                             "--trust-remote-code")  # fmt: skip

    result = subprocess.run(command, env=without_package_env(tmp_path / "block", "tiktoken"),
                            capture_output=True, text=True, timeout=RUN_TIMEOUT_S)  # fmt: skip

    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert "needs the Python package tiktoken" in line
    assert_nothing_marked_failed(folder, simulator, refusal="tiktoken")
