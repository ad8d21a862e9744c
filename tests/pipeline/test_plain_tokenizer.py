"""A folder holding a plain tokenizer and no model config loads by its class, without torch,
and gives exactly what AutoTokenizer gives; any other folder still goes through AutoTokenizer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import transformers

from agent.pipeline.tokenizer import load_tokenizer
from agent.pipeline.tokenizer.plain import plain_class
from agent.simulator.tokenizer import build_tokenizer
from tests.support.simulator_process import agent_env

TEXTS = ["explain the data model", "w700 w12 <|im_end|> the", "", "unknownword w31999 ."]
CHAT = [{"role": "user", "content": "solve the problem"}, {"role": "assistant", "content": "a w9"}]
TORCH_AFTER_LOAD = (
    "import sys; from agent.pipeline.tokenizer import load_tokenizer; "
    "load_tokenizer(sys.argv[1], trust_remote_code=False); print('torch' in sys.modules)"
)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("plain") / "tokenizer", vocab_size=32000)


def with_config(folder: Path, tmp_path: Path, name: str, change: dict[str, Any]) -> Path:
    """A copy of `folder` with `change` merged into its file `name`."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for file in folder.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    path = copy / name
    config = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(config | change))
    return copy


def test_a_plain_folder_gives_what_autotokenizer_gives_token_for_token(plain: Path) -> None:
    ours = load_tokenizer(str(plain), trust_remote_code=False)
    auto = transformers.AutoTokenizer.from_pretrained(str(plain), local_files_only=True)
    assert type(ours) is type(auto)
    for text in TEXTS:
        assert ours.encode(text) == auto.encode(text)
        assert ours.decode(ours.encode(text)) == auto.decode(auto.encode(text))
    for generation_prompt in (True, False):
        assert ours.apply_chat_template(
            CHAT, tokenize=False, add_generation_prompt=generation_prompt
        ) == auto.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=generation_prompt)
    assert ours.all_special_ids == auto.all_special_ids
    assert len(ours) == len(auto)


def test_a_plain_folder_loads_without_importing_torch(plain: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TORCH_AFTER_LOAD, str(plain)],
        env=agent_env(), capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["False"], done.stderr


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("config.json", {"model_type": "llama"}),  # a model's folder: its type may pick the class
        ("tokenizer_config.json", {"tokenizer_class": "LlamaTokenizer"}),
        ("tokenizer_config.json", {"auto_map": {"AutoTokenizer": [None, "tok.Fast"]}}),
        ("tokenizer_config.json", {"tokenizer_class": "NoSuchTokenizer"}),
    ],
)
def test_any_other_folder_is_left_to_autotokenizer(
    plain: Path, tmp_path: Path, name: str, change: dict[str, Any]
) -> None:
    assert plain_class(plain, transformers) is transformers.TokenizersBackend
    assert plain_class(with_config(plain, tmp_path, name, change), transformers) is None


def test_a_folder_without_its_tokenizer_json_is_left_to_autotokenizer(
    plain: Path, tmp_path: Path
) -> None:
    copy = with_config(plain, tmp_path, "tokenizer_config.json", {})
    (copy / "tokenizer.json").unlink()
    assert plain_class(copy, transformers) is None
