"""tokenizer.check: the agent loads the configured tokenizer in a process of its own, bounded.

The daemon itself never imports transformers or runs a folder's code; a load that hangs is cut
off at the time limit and its process group killed, so doctor cannot hang on it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent.host.signals import is_running
from agent.protocol import TOKENIZER_CHECK, PipelineConfig, TokenizerCheck, TokenizerCheckParams
from tests.support.operations import local_link
from tests.support.remote_code.folder import KimiLikeTokenizer, build_kimi_like_tokenizer

HANGING_CODE = """
import os, time
from pathlib import Path
from agent.host.signals import is_running
Path({pid_file!r}).write_text(str(os.getpid()))
time.sleep(3600)
"""


@pytest.fixture(scope="module")
def kimi(tmp_path_factory: pytest.TempPathFactory) -> KimiLikeTokenizer:
    return build_kimi_like_tokenizer(tmp_path_factory.mktemp("models") / "kimi")


async def run_check(
    state_dir: Path, path: str | None, *, trust: bool, timeout_s: float = 60.0
) -> TokenizerCheck:
    async with local_link(
        state_dir, PipelineConfig(tokenizer=path, trust_remote_code=trust)
    ) as link:
        result: TokenizerCheck = await link.call(
            TOKENIZER_CHECK, TokenizerCheckParams(timeout_s), timeout_s=timeout_s + 30
        )
        return result


@pytest.mark.slow
async def test_a_trusted_kimi_like_tokenizer_is_described(
    state_dir: Path, kimi: KimiLikeTokenizer
) -> None:
    check = await run_check(state_dir, str(kimi.path), trust=True)
    assert check.ok, check.detail
    assert (check.class_name, check.vocab_size) == ("TikTokenTokenizer", kimi.vocab_size)
    assert (check.has_chat_template, check.think_marker) == (True, "<think>")


async def test_without_trust_the_check_gives_the_refusal_line(
    state_dir: Path, kimi: KimiLikeTokenizer
) -> None:
    check = await run_check(state_dir, str(kimi.path), trust=False)
    assert not check.ok
    assert "ships its own code (tokenization_kimi.py)" in check.detail
    assert "--trust-remote-code" in check.detail


async def test_no_configured_tokenizer_says_so(state_dir: Path) -> None:
    check = await run_check(state_dir, None, trust=False)
    assert not check.ok
    assert "no path under [tokenizer]" in check.detail


@pytest.mark.slow
async def test_a_load_that_hangs_is_cut_off_and_its_process_killed(
    state_dir: Path, tmp_path: Path
) -> None:
    folder, pid_file = tmp_path / "hanging", tmp_path / "loader.pid"
    folder.mkdir()
    (folder / "tokenization_hang.py").write_text(HANGING_CODE.format(pid_file=str(pid_file)))
    auto_map = {"AutoTokenizer": ["tokenization_hang.HangingTokenizer", None]}
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": auto_map}))

    started = time.monotonic()
    check = await run_check(state_dir, str(folder), trust=True, timeout_s=20)

    assert time.monotonic() - started < 20 + 15
    assert not check.ok
    assert "took longer than 20 s" in check.detail
    pid = int(pid_file.read_text())  # the folder's code did run, in the check's process
    assert not is_running(pid)
