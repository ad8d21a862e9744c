"""At 80x24 every screen shows its title and its main content; at 200x60 the extra room is used.

Issue #30: the events screen cut its "what happened" column (even at 200 columns); the dataset
detail lost its title and its responses table; the log's status line cut the search pattern; the
footer never showed x, X, B or e at any width; the training and drafter panels never appeared
at 80 columns and the jobs table hid rows without saying so; toasts covered a modal's buttons.
Each test reads what the terminal shows (the screen as composited, toasts included).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, DataTable
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

from agent.protocol import (
    DatasetDetail,
    DrafterEvaluation,
    ErrorSummary,
    EvalLevel,
    EventsList,
    JobInfo,
    JobSpec,
    LogChunk,
    ResponseSummary,
    TimelineEvent,
)
from console.link.agent_link import AgentLink
from console.model.consequences import stop_consequences
from console.ui.app import ConsoleApp
from console.ui.messages import SnapshotReceived
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.events import EventsScreen
from console.ui.screens.logs import LogScreen
from console.ui.widgets.key_footer import KeyFooter
from tests.support.fixed_app import show_crowded
from tests.support.sample_snapshot import CROWDED, NOW, SNAPSHOT
from tests.support.screen import eventually, holds, wait_for
from tests.support.shown_app import shown_app

SMALL = (80, 24)
LARGE = (200, 60)
WORDS = " ".join(f"w{i:03}" for i in range(40))
"""A long "what happened": 40 words that must each be readable somewhere on the screen."""
TIMELINE = EventsList((
    TimelineEvent(NOW - 600, "job_started", "inference-B3_math-20261129-134640", "info",
                  "started pid 4242", asked_by="console@laptop"),
    TimelineEvent(NOW - 60, "alert_raised", "B2_ultrachat", "error", WORDS),
))  # fmt: skip
DETAIL = DatasetDetail(
    "B3_math", 200,
    tuple(ResponseSummary(f"math-{i:04}", 100 + i, "stop", 1.5) for i in range(20)),
    {"stop": 180, "length": 20}, tuple(range(0, 1300, 100)), tuple(range(5, 65, 5)),
    tuple(ErrorSummary(f"math-e{i}", "HTTP 500: simulated", False) for i in range(5)),
)  # fmt: skip
EVALUATION = DrafterEvaluation(
    "evaluate-1", "/out", 5.0, "2.12× at concurrency 1, 0.70× at 32: slower at high batch", True,
    (EvalLevel(1, 330.7, 155.7, 2.124, 3.05, 0.29, 0.31, 3.0, 0.52, warm_cache=True),
     EvalLevel(32, 3050.6, 4354.7, 0.7, 2.66, 0.5, 0.6, 2.9, 0.48)),
)  # fmt: skip
MANY_JOBS = tuple(
    JobInfo(f"inference-B{i}-1", "inference", "inference", "running", ("python",), pid=100 + i,
            dataset=f"B{i}_extra", started_at=NOW - 60)
    for i in range(10)
)  # fmt: skip


class TimelineLink:
    """Stands in for the link: answers the events request with TIMELINE."""

    async def call(self, *_: object, **__: object) -> EventsList:
        """The fixed timeline, whatever was asked."""
        return TIMELINE


def screen_text(app: ConsoleApp) -> str:
    """What the terminal shows now, line by line (toasts and docked widgets included)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def on_screen(app: ConsoleApp, widget: Widget) -> Region | None:
    """The part of `widget` the terminal shows (None: none, clipped away or scrolled out)."""
    placed = app.screen._compositor.visible_widgets.get(widget)
    if placed is None:
        return None
    region, clip = placed
    return region.intersection(clip) or None


def lines_of(app: ConsoleApp) -> list[str]:
    return [line.rstrip() for line in screen_text(app).splitlines()]


