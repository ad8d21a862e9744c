"""`eagle-console demo` driven as a person would: in tmux, by keys, reading the screen.

tmux runs the demo on a private server socket; the test sends keys with `send-keys` and reads the
screen with `capture-pane` until the datasets show progress, presses R on the dataset heading
past its budget, confirms, and waits for the toast that says the agent's redeploy is done (the
demo's autopilot runs meanwhile, and leaves a dataset under a redeploy alone). Quitting must
leave nothing of the demo running.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from console.demo.config_file import OLD_RUN_BUDGET
from tests.support.demo_terminal import demo_processes
from tests.support.tmux import Tmux

PROGRESS = re.compile(r"B1_sharegpt\s+([1-9]\d*) / \d+")

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def command_field(screen: str) -> str:
    """The modal's command as its field shows it: the text between the field's tall borders
    (▊ and ▎) on each line, the wrapped lines joined again by spaces."""
    rows = [line.split("▊", 1)[1].rsplit("▎", 1)[0].strip()
            for line in screen.splitlines() if "▊" in line and "▎" in line]  # fmt: skip
    return " ".join(row for row in rows if row.strip("▔▁"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("flags", ["", "--ssh"], ids=["local", "ssh"])
@pytest.mark.slow
def test_the_demo_shows_progress_and_r_redeploys_the_run_heading_over_budget(
    tmp_path: Path, tmux: Tmux, flags: str
) -> None:
    workspace = tmp_path / "demo"
    console = Path(sys.executable).parent / "eagle-console"
    exited = tmp_path / "exited"
    command = f"{console} demo {flags} --dir {workspace} --keep; echo $? > {exited}"
    tmux.run("new-session", "-d", "-s", "demo", "-x", "200", "-y", "50", command)

    tmux.wait_for(lambda s: PROGRESS.search(s) is not None, "progress on B1_sharegpt")
    tmux.wait_for(lambda s: "B3_math" in s and "restart it with --token-budget" in s,
                  "the projected-overrun alert on B3_math")  # fmt: skip

    tmux.keys("Down", "Down")  # the datasets table has the focus; B3_math is the third row
    tmux.keys("R")
    suggested = f"--token-budget {OLD_RUN_BUDGET}"  # the run heads past its budget
    modal = tmux.wait_for(
        lambda s: "Kill, deploy and restart" in s and command_field(s).endswith(suggested),
        "the redeploy modal, its whole command ending with the suggested budget",
    )
    assert "inference-old" in modal
    assert "B3_math" in modal
    tmux.keys("Tab", "Enter")  # Cancel has the focus; Tab moves to "Kill, deploy, restart"
    tmux.wait_for(lambda s: "redeploy done" in s, "the toast saying the agent's redeploy is done")

    remote = workspace / "remote" / "run_inference.py"
    assert remote.read_text() == (workspace / "local" / "run_inference.py").read_text()
    argvs = [p.read_text() for p in (workspace / "agent-state" / "jobs").glob("*B3_math*/job.json")]
    assert len(argvs) == 2
    assert sum("--token-budget" in argv for argv in argvs) == 1

    tmux.keys("q")
    assert tmux.wait_exit(exited) == "0"
    assert demo_processes(workspace) == []
