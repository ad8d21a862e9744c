"""A records file cut at any byte resumes to its whole lines, the torn tail moved aside.

The runner SIGKILLed at random moments of real runs and resumed, its final ids exactly the
prompts once each, is the `runner_kill` scenario of the fault campaign (`make test` runs it at
small scale): a copy of it here ran the same drill a second time.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.pipeline.inference.records import recover

RECORDS = [json.dumps({"id": f"p{i}", "output_ids": [i] * (i + 1)}) + "\n" for i in range(5)]
WHOLE = "".join(RECORDS).encode()


@settings(max_examples=len(WHOLE) + 1, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(WHOLE)))
def test_recover_at_every_truncation_point(tmp_path: Path, cut: int) -> None:
    path = tmp_path / f"cut-{cut}" / "raw_responses.jsonl"
    path.parent.mkdir()
    path.write_bytes(WHOLE[:cut])

    state = recover(path, repair=False, settle_s=0.0)  # no other writer: no settle to wait for

    kept = WHOLE[: WHOLE[:cut].rfind(b"\n") + 1]
    assert path.read_bytes() == kept
    assert state.done_ids == {f"p{i}" for i in range(kept.count(b"\n"))}
    assert state.tokens == sum(i + 1 for i in range(kept.count(b"\n")))
    torn = path.with_suffix(".torn")
    assert (torn.read_bytes() if torn.exists() else b"") == (
        WHOLE[len(kept) : cut] + b"\n" if cut > len(kept) else b""
    )
