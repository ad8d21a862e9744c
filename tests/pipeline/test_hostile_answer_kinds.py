"""Every kind of hostile answer, through each backend of the real runner: refused with its reason in
errors.jsonl, never written, never a prompt lost silently, and the next run resumes.

Before: an answer whose extras made the line longer than the reader's 16 MiB limit was written
(the next run then refused to resume), a reply aiohttp could not read or an answer the runner's
own record writer choked on cost the prompt with no errors.jsonl line, a server that aborted every
request was asked again at once and for ever, a chat stream of JSON lists ended in a refusal of
the whole run, and a completion_tokens of -50 fed to the budget's length index never returned.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.datasets.response_lines import parse_response_line
from tests.support.hostile_answer_server import hostile_answer_server
from tests.support.hostile_answer_server import write_kind_prompts as write_prompts
from tests.support.runner_files import run_runner, status
from tests.support.simulator_process import agent_env

NATIVE_REASONS = {
    "tokens_negative": "completion_tokens is -50, not a count",
    "tokens_trillion": "completion_tokens is 1000000000000, not a count",
    "tokens_2_22": "completion_tokens 4,194,304 for 1 output ids",
    "tokens_true": "completion_tokens is True, not a count",
    "ids_strings": "output_ids holds '5', not a token id",
    "id_minus_one": "output_ids holds -1, not a token id",
    "id_past_int32": "output_ids holds 1099511627776, not a token id",
    "meta_nan": "NaN is not JSON",
    "meta_list": "AttributeError",
    "meta_deep": "lists and objects, over the limit of 100,000",
    "meta_wide": "lists and objects, over the limit of 100,000",
    "meta_17mb": "byte limit",
    "line_past_limit": "over the 16,777,216-byte limit",
    "always_aborted": "the server aborted the request",
    "cut_mid_body": "the answer broke off",
    "stream_cut": "the answer broke off",
    "endless_500": "HTTP 500",
}
COMPLETIONS_REASONS = {
    "choices_oops": "AttributeError",
    "choices_object": "answer has no choices",
    "token_ids_strings": "output_ids holds '5', not a token id",
    "prompt_ids_negative": "prompt_ids holds -7, not a token id",
}
CHAT_REASONS = {
    "delta_content_number": "TypeError",
    "chat_choices_oops": "AttributeError",
    "event_list": "a stream event is a JSON list, not an object",
    "choices_string": "choices is a JSON string, not a list",
}


def marks(folder: Path) -> dict[str, str]:
    """Each marked prompt's reason, from errors.jsonl."""
    lines = (folder / "errors.jsonl").read_text().splitlines()
    return {record["id"]: record["reason"] for record in map(json.loads, lines)}


def records(folder: Path) -> dict[str, list[int]]:
    """The output ids of every line, each checked by the reader's own definition."""
    kept = {}
    for line in (folder / "raw_responses.jsonl").read_bytes().splitlines():
        parsed = parse_response_line(line)
        assert parsed is not None, line[:120]
        assert isinstance(parsed.output_ids, bytes)
        kept[parsed.id] = [int(i) for i in parsed.output_ids.split(b",")]
    return kept


def check_run(folder: Path, url: str, good: str, reasons: dict[str, str], *args: str) -> None:
    """One run: the good answer is the only record, each other kind marked with its reason."""
    result = run_runner(folder, url, "--max-retries", "0", "--request-timeout", "20", *args)
    assert result.returncode == 0, result.stderr[-2000:]
    assert records(folder) == {good: [5, 6, 7]}
    marked = marks(folder)
    assert set(marked) == set(reasons), result.stderr[-2000:]
    for kind, reason in reasons.items():
        assert reason in marked[kind], (kind, marked[kind])
    assert f"{len(reasons)} prompt failure(s) marked in {folder / 'errors.jsonl'}" in result.stderr
    final = status(folder)
    assert (final["completed"], final["errors"]) == (1, len(reasons))


@pytest.mark.slow
def test_native_hostile_answers_are_marked_never_written_and_the_next_run_resumes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "B1"
    write_prompts(folder, ["good", *NATIVE_REASONS])
    with hostile_answer_server() as (url, _):
        check_run(folder, url, "good", NATIVE_REASONS, "--api", "sglang")
        again = run_runner(folder, url, "--max-retries", "0", "--api", "sglang")
    assert "--repair" not in again.stderr, again.stderr[-2000:]  # resumes, no corrupt line
    assert status(folder)["resumed_responses"] == 1
    assert records(folder) == {"good": [5, 6, 7]}
    tried_again = f"nothing could be generated: {len(NATIVE_REASONS)} prompt(s) failed"
    assert tried_again in again.stderr


@pytest.mark.slow
def test_openai_completions_answers_of_the_wrong_shape_are_marked(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    write_prompts(folder, ["good_completion", *COMPLETIONS_REASONS])
    with hostile_answer_server() as (url, _):
        check_run(
            folder, url, "good_completion", COMPLETIONS_REASONS, "--api", "openai-completions"
        )


@pytest.mark.slow
def test_chat_streams_of_the_wrong_shape_are_marked(tmp_path: Path) -> None:
    from tests.support.export_data import build_think_tokenizer

    build_think_tokenizer(tmp_path / "tok")
    folder = tmp_path / "B1"
    write_prompts(folder, ["good_chat", *CHAT_REASONS])
    with hostile_answer_server() as (url, _):
        check_run(
            folder, url, "good_chat", CHAT_REASONS,
            "--api", "openai-chat", "--tokenizer", str(tmp_path / "tok"), "--reencode",
        )  # fmt: skip


@pytest.mark.parametrize("length", [-50, 10**12, 2**22, True])
def test_the_budgets_length_index_answers_at_once_whatever_it_is_given(length: int) -> None:
    code = (
        "from agent.pipeline.inference.budget import LengthIndex\n"
        f"index = LengthIndex()\nindex.add(5)\ntry:\n    index.add({length!r})\n"
        "except ValueError as exc:\n    print('refused:', exc)\n"
        "print(index.longer_than(4), index.longer_than(2**23))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=agent_env(), capture_output=True, text=True, timeout=10
    )
    assert result.returncode == 0, result.stderr
    if type(length) is not int or length < 0:
        assert result.stdout.startswith(f"refused: a response length of {length!r} tokens")
        return
    longer = length if length > 2**23 else 0
    assert result.stdout.strip() == f"(2, {5 + length}) ({int(longer > 0)}, {longer})"
