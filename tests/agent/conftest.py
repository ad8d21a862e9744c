"""Fixtures of the agent's tests: a raw connection to a real daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.raw_wire import RawWire


@pytest.fixture
async def raw_agent(state_dir: Path) -> AsyncIterator[RawWire]:
    """`attach` to the daemon of `state_dir` (started for it), in raw bytes; lines up to 4 MiB."""
    wire = await RawWire.open(state_dir, limit=2**22)
    yield wire
    await wire.close()
