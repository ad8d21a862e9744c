"""What a real SGLang refuses: the whole run's requests, one prompt, or a missing API key.

Each case runs the real runner against the simulator in the mode that copies SGLang's answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.support.runner_files import (
    response_ids,
    run_runner,
    status,
    write_id_prompts,
)
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "100", "--mean-tokens", "40", "--sd-tokens", "10")


def error_records(folder: Path) -> list[dict[str, Any]]:
    path = folder / "errors.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_out_of_range_sampling_stops_the_run_marks_nothing_and_the_rerun_does_everything(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "A1"
    ids = write_id_prompts(folder, 40)
    with running_simulator(tmp_path / "sim", *FAST) as sim:
        mistaken = run_runner(folder, sim.url, "--top-p", "1.5", "--concurrency", "8")
        marks_after_mistake = error_records(folder)
        fixed = run_runner(folder, sim.url, "--concurrency", "8")

    assert mistaken.returncode == 2, mistaken.stderr
    # refused before any request, as SGLang would refuse each one (sampling_params.py)
    assert "argument --top-p: must be in (0, 1], got 1.5" in mistaken.stderr
    assert marks_after_mistake == []
    assert fixed.returncode == 0, fixed.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)


def test_max_new_tokens_past_the_context_is_the_runs_fault_not_each_prompts(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "A2"
    ids = write_id_prompts(folder, 30)
    with running_simulator(tmp_path / "sim", *FAST, "--context-length", "1000") as sim:
        mistaken = run_runner(folder, sim.url, "--max-new-tokens", "2000")
        final = status(folder)
        fixed = run_runner(folder, sim.url, "--max-new-tokens", "200")

    assert mistaken.returncode == 2, mistaken.stderr
    assert "Requested token count exceeds the model's maximum context length" in mistaken.stderr
    assert (final["state"], final["stop_reason"]) == ("failed", "rejected")
    assert [r for r in error_records(folder) if r["permanent"]] == []
    assert fixed.returncode == 0, fixed.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)


def test_a_too_long_or_empty_prompt_is_marked_for_good_with_its_kind_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "A3"
    ids = write_id_prompts(folder, 10)
    with (folder / "prompts.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "huge", "input_ids": [1] * 1500}) + "\n")
        handle.write(json.dumps({"id": "void", "input_ids": []}) + "\n")
    with running_simulator(tmp_path / "sim", *FAST, "--context-length", "1000") as sim:
        result = run_runner(folder, sim.url, "--max-new-tokens", "100")

    assert result.returncode == 0, result.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    records = {r["id"]: r for r in error_records(folder)}
    assert (records["void"]["kind"], records["void"]["permanent"]) == ("empty", True)
    record = records["huge"]
    assert (record["id"], record["permanent"], record["kind"], record["status"]) == (
        "huge", True, "too_long", 400,
    )  # fmt: skip
    assert record["reason"] == (  # the server's message, whole
        "HTTP 400: The input (1500 tokens) is longer than the model's context length (1000 tokens)."
    )


def test_a_run_in_which_nothing_could_be_generated_does_not_exit_0(tmp_path: Path) -> None:
    folder = tmp_path / "A4"
    folder.mkdir()
    (folder / "prompts.jsonl").write_text(
        "".join(json.dumps({"id": f"l{i}", "input_ids": [1] * 1200}) + "\n" for i in range(5))
    )
    with running_simulator(tmp_path / "sim", *FAST, "--context-length", "1000") as sim:
        result = run_runner(folder, sim.url, "--max-new-tokens", "100")

    assert result.returncode == 1
    assert "nothing could be generated: 5 prompt(s) failed" in result.stderr
    assert status(folder)["stop_reason"] == "nothing_generated"


def test_retry_errors_clears_mistaken_marks_by_kind(tmp_path: Path) -> None:
    folder = tmp_path / "A5"
    ids = write_id_prompts(folder, 12)
    old_marks = [  # what an older runner wrote after a mistaken 400: no kind, permanent
        {"id": ids[i], "reason": "HTTP 400: top_p must be in (0, 1], got 1.5.", "status": 400,
         "permanent": True, "ts": 1.0}
        for i in range(5)
    ] + [
        {"id": ids[i], "reason": "cannot tokenize: boom", "status": None, "permanent": True,
         "ts": 1.0}
        for i in (5, 6)
    ]  # fmt: skip
    (folder / "errors.jsonl").write_text("".join(json.dumps(m) + "\n" for m in old_marks))
    with running_simulator(tmp_path / "sim", *FAST) as sim:
        skipping = run_runner(folder, sim.url)
        after_skip = set(response_ids(folder))
        rejected_only = run_runner(folder, sim.url, "--retry-errors", "rejected")
        after_rejected = set(response_ids(folder))
        everything = run_runner(folder, sim.url, "--retry-errors", "all")

    assert skipping.returncode == rejected_only.returncode == everything.returncode == 0
    assert after_skip == set(ids[7:])
    assert after_rejected == set(ids[:5]) | set(ids[7:])
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    assert error_records(folder) == []
    cleared = (folder / "errors.cleared.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in cleared] == ids[:7]


def test_an_unknown_retry_errors_kind_is_a_usage_error(tmp_path: Path) -> None:
    folder = tmp_path / "A6"
    write_id_prompts(folder, 1)
    result = run_runner(folder, "http://127.0.0.1:1", "--retry-errors", "too-long")
    assert result.returncode == 2
    assert "unknown kind 'too-long'; use all or any of too_long, empty" in result.stderr


# ---------------------------------------------------------------- API keys


def test_a_server_with_an_api_key_stops_a_keyless_run_with_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "K1"
    write_id_prompts(folder, 20)
    with running_simulator(tmp_path / "sim", *FAST, "--api-key", "k-123") as sim:
        result = run_runner(folder, sim.url)

    assert result.returncode == 2
    [line] = [line for line in result.stderr.splitlines() if line.startswith("runner:")]
    assert line == (
        "runner: the server wants an API key (HTTP 401 Unauthorized): put its --api-key in "
        "SGLANG_API_KEY or in a file passed with --api-key-file"
    )
    assert error_records(folder) == []
    assert response_ids(folder) == {}


def test_the_key_comes_from_the_environment_or_a_file_never_the_command_line(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from_env, from_file, wrong = tmp_path / "K2", tmp_path / "K3", tmp_path / "K4"
    ids = write_id_prompts(from_env, 15)
    write_id_prompts(from_file, 15)
    write_id_prompts(wrong, 15)
    key_file, wrong_file = tmp_path / "key", tmp_path / "wrong-key"
    key_file.write_text("k-123\n")
    wrong_file.write_text("nope\n")
    with running_simulator(tmp_path / "sim", *FAST, "--api-key", "k-123") as sim:
        monkeypatch.setenv("SGLANG_API_KEY", "k-123")
        env_run = run_runner(from_env, sim.url)
        monkeypatch.delenv("SGLANG_API_KEY")
        file_run = run_runner(from_file, sim.url, "--api-key-file", str(key_file))
        wrong_run = run_runner(wrong, sim.url, "--api-key-file", str(wrong_file))

    assert env_run.returncode == file_run.returncode == 0, env_run.stderr + file_run.stderr
    assert response_ids(from_env) == response_ids(from_file) == dict.fromkeys(ids, 1)
    assert "k-123" not in json.dumps(status(from_file)["argv"])
    assert wrong_run.returncode == 2
    assert f"the server refused the key in {wrong_file} (HTTP 401 Unauthorized)" in wrong_run.stderr
    assert "nope" not in wrong_run.stderr


def test_an_unreadable_key_file_is_a_usage_error(tmp_path: Path) -> None:
    folder = tmp_path / "K5"
    write_id_prompts(folder, 1)
    empty = tmp_path / "empty-key"
    empty.write_text("\n")
    missing = run_runner(folder, "http://127.0.0.1:1", "--api-key-file", str(tmp_path / "none"))
    blank = run_runner(folder, "http://127.0.0.1:1", "--api-key-file", str(empty))
    assert (missing.returncode, blank.returncode) == (2, 2)
    assert "cannot read it (No such file or directory)" in missing.stderr
    assert f"API key file {empty} is empty" in blank.stderr
    assert os.environ.get("SGLANG_API_KEY") is None


def test_a_server_url_that_is_no_url_is_a_usage_error_not_a_long_wait(tmp_path: Path) -> None:
    folder = tmp_path / "U1"
    write_id_prompts(folder, 1)
    no_scheme = run_runner(folder, "127.0.0.1:30000")
    bad_port = run_runner(folder, "http://127.0.0.1:99999")
    assert (no_scheme.returncode, bad_port.returncode) == (2, 2)
    assert "'127.0.0.1:30000' is not an http:// or https:// URL with a host" in no_scheme.stderr
    assert "Port out of range" in bad_port.stderr