def crowded_with(**changes: Any) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Shows the crowded host (eight datasets, a training run), with `changes` to its snapshot."""

    async def show(pilot: Pilot[Any]) -> None:
        await show_crowded(pilot)
        shown = dataclasses.replace(CROWDED, **changes)
        pilot.app.post_message(SnapshotReceived("gpu", shown))
        app = cast(ConsoleApp, pilot.app)
        await wait_for(pilot, lambda: app.views["gpu"].snapshot == shown)

    return show


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x60"])
async def test_the_events_say_what_happened_in_full(size: tuple[int, int]) -> None:
    async with shown_app(show_crowded, size) as (app, pilot):
        await app.push_screen(EventsScreen("gpu", cast(AgentLink, TimelineLink())))
        table = app.screen.query_one("#events-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)

        def told_in_full() -> None:
            text = screen_text(app)
            assert "events of the last 24 h" in text
            assert "what happened" in text
            assert "started pid 4242" in text
            assert all(word in text for word in WORDS.split()), text
            header = next(line for line in lines_of(app) if "what happened" in line)
            assert len(header) <= size[0]
            assert table.virtual_size.width <= table.scrollable_content_region.width

        await eventually(pilot, told_in_full)


async def test_at_80x24_the_dataset_detail_keeps_its_title_responses_and_errors() -> None:
    async with shown_app(show_crowded, SMALL) as (app, pilot):
        await app.push_screen(DatasetScreen("gpu", DETAIL, CROWDED.datasets[2]))

        def detail_kept() -> None:
            lines = lines_of(app)
            assert "B3_math · last 200 responses" in lines[0]
            shown_ids = [f"math-{i:04}" for i in range(20) if f"math-{i:04}" in "\n".join(lines)]
            assert len(shown_ids) >= 4, "\n".join(lines)
            assert "math-0019" in shown_ids  # the newest response first
            assert any(line.lstrip().startswith("id") and "tokens" in line for line in lines)
            assert "math-e0: HTTP 500: simulated" in "\n".join(lines)
            assert "Back" in lines[-1]

        await eventually(pilot, detail_kept)


async def test_at_80x24_the_log_status_line_shows_the_whole_search_and_filter() -> None:
    search, needle = r"gen throughput \(token/s\): 7[0-9]{3}\.[0-9]+", "Decode batch|Prefill batch"
    async with shown_app(show_crowded, SMALL) as (app, pilot):
        await app.push_screen(LogScreen("gpu", "sglang"))
        text = "[TP0] Decode batch, #running-req: 64, gen throughput (token/s): 7400.00\n" * 3
        screen = app.screen
        assert isinstance(screen, LogScreen)
        screen.append_chunk(LogChunk("sglang", 0, len(text), text, len(text), 1))
        for key, pattern in (("f", needle), ("slash", search)):
            await pilot.press(key)
            await pilot.press(*pattern)
            await pilot.press("enter")

        def status_whole() -> None:
            lines = lines_of(app)
            status = "".join(line.strip() for line in lines[:3])
            assert f"search: /{search}/" in status, lines[:3]
            assert f"filter: /{needle}/" in status, lines[:3]
            assert "gpu · sglang" in lines[0]
            assert any("gen throughput" in line for line in lines[3:])

        await eventually(pilot, status_whole)


def footer_keys(app: ConsoleApp) -> dict[str, str]:
    footer = app.screen.query_one(KeyFooter)
    return {key.key_display: key.description for key in footer.query(FooterKey)}


async def test_with_room_the_footer_shows_export_report_bench_and_events() -> None:
    async with shown_app(show_crowded, LARGE) as (app, pilot):

        def roomy_footer() -> None:
            keys = footer_keys(app)
            assert {"x", "X", "B", "e"} <= set(keys), keys
            last = lines_of(app)[-1]
            assert all(f" {key} " in f" {last} " for key in ("x", "X", "B", "e")), last

        await eventually(pilot, roomy_footer)


async def test_at_80x24_the_training_and_drafter_panels_are_a_key_away() -> None:
    async with shown_app(crowded_with(evaluation=EVALUATION), SMALL) as (app, pilot):
        await eventually(pilot, lambda: holds("] Panels" in lines_of(app)[-1]))
        assert "step 600/900" not in screen_text(app)
        await pilot.press("right_square_bracket")

        def training_page() -> None:
            text = screen_text(app)
            assert "sglang: step 600/900 · epoch 1 · ETA 30m 00s" in text
            assert "GPU0 97%" in text

        await eventually(pilot, training_page)
        await pilot.press("right_square_bracket")

        def drafter_page() -> None:
            lines = lines_of(app)
            warm = "c=1: 331 tok/s vs 156 2.12× · p50 0.29 s · warm cache"
            assert any(warm in ln for ln in lines), "\n".join(lines)
            accept = "accept 3.05 (3.00 per decode pass) · drafts 52% accepted"
            assert any(ln.strip("│ ").startswith(accept) for ln in lines), "\n".join(lines)

        await eventually(pilot, drafter_page)
        await pilot.press("right_square_bracket")
        await eventually(
            pilot, lambda: holds("hand-runner" in (t := screen_text(app)) and "SGLang" in t)
        )


async def test_at_200x60_every_panel_is_on_screen_and_the_footer_needs_no_page_key() -> None:
    async with shown_app(crowded_with(evaluation=EVALUATION), LARGE) as (app, pilot):

        def all_on_screen() -> None:
            lines = lines_of(app)
            text = "\n".join(lines)
            for shown in ("sglang: step 600/900", "hand-runner", "SGLang", "GPU1 95%"):
                assert shown in text
            assert any("c=32: 3,051 tok/s vs 4,355 0.70× · p50 0.50 s" in line for line in lines)
            assert "accept 2.66 (2.90 per decode pass) · drafts 48% accepted" in text
            assert "]" not in footer_keys(app)

        await eventually(pilot, all_on_screen)


async def test_at_80x24_the_jobs_table_says_how_many_jobs_are_out_of_view() -> None:
    async with shown_app(crowded_with(jobs=MANY_JOBS), SMALL) as (app, pilot):
        table = app.screen.query_one("#jobs", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(MANY_JOBS))
        in_view = table.scrollable_content_region.height - table.header_height
        assert in_view < len(MANY_JOBS)
        more = f"+{len(MANY_JOBS) - in_view} more ↓"
        await eventually(pilot, lambda: holds(more in screen_text(app), screen_text(app)))
        table.focus()
        await pilot.press(*["down"] * len(MANY_JOBS))
        above = f"↑ {len(MANY_JOBS) - in_view} above"
        await eventually(pilot, lambda: holds(above in screen_text(app), screen_text(app)))
        assert "more ↓" not in screen_text(app)


async def test_at_80x24_a_toast_over_a_modal_leaves_its_buttons_uncovered() -> None:
    async with shown_app(show_crowded, SMALL, notifications=True) as (app, pilot):
        spec = JobSpec(("python",), stop_signal="SIGINT", grace_s=60)
        consequences = stop_consequences("gpu", SNAPSHOT, "inference-B3_math-1", spec)
        await app.push_screen(ConfirmScreen("Stop inference?", consequences, "Stop"))
        await wait_for(pilot, lambda: len(app.screen.query(Button)) == 2)
        for n in range(3):
            app.notify(f"gpu: B{n}: a toast long enough to take three or four lines " * 2)
        await wait_for(pilot, lambda: len(app.screen.query(Toast)) == 3)

        def buttons_clear() -> None:
            buttons = [button.region for button in app.screen.query(Button)]
            assert len(buttons) == 2
            toasts = [on_screen(app, toast) for toast in app.screen.query(Toast)]
            assert any(toasts), "no toast on screen"
            for toast in filter(None, toasts):
                assert not any(toast.overlaps(button) for button in buttons), (toast, buttons)
            assert "Cancel" in screen_text(app)
            assert re.search(r"gpu: B\d: a toast", screen_text(app))

        await eventually(pilot, buttons_clear)


async def test_at_80x24_the_drafter_page_shows_every_level_the_slow_one_too() -> None:
    """The panel showed c=1 and c=8, not c=32: the slow level that decides the verdict."""
    three = dataclasses.replace(EVALUATION, levels=(
        EVALUATION.levels[0], EvalLevel(8, 1501.2, 1199.0, 1.25, 2.8, 0.4, 0.45, 2.9, 0.5),
        EVALUATION.levels[1],
    ))  # fmt: skip
    async with shown_app(crowded_with(evaluation=three), SMALL) as (app, pilot):
        await eventually(pilot, lambda: holds("] Panels" in lines_of(app)[-1]))
        await pilot.press("right_square_bracket", "right_square_bracket")

        def every_level() -> None:
            text = screen_text(app)
            for concurrency in (1, 8, 32):
                assert f"c={concurrency}:" in text, text
            assert "c=32: 0.70× · accept 2.66" in text

        await eventually(pilot, every_level)
