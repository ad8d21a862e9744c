"""Fixtures for the pipeline jobs: a simulator on loopback, fast by default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.simulator_process import SimulatorProcess, running_simulator


@pytest.fixture
def simulator(tmp_path: Path) -> Iterator[SimulatorProcess]:
    """A fast simulator: short answers at 100x speed, deterministic."""
    with running_simulator(
        tmp_path / "sim",
        "--speed",
        "100",
        "--mean-tokens",
        "120",
        "--sd-tokens",
        "40",
        "--seed",
        "7",
    ) as sim:
        yield sim
