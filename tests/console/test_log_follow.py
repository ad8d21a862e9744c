"""Following a log means its newest lines are on screen, from the first chunk on.

The log view said "following · 1,371 lines" and showed lines ten minutes old until End.
"""

from __future__ import annotations

from textual.app import App
from textual.widgets import Log

from agent.protocol import JobInfo, LogChunk
from console.ui.actions.views import log_to_open
from console.ui.screens.logs import LogScreen
from console.ui.signals import ConsoleSignals

LINES = 600


class LogApp(App[None]):
    """Just enough of the console to show one log screen."""

    def __init__(self) -> None:
        super().__init__()
        self.signals = ConsoleSignals(self)

    async def on_mount(self) -> None:
        screen = LogScreen("gpu", "sglang")
        await self.push_screen(screen)
        screen.append_chunk(chunk(0, LINES))  # the backlog comes as the screen opens


def chunk(first: int, count: int, start: int = 0) -> LogChunk:
    text = "".join(
        f"[2026-12-04 10:{i // 60:02}:{i % 60:02}] line {i}\n" for i in range(first, first + count)
    )
    return LogChunk("sglang", start, start + len(text), text, start + len(text), 7)


def at_the_end(log: Log) -> bool:
    return log.max_scroll_y > 0 and log.scroll_offset.y == log.max_scroll_y


async def test_the_first_backlog_and_each_new_chunk_show_the_newest_lines() -> None:
    app = LogApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, LogScreen)
        await pilot.pause(0.3)
        log = screen.query_one(Log)
        assert at_the_end(log), (log.scroll_offset.y, log.max_scroll_y)
        log.scroll_to(y=0, animate=False, immediate=True)  # a wheel, a jump, a redraw
        screen.append_chunk(chunk(LINES, 50, 1))
        await pilot.pause(0.3)
        assert at_the_end(log), (log.scroll_offset.y, log.max_scroll_y)
        assert log.lines[-1].endswith(f"line {LINES + 49}")


async def test_following_again_after_a_pause_shows_the_newest_lines() -> None:
    app = LogApp()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, LogScreen)
        await pilot.pause(0.3)
        await pilot.press("space")  # pause
        screen.query_one(Log).scroll_to(y=10, animate=False, immediate=True)
        screen.append_chunk(chunk(LINES, 50, 1))
        await pilot.press("space")  # follow again
        await pilot.pause(0.3)
        assert at_the_end(screen.query_one(Log))


SERVER = JobInfo("sglang-1", "sglang", "server", "running", ("python", "-m", "sglang"))
RUNNER = JobInfo("inference-B1", "inference", "inference", "running", ("python",), dataset="B1")


def test_l_on_a_server_job_opens_sglangs_own_log_when_one_is_configured() -> None:
    """In the demo `l` on the sglang row showed the job's one launch line."""
    jobs = (SERVER, RUNNER)
    assert log_to_open("sglang-1", jobs, has_server=True, sglang_log=True) == "sglang"
    assert log_to_open("sglang-1", jobs, has_server=True, sglang_log=False) == "job:sglang-1"
    assert log_to_open("inference-B1", jobs, has_server=True, sglang_log=True) == "job:inference-B1"
    assert log_to_open(None, jobs, has_server=True, sglang_log=True) == "sglang"
    assert log_to_open(None, (), has_server=False, sglang_log=False) == "agent"
