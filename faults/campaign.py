"""Run scenarios by name, each in its own folder, turning a crash into a reported violation."""

from __future__ import annotations

import importlib
import importlib.util
import time
import traceback
from pathlib import Path
from typing import Protocol

from faults.result import Scale, ScenarioResult

SCENARIOS = (
    "runner_kill", "link_drops", "blackhole", "stop_escalation", "deploy_interrupt", "host_keys",
    "injection", "bad_input", "short_budget", "two_writers", "frozen_writer", "disk_full",
    "state_full", "terminal_text", "demo_hangup", "remote_code", "router_outage",
    "hostile_files", "slow_client", "request_limits", "clock_steps", "export_kill",
    "runner_restarts", "server_restarts", "reboot", "redeploy_cuts", "stop_recording",
    "crash_loop", "loaded_stops", "hostile_peers", "hostile_servers", "hostile_state",
    "hostile_writes", "process_trees", "hostile_answers", "watch_under_fire", "restart_races",
    "operation_crashes", "peer_binaries", "pipeline_outputs",
)  # fmt: skip
"""In the order the report lists them."""

FAULT_CLASSES = ("kills", "links", "resources", "races", "hostile")
"""The packages the scenarios live in, one per class of fault (faults.<class>.<scenario>)."""


class Scenario(Protocol):
    """What each scenario module provides."""

    TITLE: str

    async def run(self, scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
        """Inject the faults, check the invariants, count."""
        ...


async def run_scenario(name: str, scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """One scenario; an exception becomes a violation that names it, never a lost report."""
    module = scenario_module(name)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        result = await module.run(scale, workdir, seed)
    except Exception as exc:  # the report must say what broke, and go on to the next scenario
        result = ScenarioResult(name, module.TITLE, seed)
        result.violate(f"the scenario crashed: {type(exc).__name__}: {exc}")
        result.notes.append("traceback: " + " | ".join(traceback.format_exc().splitlines()[-6:]))
    result.wall_s = time.monotonic() - started
    return result


def scenario_module(name: str) -> Scenario:
    """The module of scenario `name`, in whichever class of fault holds it."""
    for fault_class in FAULT_CLASSES:
        if importlib.util.find_spec(f"faults.{fault_class}.{name}") is not None:
            module: Scenario = importlib.import_module(f"faults.{fault_class}.{name}")
            return module
    raise LookupError(f"no scenario {name} in any of {', '.join(FAULT_CLASSES)}")
