"""The dashboard at narrow widths: the footer keeps `?` and `q`, columns fold by priority, and a
re-sort keeps the selected dataset in view; `h` to a host with no data shows none of another's.

At 80 columns the footer was cut after "v Voca…" (no Help, no Quit); the rate column folded
away with room to spare because the wider overrun column folded after it; and after `o` the
selected row could sort out of the view. `h` to a host that was down kept the previous host's
rows under the new host's header.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey

from console.link.host_connection import LinkState
from console.model.columns import columns_that_fit, content_widths
from console.model.footer_fit import FooterEntry, FooterFit, fit_footer, footer_width
from console.model.formatting import dataset_row
from console.ui.app import ConsoleApp
from console.ui.commands import DASHBOARD_COMMANDS, keys_of
from console.ui.messages import LinkChanged, SnapshotReceived
from console.ui.widgets.datasets_table import COLUMNS, DatasetsTable
from console.ui.widgets.key_footer import KeyFooter
from tests.support.fixed_app import never, show_crowded, show_fixed
from tests.support.sample_snapshot import CROWDED, NOW, ROWS, with_many_rows
from tests.support.screen import wait_for
from tests.support.shown_app import shown_app

TABLE_CHROME = 2
"""The datasets table's border: the columns get the terminal's width less this."""
ALWAYS = ["dataset", "tokens", "ETA", "status"]


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        # A finished dataset's overrun has no time to go, so it is narrow enough to stay; the
        # ETA's range folds first, so the ETA's width no longer costs the overrun.
        (80, ["dataset", "tokens", "rate", "ETA", "overrun", "status"]),
        (100, ["dataset", "budget", "tokens", "rate", "ETA", "overrun", "status"]),
        (120, ["dataset", "responses", "budget", "tokens", "rate", "ETA", "overrun", "status"]),
    ],
)
def test_the_datasets_columns_fold_lowest_priority_first(width: int, expected: list[str]) -> None:
    rows = [dataset_row(progress) for progress in CROWDED.datasets]
    cells = [(r.name, r.responses, r.budget_bar, r.tokens, r.rate, r.eta, r.eta_range, r.overrun,
              r.status) for r in rows]  # fmt: skip
    widths = content_widths(COLUMNS, cells)
    shown = columns_that_fit(widths, width - TABLE_CHROME, DatasetsTable.FOLD_ORDER)
    assert shown == expected
    assert set(ALWAYS) <= set(shown)


def test_a_narrow_column_that_fits_is_not_lost_to_a_wide_one_folded_after_it() -> None:
    widths = {"name": 10, "small": 3, "wide": 20, "status": 8}
    shown = columns_that_fit(widths, 30, fold_order=("small", "wide"))
    assert shown == ["name", "small", "status"]
    assert columns_that_fit(widths, 60, fold_order=("small", "wide")) == list(widths)
    assert columns_that_fit(widths, 24, fold_order=("small", "wide")) == ["name", "status"]


def test_the_footer_gets_tighter_before_it_drops_keys() -> None:
    entries = [FooterEntry("g", "Generate", "Gen", rank=1), FooterEntry("v", "Vocab map", rank=4),
               FooterEntry("?", "Help", rank=0)]  # fmt: skip
    roomy = fit_footer(entries, 100)
    assert roomy == FooterFit(compact=False, words=("Generate", "Vocab map", "Help"))
    assert footer_width(list(zip("gv?", roomy.words, strict=True)), compact=False) == len(
        " g Generate  v Vocab map  ? Help "
    )
    assert fit_footer(entries, 29) == FooterFit(compact=False, words=("Gen", "Vocab map", "Help"))
    assert fit_footer(entries, 26) == FooterFit(compact=True, words=("Gen", "Vocab map", "Help"))
    tightest = fit_footer(entries, 13)
    assert tightest == FooterFit(compact=True, words=("Gen", None, "Help"))
    assert footer_width(list(zip("gv?", tightest.words, strict=True)), compact=True) == len(
        "g Gen ? Help "
    )


def test_keys_leave_a_narrow_footer_by_rank_and_the_room_left_goes_to_full_words() -> None:
    entries = [FooterEntry("x", "Export data", "Export", rank=4),
               FooterEntry("R", "Kill+deploy+restart", "Redeploy", rank=1),
               FooterEntry("e", "Events", rank=3), FooterEntry("q", "Quit", rank=0)]  # fmt: skip
    assert fit_footer(entries, 30) == FooterFit(True, (None, "Redeploy", "Events", "Quit"))
    assert fit_footer(entries, 8) == FooterFit(True, (None, None, None, "Quit"))
    room_for_one = fit_footer(entries, 51)  # every key, and room for one full word: R's, not x's
    assert room_for_one == FooterFit(False, ("Export", "Kill+deploy+restart", "Events", "Quit"))
    widths = range(8, 80)
    kept = [{e.key for e, w in zip(entries, fit_footer(entries, n).words, strict=True) if w}
            for n in widths]  # fmt: skip
    assert all(narrower <= wider for narrower, wider in zip(kept, kept[1:], strict=False))


async def footer_keys(size: tuple[int, int]) -> tuple[KeyFooter, dict[str, str]]:
    async with shown_app(show_crowded, size) as (app, pilot):
        footer = app.screen.query_one(KeyFooter)
        await wait_for(pilot, lambda: bool(footer.query(FooterKey)))
        keys = {key.key_display: key.description for key in footer.query(FooterKey)}
        assert footer.virtual_size.width <= footer.size.width, f"the footer is cut: {keys}"
        return footer, keys


async def test_at_80_columns_the_footer_fits_and_keeps_help_and_quit() -> None:
    _, keys = await footer_keys((80, 24))
    assert {"?", "q", "g", "l", "k", "R", "d", "h"} <= set(keys)
    assert keys["R"] == "Redeploy"


async def test_with_room_the_footer_shows_every_key_in_full() -> None:
    _, keys = await footer_keys((200, 60))
    assert keys["R"] == "Kill+deploy+restart"
    assert {"v", "t", "s", "p"} <= set(keys)


async def test_at_80_columns_help_lists_every_key_in_full() -> None:
    async with shown_app(show_fixed, (80, 24)) as (app, pilot):
        dashboard = app.screen
        await pilot.press("question_mark")
        table = app.screen.query_one("#help-table", DataTable)
        listed = {str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert {c.description for c in keys_of(dashboard)} <= listed
        assert {c.description for c in DASHBOARD_COMMANDS} <= listed


async def test_after_a_re_sort_the_selected_dataset_stays_selected_and_in_view() -> None:
    async with shown_app(show_fixed, (80, 24)) as (app, pilot):
        app.post_message(SnapshotReceived("gpu", with_many_rows(NOW)))
        table = app.screen.query_one(DatasetsTable)
        await wait_for(pilot, lambda: table.row_count == ROWS)
        table.focus()
        table.move_cursor(row=2, animate=False)
        await pilot.pause()
        assert table.selected_name == "D02"
        await pilot.press("o")  # by tokens, most first: D02 goes to the end
        app.post_message(SnapshotReceived("gpu", with_many_rows(NOW + 1)))
        await wait_for(pilot, lambda: str(table.get_row_at(0)[0]) == "D39")
        await pilot.pause(0.3)
        assert table.selected_name == "D02"
        assert table.cursor_row == ROWS - 3
        in_view = table.scrollable_content_region.height - table.header_height
        assert table.scroll_y <= table.cursor_row < table.scroll_y + in_view


async def test_h_to_a_host_without_data_shows_none_of_the_previous_hosts_rows() -> None:
    app = ConsoleApp({"gpu": never, "spare": never}, clock=lambda: NOW, monotonic=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_fixed(pilot)
        app.post_message(LinkChanged(LinkState("spare", "down", since=NOW)))
        datasets, jobs = (
            app.screen.query_one("#datasets", DataTable),
            app.screen.query_one("#jobs", DataTable),
        )
        await wait_for(pilot, lambda: datasets.row_count > 0)
        await pilot.press("h")
        await wait_for(pilot, lambda: app.current == "spare")
        await pilot.pause(0.3)
        assert (datasets.row_count, jobs.row_count) == (0, 0)
        assert "no data from spare" in str(datasets.border_subtitle)


def test_at_80_columns_the_overrun_of_a_run_heading_past_its_budget_stays_beside_its_eta() -> None:
    """The overrun column folded whenever the ETA showed a range, even on that dataset."""
    from agent.protocol import DatasetProgress

    heading = DatasetProgress(
        "B3_math", 1200, 507, 31_707, 15_000, tokens_per_s=720.0, eta_s=243.0, eta_low_s=196.0,
        eta_high_s=263.0, projected_tokens=207_235, projected_overrun_tokens=192_235,
        projected_overrun_hours=243.0 / 3600, status="over_budget", writer_active=True,
    )  # fmt: skip
    rows = [dataset_row(progress) for progress in (*CROWDED.datasets, heading)]
    cells = [(r.name, r.responses, r.budget_bar, r.tokens, r.rate, r.eta, r.eta_range, r.overrun,
              r.status) for r in rows]  # fmt: skip
    shown = columns_that_fit(content_widths(COLUMNS, cells), 80 - TABLE_CHROME,
                             DatasetsTable.FOLD_ORDER)  # fmt: skip
    assert "overrun" in shown
    assert "range" not in shown
    assert rows[-1].overrun == "+192.2K (4m 03s)"
    assert (rows[-1].eta, rows[-1].eta_range) == ("4m 03s", "3m 16s–4m 23s")
