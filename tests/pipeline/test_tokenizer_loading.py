"""The one tokenizer loader the pipeline jobs share: what counts as shipping code, and the check.

`python -m agent.pipeline.tokenizer` is what the agent runs for doctor; its facts (class, vocab
size, chat template, think marker) come from the real tokenizer loaded by real transformers.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.tokenizer import import_failure, shipped_code
from agent.simulator.tokenizer import build_tokenizer
from tests.support.remote_code.folder import KimiLikeTokenizer, build_kimi_like_tokenizer
from tests.support.simulator_process import agent_env

LOAD_WAIT_S = 120.0
"""A trusted load imports transformers (tens of seconds on a loaded machine); a question, were
one asked, fails the test by its "[y/N]" text, however long it waited."""


@pytest.fixture(scope="module")
def kimi(tmp_path_factory: pytest.TempPathFactory) -> KimiLikeTokenizer:
    return build_kimi_like_tokenizer(tmp_path_factory.mktemp("models") / "kimi")


def folder_with(tmp_path: Path, files: dict[str, Any]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "code"),
    [
        ({"tokenizer_config.json": {"tokenizer_class": "LlamaTokenizer"}}, ()),
        ({"tokenizer_config.json": "{not json"}, ()),
        ({}, ()),
        (
            {"tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["tok.Slow", "tok_fast.Fast"]}},
             "tok.py": "", "tok_fast.py": ""},
            ("tok.py", "tok_fast.py"),
        ),
        (
            {"tokenizer_config.json": {"auto_map": ["tokenization_kimi.TikTokenTokenizer", None]},
             "tokenization_kimi.py": ""},
            ("tokenization_kimi.py",),
        ),
        (
            {"config.json": {"auto_map": {"AutoTokenizer": ["tokenization_x.X", None]}}},
            ("tokenization_x.py (missing from the folder)",),
        ),
        (
            {"tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["org/repo--tok.T", None]}}},
            ("tok.py from the hub repository org/repo",),
        ),
        (  # Kimi-K2's model folder: trusted, the config's code runs before the tokenizer's
            {"config.json": {"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}},
             "tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["tokenization_kimi.T", None]}},
             "tokenization_kimi.py": "", "configuration_deepseek.py": ""},
            ("tokenization_kimi.py", "configuration_deepseek.py"),
        ),
        (  # a model folder whose config ships modelling code only: the tokenizer needs none
            {"config.json": {"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}},
             "tokenizer_config.json": {"tokenizer_class": "LlamaTokenizerFast"}},
            (),
        ),
    ],
)  # fmt: skip
def test_code_a_folder_ships_is_read_from_auto_map(
    tmp_path: Path, files: dict[str, Any], code: tuple[str, ...]
) -> None:
    assert shipped_code(folder_with(tmp_path, files)) == code


def check(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.pipeline.tokenizer", str(path), "--json", *flags],
        env=agent_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.slow
def test_the_check_reports_class_vocab_template_and_think_marker(kimi: KimiLikeTokenizer) -> None:
    result = check(kimi.path, "--trust-remote-code")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout.splitlines()[-1])
    assert facts["ok"] is True
    assert (facts["class_name"], facts["vocab_size"]) == ("TikTokenTokenizer", kimi.vocab_size)
    assert (facts["has_chat_template"], facts["think_marker"]) == (True, "<think>")


def test_a_template_without_a_think_marker_says_none(tmp_path: Path) -> None:
    result = check(build_tokenizer(tmp_path / "plain", vocab_size=500))
    facts = json.loads(result.stdout.splitlines()[-1])
    assert facts["ok"] is True
    assert (facts["has_chat_template"], facts["think_marker"]) == (True, None)


def test_a_refusal_comes_before_transformers_is_imported(kimi: KimiLikeTokenizer) -> None:
    probe = (
        "import sys\n"
        "from agent.pipeline.tokenizer import TokenizerError, load_tokenizer\n"
        "try:\n"
        f"    load_tokenizer({str(kimi.path)!r}, trust_remote_code=False)\n"
        "except TokenizerError as exc:\n"
        "    print(exc)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('transformers', 'tiktoken')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=agent_env(), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    refusal, imported = result.stdout.splitlines()
    assert "ships its own code (tokenization_kimi.py)" in refusal
    assert imported == "[]"


NESTED_CONFIG = """
from transformers import PretrainedConfig


class NestedConfig(PretrainedConfig):
    model_type = "nested-x"
"""
NESTED_TOKENIZER = """
from transformers import AutoConfig, PreTrainedTokenizer


class NestedTokenizer(PreTrainedTokenizer):
    def __init__(self, **kwargs):
        AutoConfig.from_pretrained({folder!r})  # trust left open: transformers would ask
        super().__init__(**kwargs)
"""


@pytest.mark.slow
def test_trusted_code_that_loads_more_code_gets_no_question_either(tmp_path: Path) -> None:
    folder = folder_with(tmp_path / "nested", {})
    folder_with(folder, {
        "config.json": {"model_type": "nested-x",
                        "auto_map": {"AutoConfig": "configuration_nested.NestedConfig"}},
        "configuration_nested.py": NESTED_CONFIG,
        "tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["tokenization_nested.NestedTokenizer", None]}},
        "tokenization_nested.py": NESTED_TOKENIZER.format(folder=str(folder)),
    })  # fmt: skip
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "agent.pipeline.tokenizer", str(folder), "--trust-remote-code"],
            env=agent_env(), stdin=terminal, capture_output=True, text=True, timeout=LOAD_WAIT_S,
        )  # fmt: skip
    finally:
        os.close(terminal)
        os.close(controller)
    assert result.returncode == 2
    assert "[y/N]" not in result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"tokenizer: cannot load a tokenizer from {folder}: ")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ModuleNotFoundError("No module named 'tiktoken'", name="tiktoken"),
         "needs the Python package tiktoken"),
        (ModuleNotFoundError("No module named 'tiktoken.load'", name="tiktoken.load"),
         "needs the Python package tiktoken"),
        (ImportError("This modeling file requires the following packages that were not found in "
                     "your environment: tiktoken. Run `pip install tiktoken`"),
         "needs the Python package tiktoken"),
        # Kimi-K2's own code on transformers 5: a name that moved, not a package to install
        (ImportError("cannot import name 'bytes_to_unicode' from "
                     "'transformers.models.gpt2.tokenization_gpt2'",
                     name="transformers.models.gpt2.tokenization_gpt2"),
         "failed on an import: cannot import name 'bytes_to_unicode'"),
    ],
)  # fmt: skip
def test_import_failures_name_the_package_only_when_one_is_missing(
    error: ImportError, said: str
) -> None:
    line = import_failure("/models/kimi", error)
    assert line.startswith("the tokenizer at /models/kimi ")
    assert said in line
    assert "\n" not in line
