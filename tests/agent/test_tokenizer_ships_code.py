"""Whether a tokenizer folder brings code of its own, and what doctor says of trust without it.

doctor said "its own code trusted" for a tokenizer that ships no code: trust_remote_code
was on, but nothing of the folder's could run.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.plans.tokenizer_check import ships_code
from agent.protocol import PipelineConfig, TokenizerCheck
from console.cli.doctor_tokenizer import _loaded


def test_code_is_a_python_file_or_an_auto_map_and_nothing_else(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
    assert not ships_code(plain)
    mapped = tmp_path / "mapped"
    mapped.mkdir()
    (mapped / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": []}}))
    assert ships_code(mapped)
    coded = tmp_path / "coded"
    coded.mkdir()
    (coded / "tokenization_kimi.py").write_text("")
    assert ships_code(coded)
    assert not ships_code(tmp_path / "absent")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "tokenizer_config.json").write_text("[1, 2")  # torn: no code known
    assert not ships_code(tmp_path / "odd")


def test_doctor_calls_trust_code_trusted_only_where_there_is_code() -> None:
    check = TokenizerCheck("/m", True, True, "", "PreTrainedTokenizerFast", 100, False)
    ok, line = _loaded(check, PipelineConfig())
    assert ok
    assert "its own code trusted" not in line
    assert "trust_remote_code on (it ships no code: nothing of its runs)" in line
    coded = TokenizerCheck("/m", True, True, "", "TikTokenTokenizer", 100, False, ships_code=True)
    assert _loaded(coded, PipelineConfig())[1].endswith(", its own code trusted")
