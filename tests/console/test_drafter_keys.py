"""x, X and B through the real app and a real local agent: export, its report, the drafter's verdict.

B starts the drafter's server and the baseline (both simulators, as real jobs of the agent's),
then the evaluate job; the agent reads its eval.json and the drafter panel shows the verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.protocol import JobSpec, PipelineConfig
from console.ui.app import ConsoleApp
from console.ui.screens.export import ExportScreen
from console.ui.widgets.drafter_panel import DrafterPanel
from tests.support.export_data import (
    KEEPS_TURNS,
    build_think_tokenizer,
    ids_of,
    response,
    write_jsonl,
)
from tests.support.local_app import SIZE
from tests.support.local_host_app import configured_app, stop_live_jobs
from tests.support.ports import free_port
from tests.support.screen import wait_for
from tests.support.toasts import record_toasts

SIM = ("{python}", "-m", "agent.simulator", "--speed", "4", "--mean-tokens", "400",
       "--sd-tokens", "1", "--vocab-size", "1000")  # fmt: skip
JOB_WAIT_S = 100.0


def panel_text(app: ConsoleApp) -> str:
    panels = app.screen.query(DrafterPanel)
    return str(panels.first().render()) if panels else ""


def export_states(app: ConsoleApp) -> list[str]:
    snapshot = app.views["gpu"].snapshot
    return [j.state for j in snapshot.jobs if j.kind == "export"] if snapshot else []


@pytest.mark.timeout(240)
@pytest.mark.slow
async def test_after_training_b_serves_the_drafter_and_the_verdict_reaches_the_panel(
    state_dir: Path, tmp_path: Path
) -> None:
    baseline, drafter = free_port(), free_port()
    prompts = tmp_path / "held_out.jsonl"
    write_jsonl(prompts, [{"id": i, "input_ids": [i + 1, i + 2]} for i in range(4)])
    evaluate = ("{python}", "-m", "agent.pipeline.evaluate", "--server", f"http://127.0.0.1:{drafter}",
                "--baseline", "{sglang_url}", "--prompts", str(prompts), "--num-prompts", "4",
                "--concurrency", "1,4", "--max-new-tokens", "64", "--out", str(tmp_path / "eval"))  # fmt: skip
    jobs = {
        "sglang": JobSpec((*SIM, "--port", str(baseline)), kind="server", gpu=True, grace_s=5),
        "sglang-drafter": JobSpec((*SIM, "--port", str(drafter), "--speculative-accept-length", "3"),
                                  kind="drafter_server", grace_s=5),
        "train": JobSpec((sys.executable, "-c", "print('Training completed')"), kind="train", gpu=True),
        "evaluate": JobSpec(evaluate, kind="evaluate"),
    }  # fmt: skip
    pipeline = PipelineConfig(sglang_url=f"http://127.0.0.1:{baseline}", jobs=jobs)
    app = configured_app(state_dir, pipeline)
    said = record_toasts(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is not None)
        assert not app.screen.query_one(DrafterPanel).has_class("-shown")
        await pilot.press("t")
        await wait_for(pilot, lambda: any("press B" in line for line in said), JOB_WAIT_S)
        await pilot.press("B")
        try:
            await wait_for(pilot, lambda: "faster than no drafter" in panel_text(app), JOB_WAIT_S)
            snapshot = app.views["gpu"].snapshot
            assert snapshot is not None
            assert snapshot.evaluation is not None
            started = {j.name for j in snapshot.jobs}
            assert {"sglang", "sglang-drafter", "evaluate"} <= started
            assert [level.concurrency for level in snapshot.evaluation.levels] == [1, 4]
            assert snapshot.evaluation.levels[0].accept_length is not None
            assert app.screen.query_one(DrafterPanel).has_class("-shown")
            assert "c=1: " in panel_text(app)
        finally:
            await stop_live_jobs(app)


@pytest.mark.slow
async def test_x_exports_and_capital_x_shows_the_quality_report(
    state_dir: Path, tmp_path: Path
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    chat = [{"role": "user", "content": "why is the sum"}]
    write_jsonl(
        tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": k, "messages": chat} for k in "abc"]
    )
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl",
                [response(k, ids_of(vocab, "w1 </think> the sum <|im_end|>")) for k in "ab"])  # fmt: skip
    export = ("{python}", "-m", "agent.pipeline.export", "--datasets-root", str(tmp_path / "d"),
              "--tokenizer", str(tmp_path / "tok"), "--out", str(tmp_path / "out"),
              "--chat-template", "lfm")  # fmt: skip
    pipeline = PipelineConfig(jobs={"export": JobSpec(export, kind="export")})
    app = configured_app(state_dir, pipeline)
    said = record_toasts(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is not None)
        await pilot.press("X")
        await wait_for(pilot, lambda: any("no export report yet" in line for line in said))
        await pilot.press("x")
        await wait_for(pilot, lambda: "round trip 100.0%" in panel_text(app), JOB_WAIT_S)
        await wait_for(pilot, lambda: export_states(app) == ["exited"], JOB_WAIT_S)
        await pilot.press("X")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        table = app.screen.query_one("#export-table")
        row = [str(c) for c in table.get_row_at(0)]  # type: ignore[attr-defined]
        assert row[:3] == ["B1", "2", "10"]
        assert row[8] == "1"  # the prompt left without an answer
        assert row[-1] == "100.0%"
