"""g starts generation on the dataset under the cursor, G on every dataset still to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import DatasetsConfig, PipelineConfig
from console.ui.screens.confirm import ConfirmScreen
from tests.support.datasets import write_prompts
from tests.support.local_app import RUNNER, SIZE, live_jobs
from tests.support.local_host_app import configured_app, stop_live_jobs
from tests.support.screen import wait_for
from tests.support.toasts import record_toasts


@pytest.mark.slow
async def test_g_starts_the_selected_dataset_once_and_g_again_says_why_not(
    tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    for name in ("B1_sharegpt", "B2_ultrachat", "B3_math"):
        write_prompts(root / name, 3)
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=1000), jobs={"inference": RUNNER}
    )

    app = configured_app(state_dir, pipeline)
    said = record_toasts(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: bool(app.views["gpu"].snapshot and app.views["gpu"].snapshot.datasets)
        )
        await pilot.press("down", "g")
        await wait_for(pilot, lambda: len(live_jobs(app)) == 1)
        assert live_jobs(app)[0].dataset == "B2_ultrachat"
        await pilot.press("g")
        await wait_for(pilot, lambda: any("B2_ultrachat is being written" in m for m in said))
        await pilot.press("G")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "B1_sharegpt, B3_math" in str(app.screen.query_one("#confirm-text").render())
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: len(live_jobs(app)) == 3)
        assert sorted(j.dataset or "" for j in live_jobs(app)) == [
            "B1_sharegpt",
            "B2_ultrachat",
            "B3_math",
        ]
        await stop_live_jobs(app)
