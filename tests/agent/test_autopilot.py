"""The autopilot walks the pipeline to a verdict on its own, and pauses saying why when it must.

Real daemon and real processes; each stage's job is a few lines of Python that writes what the
real job would (responses, the export's report, eval.json), so the run takes seconds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.protocol import (
    AUTOPILOT_CONTROL,
    AUTOPILOT_STATUS,
    EVENTS_LIST,
    JOBS_LAUNCH,
    AutopilotAction,
    AutopilotParams,
    AutopilotStatus,
    AutopilotStatusParams,
    DatasetsConfig,
    EventsList,
    EventsParams,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from console.link.agent_link import AgentLink
from tests.support.datasets import response_line, write_prompts
from tests.support.operations import autopilot_where, jobs_now, local_link

PY = sys.executable
ANSWER = "import sys; open(sys.argv[1] + '/raw_responses.jsonl', 'a').write({line!r})"
REPORT = "import json, os, sys; os.makedirs(sys.argv[2], exist_ok=True); json.dump({report}, open(sys.argv[2] + '/{name}', 'w'))"
SLEEP = "import time; time.sleep(600)"
EXPORT = {
    "roundtrip": {"share": 1.0, "flagged": False}, "finished_at": 1.0,
    "min_roundtrip_share": 0.99, "tokens": 10, "tokens_per_s": 1.0, "datasets": [],
}  # fmt: skip
EVAL = {"levels": [], "verdict": "2.10x at concurrency 1: worth serving", "finished_at": 1.0}


def writes(name: str, report: dict[str, object], out: Path) -> tuple[str, ...]:
    return (PY, "-c", REPORT.format(report=repr(report), name=name), "--out", str(out))


def pipeline(tmp_path: Path, vocab: tuple[str, ...] = (PY, "-c", "pass"), export: dict[str, object] = EXPORT,
             train: tuple[str, ...] = (PY, "-c", "pass")) -> PipelineConfig:  # fmt: skip
    root = tmp_path / "datasets"
    for name in ("A", "B"):
        write_prompts(root / name, 1)
    answer = (PY, "-c", ANSWER.format(line=response_line("p0", 5)), "{dataset_dir}")
    jobs = {
        "generate": JobSpec(answer, kind="inference", per_dataset=True),
        "export": JobSpec(writes("export_report.json", export, tmp_path / "export"), kind="export"),
        "vocab": JobSpec(vocab, kind="vocab"),
        "sglang": JobSpec((PY, "-c", SLEEP), kind="server"),
        "train": JobSpec(train, kind="train"),
        "drafter": JobSpec((PY, "-c", SLEEP), kind="drafter_server"),
        "evaluate": JobSpec(
            (*writes("eval.json", EVAL, tmp_path / "eval"), "--baseline", "x"), kind="evaluate"
        ),  # fmt: skip
    }
    return PipelineConfig(DatasetsConfig(str(root), budget=5), jobs=jobs)


@pytest.fixture
async def link(tmp_path: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    async with local_link(state_dir, pipeline(tmp_path)) as agent:
        yield agent


async def control(link: AgentLink, action: AutopilotAction, key: str) -> AutopilotStatus:
    status: AutopilotStatus = await link.call(
        AUTOPILOT_CONTROL, AutopilotParams(action), idempotency_key=key
    )
    return status


async def timeline(link: AgentLink) -> list[tuple[str, str]]:
    found: EventsList = await link.call(EVENTS_LIST, EventsParams())
    return [(e.kind, e.subject) for e in found.events if e.kind.startswith("autopilot")]


async def test_the_autopilot_runs_every_stage_to_the_verdict_without_a_console(
    link: AgentLink, tmp_path: Path, state_dir: Path
) -> None:
    await link.call(JOBS_LAUNCH, LaunchParams("sglang"), idempotency_key="server")
    started = await control(link, "start", "a1")
    assert started.state == "running"
    await link.close()  # nobody watches from here on

    async with local_link(state_dir, None) as again:
        done = await autopilot_where(again, lambda s: s.state == "done")
        jobs = await jobs_now(again)
        events = await timeline(again)

    assert done.verdict == "2.10x at concurrency 1: worth serving"
    assert [(s.name, s.state) for s in done.stages] == [
        ("generate", "done"), ("export", "done"), ("vocab", "done"), ("free gpus", "done"),
        ("hidden states", "skipped"), ("train", "done"), ("export drafter", "skipped"),
        ("serve", "done"), ("evaluate", "done"),
    ]  # fmt: skip
    by_name: dict[str, list[str]] = {}
    for job in sorted(jobs, key=lambda j: j.started_at or 0):
        by_name.setdefault(job.name, []).append(job.state)
    assert by_name["sglang"] == ["stopped", "running"], "freed for training, back as the baseline"
    assert by_name["drafter"] == ["running"]
    assert sorted(j.dataset or "" for j in jobs if j.name == "generate") == ["A", "B"]
    assert ("autopilot_stage_done", "evaluate") in events
    assert events[-1] == ("autopilot_done", "autopilot")

    # started again after its verdict: what is done on this data stays done; nothing
    # stops, nothing trains or evaluates again
    async with local_link(state_dir, None) as again:
        await control(again, "start", "a2")
        redone = await autopilot_where(again, lambda s: s.state == "done")
        after = await jobs_now(again)
    assert redone.verdict == done.verdict
    assert sorted(j.id for j in after) == sorted(j.id for j in jobs), "no job started"
    assert [j.state for j in after if j.name == "sglang"].count("running") == 1, "still serving"


async def test_a_stage_that_fails_twice_pauses_with_the_reason_and_resumes_on_request(
    tmp_path: Path, state_dir: Path
) -> None:
    flag = tmp_path / "vocab-fixed"
    vocab = (PY, "-c", f"import os, sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 1)")
    async with local_link(state_dir, pipeline(tmp_path, vocab=vocab)) as link:
        await control(link, "start", "a1")
        paused = await autopilot_where(link, lambda s: s.state == "paused")
        assert paused.stage == "vocab"
        assert paused.paused_reason is not None
        assert "exit 1" in paused.paused_reason
        assert "failed 2 times" in paused.paused_reason
        assert "eagle-console autopilot HOST resume" in paused.paused_reason
        assert [j.name for j in await jobs_now(link)].count("vocab") == 2, "tried once more"

        flag.touch()  # the user fixes it
        await control(link, "resume", "a2")
        done = await autopilot_where(link, lambda s: s.state == "done")
        assert done.verdict is not None
        events = [kind for kind, _ in await timeline(link)]
        assert {"autopilot_retry", "autopilot_paused", "autopilot_resumed"} <= set(events)


async def test_a_train_stage_out_of_gpu_memory_pauses_at_once_naming_the_knobs(
    tmp_path: Path, state_dir: Path
) -> None:
    """Tried once more with the same argv, it ran out of memory the same way."""
    oom = "import sys; print('torch.OutOfMemoryError: CUDA out of memory.'); sys.exit(1)"
    async with local_link(state_dir, pipeline(tmp_path, train=(PY, "-c", oom))) as link:
        await control(link, "start", "a1")
        paused = await autopilot_where(link, lambda s: s.state == "paused")
        jobs = await jobs_now(link)
    assert paused.stage == "train"
    reason = paused.paused_reason or ""
    assert "GPU out of memory" in reason
    assert "lower the batch size" in reason
    assert [j.name for j in jobs].count("train") == 1, "not tried once more"


async def test_an_export_below_its_round_trip_gate_pauses_without_a_retry(
    tmp_path: Path, state_dir: Path
) -> None:
    flagged = {**EXPORT, "roundtrip": {"share": 0.5, "flagged": True}}
    async with local_link(state_dir, pipeline(tmp_path, export=flagged)) as link:
        await control(link, "start", "a1")
        paused = await autopilot_where(link, lambda s: s.state == "paused")
        assert paused.stage == "export", paused.paused_reason
        assert "under the 99% asked (X shows the first difference" in (paused.paused_reason or "")
        assert [j.name for j in await jobs_now(link)].count("export") == 1


async def test_a_pause_starts_nothing_more_and_a_second_start_changes_nothing(
    link: AgentLink,
) -> None:
    await control(link, "start", "a1")
    again = await control(link, "start", "a2")
    assert again.state == "running"
    paused = await control(link, "pause", "a3")
    assert paused.state == "paused"
    assert (paused.paused_reason or "").startswith("paused by eagle-console")
    json.dumps(paused.stage)  # where it stopped is said, whatever it is


@pytest.mark.parametrize(
    "field",
    [{"index": "2"}, {"attempts": {"vocab": "x"}}, {"stages": {"vocab": {"attempts": []}}},
     {"fresh_after": "soon"}, {"paused_reason": 7}, {"index": 99}, {"round": True},
     {"stages": {"export": {"state": [1]}}}, {"stages": {"export": {"detail": {}}}}],
)  # fmt: skip
async def test_a_record_with_a_wrong_typed_field_is_off_and_start_works(
    tmp_path: Path, state_dir: Path, field: dict[str, object]
) -> None:
    state_dir.mkdir(mode=0o700, parents=True)
    record = {"state": "paused", "run": "r", "index": 1, "stages": {}, "attempts": {}, **field}
    (state_dir / "autopilot.json").write_text(json.dumps(record))
    async with local_link(state_dir, pipeline(tmp_path)) as agent:
        status: AutopilotStatus = await agent.call(AUTOPILOT_STATUS, AutopilotStatusParams())
        assert status.state == "off", "a record that does not read is no run to resume"
        started = await control(agent, "start", "after-a-bad-record")
        assert started.state == "running"
