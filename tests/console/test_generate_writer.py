"""g names the writer of a dataset the agent did not start, and so does the agent's refusal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent.protocol import DatasetsConfig, PipelineConfig
from tests.support.datasets import write_prompts
from tests.support.local_app import RUNNER, SIZE, live_jobs
from tests.support.local_host_app import configured_app
from tests.support.screen import wait_for
from tests.support.toasts import record_toasts

HOLD_OPEN = (
    "import sys, time; f = open(sys.argv[1], 'a'); print('open', flush=True); time.sleep(300)"
)


async def test_g_on_a_dataset_an_old_script_writes_names_that_script(
    tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_prompts(root / "B1_sharegpt", 3)
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=1000), jobs={"inference": RUNNER}
    )

    app = configured_app(state_dir, pipeline)
    said = record_toasts(app)
    script = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(root / "B1_sharegpt" / "raw_responses.jsonl")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert script.stdout is not None
        script.stdout.readline()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any(
                d.writer for d in (app.views["gpu"].snapshot.datasets if app.views["gpu"].snapshot else ())
            ))  # fmt: skip
            await pilot.press("g")
            await wait_for(pilot, lambda: any(f"pid {script.pid} (" in m for m in said))
            assert live_jobs(app) == []
            assert "open for writing" in said[-1]
    finally:
        script.kill()
        script.wait()
        if script.stdout is not None:
            script.stdout.close()
