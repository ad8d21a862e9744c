"""A dataset of conversations, counted as the runner writes it: one record per turn.

Each turn is an answer (its tokens and its cut count); the conversation is one response, next to
its one prompt, once its last turn is in, so progress, "done" and the projection compare like
with like. Glued and spaced records count alike; a duplicate turn counts once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.datasets.tracker import ResponseCounter
from agent.protocol import DatasetProgress
from console.model.formatting import responses_text


def turn(conversation: str, number: int, turns: int, finish: str = "stop", **extra: Any) -> str:
    line = {"id": f"{conversation}#turn{number}", "output_ids": [5] * number,
            "completion_tokens": number, "finish_reason": finish, "conversation": conversation,
            "turn": number, "turns": turns, **extra}  # fmt: skip
    return json.dumps(line, separators=(",", ":")) + "\n"


def plain(rid: str) -> str:
    line = {"id": rid, "output_ids": [5, 6], "completion_tokens": 2, "finish_reason": "length"}
    return json.dumps(line) + "\n"


def test_a_conversation_is_one_response_once_its_last_turn_is_in(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_text(
        turn("a", 1, 3) + turn("b", 1, 2) + turn("a", 2, 3, "length") + plain("p")
        + turn("b", 2, 2) + turn("b", 2, 2)  # the same turn twice: counted once
    )  # fmt: skip
    counter = ResponseCounter(path)
    counter.update()
    assert (counter.responses, counter.conversations_done, counter.turn_records) == (2, 1, 4)
    assert counter.tokens == 1 + 1 + 2 + 2 + 2
    assert counter.truncated_responses == 2

    with path.open("a") as handle:
        handle.write(turn("a", 3, 3)[:-10] + turn("a", 3, 3))  # a torn record glued to the turn
    counter.update()
    assert (counter.responses, counter.conversations_done, counter.turn_records) == (3, 2, 5)


def test_progress_counts_answers_for_the_cut_share_and_prompts_for_done() -> None:
    progress = DatasetProgress(
        "B2", prompts=4, responses=3, tokens=100, budget=None, turn_records=5,
        conversations_done=2, truncated_responses=3,
    )  # fmt: skip
    assert progress.answers == 6
    assert progress.truncated_share == 0.5
    assert progress.prompts_left == 1
    assert responses_text(progress) == "3 / 4 · 5 turns"
    assert responses_text(DatasetProgress("B1", 4, 3, 10, None)) == "3 / 4"
