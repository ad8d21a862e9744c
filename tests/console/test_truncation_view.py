"""Answers cut at max_new_tokens on screen: `cut 12%` beside a dataset's status, yellow when the
agent warns of it, and the count, share and cap in the dataset's detail."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App
from textual.widgets import Static

from agent.protocol import Alert, DatasetDetail, DatasetProgress, Snapshot
from console.cli.status import HostStatus
from console.config import ConfigError, load_config
from console.link.host_connection import LinkState
from console.model.truncation_view import cut_text, truncation_line
from console.ui.app import ConsoleApp
from console.ui.messages import LinkChanged, SnapshotReceived
from console.ui.screens.dataset import DatasetScreen
from console.ui.widgets.datasets_table import DatasetsTable
from tests.support.config_ranges import write_config
from tests.support.fixed_app import never
from tests.support.screen import eventually, holds

NOW = 1_795_960_000.0


def dataset(name: str, responses: int, truncated: int) -> DatasetProgress:
    return DatasetProgress(
        name, 2000, responses, responses * 500, None, status="running", writer_active=True,
        truncated_responses=truncated, max_new_tokens=4096,
    )  # fmt: skip


WARNED = dataset("B1_cut", 1000, 123)
QUIET = dataset("B2_few", 1000, 3)
WHOLE = dataset("B3_whole", 1000, 0)


def test_the_row_text_gives_the_share_cut_and_nothing_when_none_is() -> None:
    assert cut_text(WARNED) == "cut 12%"
    assert cut_text(QUIET) == "cut <1%"
    assert cut_text(WHOLE) == ""
    assert cut_text(dataset("empty", 0, 0)) == ""


def test_the_detail_line_gives_count_share_and_cap() -> None:
    assert truncation_line(WARNED) == "truncated: 123 of 1,000 (12.3 %) at max_new_tokens 4096"
    unknown_cap = replace(WARNED, max_new_tokens=None)
    assert truncation_line(unknown_cap) == "truncated: 123 of 1,000 (12.3 %) at max_new_tokens"
    assert truncation_line(WHOLE) is None
    assert truncation_line(None) is None


def snapshot() -> Snapshot:
    warning = Alert("truncation_high", "warning", "B1_cut: 12.3% of its answers were cut", "B1_cut")
    return Snapshot(NOW, "gpu-0", "/data", (WARNED, QUIET, WHOLE), (warning,))


def status_cell(table: DatasetsTable, name: str) -> Text:
    cell = table.get_cell(name, "status")
    assert isinstance(cell, Text)
    return cell


def cut_style(cell: Text) -> str:
    [span] = [s for s in cell.spans if "cut" in cell.plain[s.start : s.end]]
    return str(span.style)


async def test_the_table_shows_the_share_beside_the_status_in_yellow_when_warned() -> None:
    app = ConsoleApp({"gpu": never}, clock=lambda: NOW, monotonic=lambda: NOW)
    async with app.run_test(size=(150, 42)) as pilot:
        await pilot.pause()
        app.post_message(LinkChanged(LinkState("gpu", "up", agent_version="0.1.0", since=NOW)))
        app.post_message(SnapshotReceived("gpu", snapshot()))
        table = app.screen.query_one(DatasetsTable)
        await eventually(pilot, lambda: holds(table.row_count == 3, table.row_count))
        assert status_cell(table, "B1_cut").plain == "running · cut 12%"
        assert cut_style(status_cell(table, "B1_cut")) == "bold yellow"
        assert status_cell(table, "B2_few").plain == "running · cut <1%"
        assert cut_style(status_cell(table, "B2_few")) == "dim"
        assert status_cell(table, "B3_whole").plain == "running"


class DetailApp(App[None]):
    def __init__(self, progress: DatasetProgress) -> None:
        super().__init__()
        self.progress = progress

    async def on_mount(self) -> None:
        detail = DatasetDetail(self.progress.name, 0, (), {}, (), (), ())
        await self.push_screen(DatasetScreen("gpu", detail, self.progress))


@pytest.mark.parametrize(("progress", "shown"), [(WARNED, True), (WHOLE, False)])
async def test_the_detail_says_how_many_were_cut_at_which_cap(
    progress: DatasetProgress, shown: bool
) -> None:
    app = DetailApp(progress)
    async with app.run_test() as pilot:
        await pilot.pause()
        found = app.screen.query("#dataset-truncated")
        assert bool(found) is shown
        if shown:
            line = str(found.only_one(Static).render())
            assert line == "truncated: 123 of 1,000 (12.3 %) at max_new_tokens 4096"


HOST = '[hosts.gpu]\nssh = "local"\n\n[hosts.gpu.datasets]\nroot = "/data"\n'


def test_the_threshold_is_read_per_host_and_defaults_to_a_tenth(tmp_path: Path) -> None:
    default = load_config(write_config(tmp_path, HOST)).host("gpu").pipeline.datasets
    assert default is not None
    assert default.truncation_alert_share == 0.10
    text = HOST + "truncation_alert_share = 0\n"
    off = load_config(write_config(tmp_path, text)).host("gpu").pipeline.datasets
    assert off is not None
    assert off.truncation_alert_share == 0.0


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("12", "got 12; expected a number from 0 to 1"),
        ('"10%"', "got the string '10%'; expected a number >= 0"),
        ("-0.1", "got the number -0.1; expected a number >= 0"),
    ],
)
def test_a_bad_threshold_is_refused_naming_its_key(tmp_path: Path, value: str, said: str) -> None:
    path = write_config(tmp_path, HOST + f"truncation_alert_share = {value}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path}: hosts.gpu.datasets.truncation_alert_share: {said}"


def test_status_json_carries_the_count_and_the_cap() -> None:
    [shown] = HostStatus("gpu", snapshot()).to_json()["datasets"][:1]
    assert (shown["truncated_responses"], shown["max_new_tokens"]) == (123, 4096)
