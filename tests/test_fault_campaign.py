"""The short fault campaign inside `make test`: every scenario at small scale must pass."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from faults.campaign import FAULT_CLASSES, SCENARIOS, run_scenario
from faults.result import Scale
from tests.support.router_process import router_missing


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.slow
async def test_the_short_campaign_scenario_passes(name: str, tmp_path: Path) -> None:
    if name == "router_outage" and (reason := router_missing()) is not None:
        pytest.skip(reason)
    result = await run_scenario(name, Scale(full=False), tmp_path / name, seed=7)
    assert result.faults > 0, "a scenario that injects nothing proves nothing"
    assert result.passed, "\n".join(result.violations + result.notes)


def test_each_scenario_module_of_every_class_of_fault_is_in_the_campaign_once() -> None:
    found = [
        info.name
        for fault_class in FAULT_CLASSES
        for info in pkgutil.iter_modules(importlib.import_module(f"faults.{fault_class}").__path__)
        if not info.name.startswith("_")
    ]
    assert sorted(found) == sorted(SCENARIOS)
