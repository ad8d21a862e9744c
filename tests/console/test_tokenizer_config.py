"""[hosts.NAME.tokenizer]: the target's tokenizer folder on the host, and an explicit trust opt-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import ConfigError, load_config
from tests.support.config_ranges import write_config

HOST = '[hosts.kimi]\nssh = "root@10.1.230.174"\n'


def load(tmp_path: Path, text: str) -> tuple[str | None, bool]:
    pipeline = load_config(write_config(tmp_path, HOST + text)).host("kimi").pipeline
    return pipeline.tokenizer, pipeline.trust_remote_code


def test_the_tokenizer_table_sets_the_path_and_trust(tmp_path: Path) -> None:
    text = '[hosts.kimi.tokenizer]\npath = "/models/kimi"\ntrust_remote_code = true\n'
    assert load(tmp_path, text) == ("/models/kimi", True)


@pytest.mark.parametrize(
    "text", ["", '[hosts.kimi.tokenizer]\npath = "/models/kimi"\n', "[hosts.kimi.tokenizer]\n"]
)
def test_trust_is_off_unless_set_true(tmp_path: Path, text: str) -> None:
    assert load(tmp_path, text)[1] is False


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('path = "models/kimi"', "path", "an absolute folder path"),
        ("path = 3", "path", "an absolute folder path"),
        ('trust_remote_code = "yes"', "trust_remote_code", "true or false"),
        ("trust_remote_code = 1", "trust_remote_code", "true or false"),
        ("trust = true", "trust", "one of path, trust_remote_code"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, text: str, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, f"[hosts.kimi.tokenizer]\n{text}\n")
    assert f"hosts.kimi.tokenizer.{key}:" in str(caught.value)
    assert expected in str(caught.value)
