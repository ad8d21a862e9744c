"""The demo's signals, in this process: a console that does not end when asked is not waited for.

A closed terminal once left the console, the agent, the simulator and eight runners running: the
console's loop never ran the exit a signal asked for (its writer thread was blocked on the dead
terminal), and SIGTERM did nothing more. Real signals, sent to this process.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from console.demo.interrupts import SIGNALS, DemoInterrupts


@pytest.fixture
def interrupts() -> Iterator[DemoInterrupts]:
    saved = {signum: signal.getsignal(signum) for signum in (*SIGNALS, signal.SIGCONT)}
    handlers = DemoInterrupts(stuck_after_s=0.3)
    handlers.install()
    try:
        yield handlers
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_a_console_that_does_not_end_when_asked_is_given_up_on(
    interrupts: DemoInterrupts,
) -> None:
    asked, stuck = threading.Event(), threading.Event()
    with interrupts.console(asked.set, stuck.set):
        signal.raise_signal(signal.SIGTERM)
        assert asked.wait(5), "the console was asked to exit"
        assert stuck.wait(5), "and, never ending, it was given up on"
    assert interrupts.exit_code == 128 + signal.SIGTERM


def test_a_console_that_ends_in_time_is_not_given_up_on(interrupts: DemoInterrupts) -> None:
    asked, stuck = threading.Event(), threading.Event()
    with interrupts.console(asked.set, stuck.set):
        signal.raise_signal(signal.SIGHUP)
        assert asked.wait(5)
    assert not stuck.wait(1.0), "it ended within the time it had"
    assert interrupts.exit_code == 128 + signal.SIGHUP
