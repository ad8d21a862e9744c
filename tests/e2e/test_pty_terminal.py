"""The pty harness itself: a program that dies before its marker is reported with its exit and
its last words (CI once reported only "never saw b'stop server'" for a console that had died)."""

from __future__ import annotations

import sys
from contextlib import closing

import pytest

from tests.support.terminal import MarkerNotSeenError, PtyTerminal

CRASH = (
    "import sys; sys.stdout.write('\\x1b[?1049hthe screen\\x1b[?1049l'); sys.stdout.flush(); "
    "raise RuntimeError('no nodes match #redeploy-facts \\x1b[31m')"
)


def test_a_program_that_ends_first_is_named_with_its_exit_and_last_words() -> None:
    terminal = PtyTerminal([sys.executable, "-c", CRASH], {})
    with closing(terminal), pytest.raises(MarkerNotSeenError) as raised:
        terminal.wait_for(rb"stop server", timeout_s=600)
    message = str(raised.value)
    assert message.startswith("the program closed the terminal (exit code 1) before writing")
    assert "RuntimeError: no nodes match #redeploy-facts" in message.splitlines()[0]
    assert "the screen" not in message  # what it drew on its screen is not its last words
    assert "\x1b" not in message  # a control sequence in them is shown, never sent
