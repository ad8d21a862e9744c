"""Fixtures of the end-to-end tests: the demo's folder, and the demo in a tmux window of its own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo_terminal import end_leftovers, kill_leftovers
from tests.support.tmux import Tmux, tmux_server


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A tmux server for the test; afterwards whatever of the demo is left under `tmp_path` ends."""
    try:
        with tmux_server() as server:
            yield server
    finally:
        end_leftovers(tmp_path)  # a failed test must not leave the demo's processes behind


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """The folder a test's demo runs in; afterwards whatever of the demo is left there ends."""
    folder = tmp_path / "demo"
    yield folder
    kill_leftovers(folder)  # a failed test must not leave the demo's processes to the next
    shutil.rmtree(folder, ignore_errors=True)
