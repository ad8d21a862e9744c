"""Prompts, tokenizers and existing response files: read right, or refused with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.simulator.tokenizer import build_tokenizer
from tests.support.runner_files import response_ids, run_runner, status, write_id_prompts
from tests.support.simulator_process import SimulatorProcess


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.mark.slow
def test_chat_prompts_go_through_the_chat_template(
    simulator: SimulatorProcess, tmp_path: Path, tokenizer_dir: Path
) -> None:
    from transformers import AutoTokenizer

    folder = tmp_path / "B1"
    folder.mkdir()
    chats = [[{"role": "user", "content": "explain " + "the " * i + "question"}] for i in range(6)]
    lines = [{"id": f"c{i}", "messages": chat} for i, chat in enumerate(chats)]
    lines.append({"prompt": "write a poem"})  # no id: its 0-based line number, 6
    (folder / "prompts.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    result = run_runner(folder, simulator.url, "--tokenizer", str(tokenizer_dir))

    assert result.returncode == 0, result.stderr
    tokenizer: Any = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    written = (folder / "raw_responses.jsonl").read_text().splitlines()
    records = {record["id"]: record for record in map(json.loads, written)}
    for i, chat in enumerate(chats):
        expected = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)[
            "input_ids"
        ]
        assert records[f"c{i}"]["prompt_tokens"] == len(expected)
    assert records["6"]["prompt_tokens"] == len(tokenizer.encode("write a poem"))


def test_resume_a_file_written_by_another_script(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B2"
    ids = write_id_prompts(folder, 40)
    earlier = [{"id": f"p{i}", "output_ids": [5] * (i + 1)} for i in range(0, 40, 3)]
    (folder / "raw_responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))

    result = run_runner(folder, simulator.url)

    assert result.returncode == 0, result.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    final = status(folder)
    assert final["resumed_responses"] == len(earlier)
    assert final["resumed_tokens"] == sum(len(r["output_ids"]) for r in earlier)
    assert final["dispatched"] == 40 - len(earlier)


def test_duplicate_ids_in_responses_count_once(simulator: SimulatorProcess, tmp_path: Path) -> None:
    folder = tmp_path / "B3"
    write_id_prompts(folder, 3)
    twice = json.dumps({"id": "p0", "output_ids": [1, 2]}) + "\n"
    (folder / "raw_responses.jsonl").write_text(twice + twice)

    assert run_runner(folder, simulator.url).returncode == 0
    final = status(folder)
    assert (final["resumed_responses"], final["resumed_tokens"], final["duplicates_skipped"]) == (
        1,
        2,
        1,
    )
    assert final["dispatched"] == 2


def test_a_corrupt_middle_line_stops_the_run_with_its_offset(
    simulator: SimulatorProcess, tmp_path: Path
) -> None:
    folder = tmp_path / "B4"
    write_id_prompts(folder, 5)
    good = json.dumps({"id": "p0", "output_ids": [1]}) + "\n"
    path = folder / "raw_responses.jsonl"
    path.write_text(
        good + "{this is not json\n" + json.dumps({"id": "p1", "output_ids": [1]}) + "\n"
    )
    before = path.read_bytes()

    stopped = run_runner(folder, simulator.url)
    assert stopped.returncode == 1
    assert f"byte {len(good)}" in stopped.stderr
    assert "--repair" in stopped.stderr
    assert path.read_bytes() == before, "nothing is changed without --repair"

    repaired = run_runner(folder, simulator.url, "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert response_ids(folder) == dict.fromkeys([f"p{i}" for i in range(5)], 1)
    assert (folder / "raw_responses.corrupt").read_text() == "{this is not json\n"


def test_a_torn_tail_is_moved_aside(simulator: SimulatorProcess, tmp_path: Path) -> None:
    folder = tmp_path / "B5"
    write_id_prompts(folder, 4)
    fragment = '{"id": "p1", "output_ids": [1, 2'
    (folder / "raw_responses.jsonl").write_text(
        json.dumps({"id": "p0", "output_ids": [3]}) + "\n" + fragment
    )

    assert run_runner(folder, simulator.url).returncode == 0
    assert (folder / "raw_responses.torn").read_text() == fragment + "\n"
    assert response_ids(folder) == dict.fromkeys(["p0", "p1", "p2", "p3"], 1)


@pytest.mark.parametrize(
    ("prompts", "fragment"),
    [
        (None, "prompts.jsonl not found"),
        ('{"id": "a", "input_ids": [1]}\nnot json at all\n', "line 2: not valid JSON"),
        ('{"id": "a", "input_ids": [1]}\n{"id": "b"}\n', "line 2: needs messages"),
        (
            '{"id": "a", "input_ids": [1]}\n{"id": "a", "input_ids": [2]}\n',
            "line 2: duplicate id 'a' (first at line 1)",
        ),
        ('{"id": "a", "prompt": "hello"}\n', "pass --tokenizer"),
    ],
)
def test_bad_prompts_are_refused_with_the_line(
    simulator: SimulatorProcess, tmp_path: Path, prompts: str | None, fragment: str
) -> None:
    folder = tmp_path / "B6"
    folder.mkdir()
    if prompts is not None:
        (folder / "prompts.jsonl").write_text(prompts)

    result = run_runner(folder, simulator.url)

    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_bad_tokenizer_path_is_refused(simulator: SimulatorProcess, tmp_path: Path) -> None:
    folder = tmp_path / "B7"
    folder.mkdir()
    (folder / "prompts.jsonl").write_text('{"id": "a", "prompt": "hello"}\n')
    missing = run_runner(folder, simulator.url, "--tokenizer", str(tmp_path / "nope"))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    empty = run_runner(folder, simulator.url, "--tokenizer", str(empty_dir))

    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
    assert empty.returncode == 2
    assert f"cannot load a tokenizer from {empty_dir}" in empty.stderr
    assert "Traceback" not in missing.stderr + empty.stderr


def test_an_unreachable_server_at_start_is_one_clear_line(tmp_path: Path) -> None:
    folder = tmp_path / "B8"
    write_id_prompts(folder, 2)

    result = run_runner(folder, "http://127.0.0.1:1", "--wait-for-server", "1")

    assert result.returncode == 1
    assert "no SGLang server became ready within 1 s (--wait-for-server)" in result.stderr
    assert "127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr
