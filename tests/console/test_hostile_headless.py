"""Hostile host text in the headless commands' output: shown as typed, never as a control sequence.

Each output is rendered the way a terminal would receive it (a Rich console that believes it
writes to a colour terminal), and searched for the planted escape sequences: the console's own
styling escapes may be there, the host's may not.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from rich.console import Console

from agent.protocol import FilesHashResult, FileState, HelloResult, to_wire
from console.cli.deploy_command import drift_table, print_diffs
from console.cli.doctor import Check
from console.cli.main import main, print_checks
from console.cli.report import markdown_report
from console.cli.status import HostStatus, print_json, print_tables
from console.link.deploy import FilePlan
from tests.support.hostile_text import (
    ESCAPES,
    SHOWN_MARKUP,
    hostile,
    hostile_snapshot,
    unsafe_characters,
)
from tests.support.scripted_agent import ScriptedAgent

PLANTED = ("\x1b]0;PWNED", "\x1b[2J", "\x1b[6n", "\x9b31m", "\x1bP+q", "\x00", "\x08", "\u202e",
           "\udcff")  # fmt: skip
"""The sequences of ESCAPES a terminal would act on; the console's own styling uses none."""


def terminal() -> Console:
    """A console that writes what a colour terminal would get, into a buffer."""
    return Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=400,
                   highlight=False, soft_wrap=True)  # fmt: skip


def written(console: Console) -> str:
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def escapes_that_got_through(output: str) -> list[str]:
    """The planted sequences found raw in `output` (the carriage return counted apart)."""
    found = [sequence for sequence in PLANTED if sequence in output]
    return found + (["\\r"] if "\r" in output else [])


def test_status_tables_show_host_text_literally() -> None:
    out = terminal()
    print_tables([HostStatus("gpu", hostile_snapshot())], out)
    output = written(out)
    assert escapes_that_got_through(output) == []
    assert f"snap.datasets[0].name{SHOWN_MARKUP}" in output
    assert f"snap.alerts[1].message{SHOWN_MARKUP}" in output
    assert "␛]0;PWNED" in output


def test_status_json_is_plain_json_that_gives_the_host_text_back() -> None:
    out = terminal()
    snapshot = hostile_snapshot()
    print_json([HostStatus("gpu", snapshot, agent_version=hostile("version"))], out)
    output = written(out)
    assert output.isascii()  # JSON escapes every control character and the undecodable bytes
    assert escapes_that_got_through(output) == []
    assert json.loads(output)["datasets"] == to_wire(snapshot)["datasets"]


def test_the_markdown_report_escapes_markup_and_controls() -> None:
    report = markdown_report(hostile("host"), hostile_snapshot())
    assert escapes_that_got_through(report) == []
    assert [c for line in report.split("\n") for c in unsafe_characters(line)] == []
    assert "snap.datasets\\[0\\].name\\[red\\]M\\[/\\]\\[/\\]" in report
    assert "``snap.jobs[0].name[red]M[/][/]" not in report
    assert "`snap.jobs[0].name[red]M[/][/]" in report  # a code span: shown as typed
    table_rows = [line for line in report.split("\n") if line.startswith("| snap.datasets")]
    assert all(line.count(" | ") == 8 for line in table_rows)  # no cell split by host text


def test_doctor_lines_show_host_text_literally() -> None:
    out = terminal()
    print_checks([Check("sglang", False, hostile("server.detail")), Check("gpus", True, "2")], out)
    output = written(out)
    assert escapes_that_got_through(output) == []
    assert f"server.detail{SHOWN_MARKUP}" in output


async def test_deploy_drift_and_diff_show_host_text_literally(tmp_path: Path) -> None:
    local = tmp_path / "run.py"
    local.write_text("print('new')\n")
    agent = ScriptedAgent(
        HelloResult(1, "0.1.0", "", 1, "box", 0.0),
        {"files.hash": FilesHashResult((FileState("/srv/run.py", hostile("sha")),))},
        file_content=(hostile("host line") + "\n").encode(errors="surrogateescape"),
    )
    link = await agent.open()
    plan = FilePlan(local, hostile("remote"), "abc", hostile("sha"))
    out = terminal()
    out.print(drift_table(hostile("host"), [plan]))
    await print_diffs(link, [plan], out)
    await link.close()
    output = written(out)
    assert escapes_that_got_through(output) == []
    assert f"host line{SHOWN_MARKUP}" in output
    assert f"remote{SHOWN_MARKUP}" in output


def test_a_failure_line_naming_host_text_is_one_safe_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "eagle-console.toml"
    config.write_text('[hosts.gpu]\nssh = "gpu"\n')
    code = main(["--config", str(config), "status", hostile("name")])
    err = capsys.readouterr().err
    assert code == 2
    assert escapes_that_got_through(err) == []
    assert err.count("\n") == 1
    assert f"name{SHOWN_MARKUP}" in err


def test_planted_sequences_are_what_escapes_holds() -> None:
    assert all(sequence in ESCAPES for sequence in PLANTED)


def test_warnings_logged_about_the_agent_are_sanitised_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--config", "/nonexistent/eagle-console.toml", "status"])  # installs the formatter
    capsys.readouterr()
    logger = logging.getLogger("console.link.agent_link")
    record = logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "agent error: %s",
                               (hostile("warned"),), None)  # fmt: skip
    assert logging.lastResort is not None  # what prints warnings when logging is not set up
    logging.lastResort.handle(record)
    err = capsys.readouterr().err
    assert escapes_that_got_through(err) == []
    assert f"warned{SHOWN_MARKUP}" in err
