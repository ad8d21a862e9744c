"""An OpenAI-compatible backend's tallies on screen: record shares in the dataset detail, and a
hosted API's rate-limit state and spend in the server panel; nothing for a native SGLang run."""

from __future__ import annotations

from dataclasses import replace

from textual.app import App, ComposeResult
from textual.widgets import Static

from agent.protocol import ApiUsage, DatasetDetail, DatasetProgress, ServerStats
from console.model.api_usage_view import hosted_lines, record_shares_line
from console.model.formatting import window_rates_line
from console.ui.screens.dataset import DatasetScreen
from console.ui.widgets.server_panel import ServerPanel

REENCODED = ApiUsage(25, 5, 0.0125, responses=100)
NOW = 1_700_000_000.0


def dataset(name: str, usage: ApiUsage | None) -> DatasetProgress:
    return DatasetProgress(name, 10, 4, 4000, None, api_usage=usage)


def test_the_record_shares_line_gives_exact_reencoded_mismatches_and_cost() -> None:
    line = record_shares_line(REENCODED)
    assert line is not None
    assert "75.0% exact, 25.0% re-encoded (25)" in line
    assert "20.0% differ in length" in line
    assert "cost so far $0.0125" in line


def test_a_free_run_of_exact_ids_has_no_line() -> None:
    assert record_shares_line(None) is None
    assert record_shares_line(ApiUsage(rate_limited=3, responses=100)) is None
    assert record_shares_line(ApiUsage(cost_credits=2.5, responses=10)) == "cost so far $2.50"


def test_hosted_lines_sum_spend_and_say_how_long_the_pause_lasts() -> None:
    paused = ApiUsage(cost_credits=1.5, rate_limited=4, paused_until=NOW + 12)
    lines = hosted_lines([dataset("a", REENCODED), dataset("b", paused), dataset("c", None)], NOW)
    assert lines == [
        "rate limit: 4 × 429 this run · paused for 12 s more",
        "spend so far $1.51 over 2 dataset(s)",
    ]
    assert hosted_lines([dataset("b", paused)], NOW + 13)[0].endswith("not paused")


class ScreenApp(App[None]):
    def __init__(self, detail: DatasetDetail, progress: DatasetProgress | None = None) -> None:
        super().__init__()
        self.detail = detail
        self.progress = progress

    async def on_mount(self) -> None:
        await self.push_screen(DatasetScreen("gpu", self.detail, self.progress))


def detail(usage: ApiUsage | None) -> DatasetDetail:
    return DatasetDetail("B1", 0, (), {}, (), (), (), usage)


async def test_the_dataset_detail_shows_the_shares_only_when_there_are_some() -> None:
    for usage, shown in ((REENCODED, True), (None, False)):
        app = ScreenApp(detail(usage))
        async with app.run_test() as pilot:
            await pilot.pause()
            found = app.screen.query("#dataset-api-usage")
            assert bool(found) is shown
            if shown:
                assert "25.0% re-encoded" in str(found.only_one(Static).render())


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ServerPanel()


async def test_the_server_panel_shows_a_hosted_apis_rate_limits_and_spend() -> None:
    app = PanelApp()
    async with app.run_test() as pilot:
        panel = app.query_one(ServerPanel)
        hosted = ServerStats("https://api.example", True, "hosted API", "m", hosted=True)
        panel.show(hosted, [], (dataset("a", REENCODED),), NOW)
        await pilot.pause()
        text = str(app.query_one("#server-text", Static).render())
        assert text.startswith("hosted API https://api.example: ")
        assert "spend so far $0.0125 over 1 dataset(s)" in text
        panel.show(ServerStats("http://s", True, "", "m"), [], (dataset("a", REENCODED),), NOW)
        await pilot.pause()
        assert "spend" not in str(app.query_one("#server-text", Static).render())


def test_the_rates_line_gives_every_window_the_agent_sent() -> None:
    progress = replace(dataset("B1", None), tokens_per_s_by_window=(1500.0, None, 0.0, 950.0))
    assert (
        window_rates_line(progress) == "tokens/s over 1 min 1.5K · 5 min — · 15 min 0 · 60 min 950"
    )
    assert window_rates_line(dataset("B1", None)) is None
    assert window_rates_line(None) is None


async def test_the_dataset_detail_shows_the_hours_rate_beside_the_shorter_ones() -> None:
    rates = (60.0, 300.0, 900.0, 3600.0)
    app = ScreenApp(detail(None), replace(dataset("B1", None), tokens_per_s_by_window=rates))
    async with app.run_test() as pilot:
        await pilot.pause()
        line = str(app.screen.query_one("#dataset-rates", Static).render())
        assert "1 min 60 · 5 min 300 · 15 min 900 · 60 min 3.6K" in line
