"""The demo's own data exports cleanly: its tokenizer, its simulated target and SpecForge's `lfm`.

The demo's export failed every time (a 99.0 % round trip under a 99 % gate): the simulator's stop
id was not the tokenizer's end of turn, and the template's turns were not a shape SpecForge knows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.simulator.tokenizer import build_tokenizer, end_of_turn_id
from console.demo.config_file import DEMO_END_OF_TURN_ID
from tests.support.export_data import read_jsonl, write_jsonl
from tests.support.pipeline_runs import export
from tests.support.runner_files import run_runner
from tests.support.simulator_process import running_simulator

VOCAB = 2000


def test_the_demo_config_stops_answers_with_the_demo_tokenizers_end_of_turn() -> None:
    assert end_of_turn_id() == DEMO_END_OF_TURN_ID


@pytest.mark.slow
def test_the_demos_data_exports_with_every_conversation_exact(tmp_path: Path) -> None:
    tokenizer = build_tokenizer(tmp_path / "tok", VOCAB)
    asks = [f"explain the code w{i + 400} and w{i + 900}" for i in range(40)]  # words it has
    prompts = [
        {"id": f"p{i}", "messages": [{"role": "user", "content": ask}]}
        for i, ask in enumerate(asks)
    ]
    prompts += [{"id": "text", "prompt": "write a poem"}]  # no chat turns: left out, no failure
    write_jsonl(tmp_path / "datasets" / "B4_code" / "prompts.jsonl", prompts)
    with running_simulator(tmp_path / "sim", "--speed", "0", "--mean-tokens", "40", "--sd-tokens", "30",
                           "--vocab-size", str(VOCAB), "--stop-id", str(DEMO_END_OF_TURN_ID),
                           "--seed", "11") as sim:  # fmt: skip
        ran = run_runner(tmp_path / "datasets" / "B4_code", sim.url, "--tokenizer", str(tokenizer),
                         "--max-new-tokens", "120")  # fmt: skip
    assert ran.returncode == 0, ran.stderr

    done = export(tmp_path / "datasets", tokenizer, tmp_path / "out", "--chat-template", "lfm")

    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "B4_code" / "quality.json").read_text())
    trip = report["roundtrip"]
    assert trip["checked"] == trip["matched"] > 0
    left_out = {
        why.split(":")[0]: skipped for why, skipped in report["conversations_left_out"].items()
    }
    assert left_out.pop("a plain-text or ids prompt")["first"] == "text"
    capped = left_out.pop("cut at the length limit", {"count": 0})["count"]
    empty = left_out.pop("empty", {"count": 0})["count"]  # a stop alone: SpecForge refuses it
    assert left_out == {}
    assert report["conversation_lines"] == trip["matched"] == len(asks) - capped - empty > 20
    written = read_jsonl(tmp_path / "out" / "B4_code" / "conversations" / "specforge.jsonl")
    assert len(written) == trip["matched"]
