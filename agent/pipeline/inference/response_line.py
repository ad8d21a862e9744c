"""The response line the runner writes, and the per-dataset totals read back from earlier ones.

Every backend writes the fields docs/file-formats.md lists; the OpenAI-compatible ones add what their
servers report (prompt ids, stop_reason, usage) and how the ids were obtained. `runner.json` reports cost and the re-encoding mismatch share for the whole dataset, not just
this run, so a resumed run first adds up the records already there (`usage.cost`,
`"tokens": "reencoded"` and the two lengths). It runs after resume has cut off any torn tail;
a line that does not parse is skipped here (resume has judged it already). Only the
OpenAI-compatible backends write these fields, so the native backend never pays for the pass.

A record is written only as `encoded_line` makes it: strict JSON (a NaN is no JSON, and no
reader of ours takes it), checked against the one definition of a response line the agent, resume
and vocab read with (`agent.datasets.response_lines`), within the line limit they enforce.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.datasets.response_lines import MAX_LINE_BYTES, parse_response_line, why_not_response
from agent.host.regular_files import open_regular
from agent.pipeline.inference.backends.base import Generation
from agent.pipeline.inference.prompts import Prompt
from agent.pipeline.inference.status import runner_sha256
from agent.pipeline.tokenizer.identity import STAMP


def response_line(
    prompt: Prompt, answer: Generation, latency_s: float, api: str,
    tokenizer_stamp: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The response line; the OpenAI-compatible backends add what their servers report.

    `tokenizer_stamp` is the digest of the tokenizer the prompt ids came from (identity.py): the
    export leaves out the answers of another.
    """
    record = {
        "id": prompt.id,
        "output_ids": answer.output_ids,
        "completion_tokens": answer.completion_tokens,
        "prompt_tokens": answer.prompt_tokens,
        "finish_reason": answer.finish_reason,
        "latency_s": round(latency_s, 4),
        "ts": round(time.time(), 3),
        "runner_sha256": runner_sha256(),
    }
    if tokenizer_stamp is not None:
        record[STAMP] = tokenizer_stamp
    if api != "sglang":
        record |= {"api": api, "prompt_ids": answer.prompt_ids, "stop_reason": answer.stop_reason,
                   "usage": answer.usage}  # fmt: skip
    return record | answer.record_fields


class NotAResponseError(ValueError):
    """A record that is no response line by the reader's definition: never written."""


def encoded_line(record: dict[str, Any]) -> bytes:
    """The record as one compact line and its newline; NotAResponseError if readers refuse it."""
    try:
        text = json.dumps(record, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise NotAResponseError(f"it cannot be written as strict JSON ({exc})") from None
    line = text.encode()
    if len(line) > MAX_LINE_BYTES:
        raise NotAResponseError(
            f"its line would be {len(line):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
        )
    if parse_response_line(line) is None:
        raise NotAResponseError(f"it is not a response line: {why_not_response(line)}")
    return line + b"\n"


@dataclass
class DatasetTally:
    """Cost and re-encoding counts of a dataset's records."""

    cost: float = 0.0
    reencoded: int = 0
    reencode_mismatches: int = 0

    def add_record(self, record: Any) -> None:
        """Count one response line's fields."""
        if not isinstance(record, dict):
            return
        usage = record.get("usage")
        cost = usage.get("cost") if isinstance(usage, dict) else None
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost = round(self.cost + cost, 9)
        if record.get("tokens") == "reencoded":
            self.reencoded += 1
            served = record.get("server_completion_tokens")
            self.reencode_mismatches += served is not None and served != record.get(
                "reencoded_tokens"
            )

    def plus(self, cost: float, reencoded: int, mismatches: int) -> DatasetTally:
        """These totals with this run's counts added."""
        return DatasetTally(round(self.cost + cost, 9), self.reencoded + reencoded,
                            self.reencode_mismatches + mismatches)  # fmt: skip

    @property
    def mismatch_share(self) -> float | None:
        """Share of re-encoded records whose length differs from the server's; None without any."""
        return round(self.reencode_mismatches / self.reencoded, 4) if self.reencoded else None


def tally_responses(path: Path) -> DatasetTally:
    """The totals of every complete record in `path` (none when there is no file)."""
    tally = DatasetTally()
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return tally
    with handle:
        for line in handle:
            if b'"usage"' in line or b'"reencoded"' in line:
                try:
                    tally.add_record(json.loads(line))
                except ValueError:
                    continue
    return tally
