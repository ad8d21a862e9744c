"""SIGKILL at random moments, then resume: the final ids are exactly the prompts, once each."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.pipeline.inference.records import recover
from tests.support.runner_files import (
    response_ids,
    run_runner,
    start_runner,
    status,
    wait_for_status,
    write_id_prompts,
)
from tests.support.simulator_process import running_simulator

KILLS = 20
"""Each a runner start (imports and resume) and a kill; the runner_kill scenario does 200 more."""


@pytest.mark.slow
@pytest.mark.timeout(360)  # a bound for a loaded machine (6 workers on 2 cores), not a goal
def test_repeated_sigkill_and_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    ids = write_id_prompts(folder, 2000)
    responses = folder / "raw_responses.jsonl"
    rng = random.Random(20261129)
    torn_fragments: list[bytes] = []
    with running_simulator(
        tmp_path / "sim", "--speed", "5", "--mean-tokens", "100", "--sd-tokens", "60"
    ) as sim:
        for cycle in range(KILLS):
            runner = start_runner(folder, sim.url, "--concurrency", "32")
            wait_for_status(folder, lambda s, pid=runner.pid: s["pid"] == pid)  # resume is done
            time.sleep(rng.uniform(0.0, 0.4))  # the fault: a kill at a random moment of the run
            runner.kill()
            runner.wait()
            if cycle % 5 == 4 and responses.exists():  # and a kill in the middle of a write
                fragment = (
                    json.dumps({"id": "p0", "output_ids": list(range(50))})[: rng.randrange(1, 60)]
                ).encode()
                with responses.open("ab") as handle:
                    handle.write(fragment)
            tail = responses.read_bytes().rsplit(b"\n", 1)[-1] if responses.exists() else b""
            if tail:
                torn_fragments.append(tail)
            assert max(response_ids(folder, allow_torn_tail=True).values(), default=1) == 1
        final = run_runner(folder, sim.url, "--concurrency", "32")

    assert final.returncode == 0, final.stderr
    assert response_ids(folder) == dict.fromkeys(ids, 1)
    torn = folder / "raw_responses.torn"
    assert len(torn_fragments) >= KILLS // 5
    assert torn.read_bytes() == b"".join(fragment + b"\n" for fragment in torn_fragments)
    assert status(folder)["stop_reason"] == "exhausted"


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
