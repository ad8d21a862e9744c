"""The @reboot line survives the names a state folder can have, and the jobs exit in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.host.autostart import _is_ours, cron_line
from agent.pipeline.exit_codes import EXIT_SIGNAL, exit_with
from tests.support.repo import REPO


def test_a_percent_in_the_state_folder_is_escaped_for_cron() -> None:
    state = Path("/srv/eagle 100%/state")
    line = cron_line(state)
    assert re.search(r"(?<!\\)%", line) is None, "cron reads an unescaped % as a newline"
    assert "100\\%" in line
    assert _is_ours(line, state)


def test_an_interrupted_job_says_so_in_one_line_and_exits_as_a_stop(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as ended:
        exit_with(interrupted, "export")
    assert ended.value.code == EXIT_SIGNAL
    said = capsys.readouterr().err
    assert said == "export: interrupted; what it wrote is incomplete: run it again\n"


@pytest.mark.parametrize(
    "main",
    [
        "agent/pipeline/export/__main__.py",
        "agent/pipeline/vocab/__main__.py",
        "agent/pipeline/evaluate/__main__.py",
    ],
)
def test_each_pipeline_job_runs_its_main_through_exit_with(main: str) -> None:
    assert "exit_with(main, " in (REPO / main).read_text()
