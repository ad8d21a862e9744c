"""What the run writing a dataset says about itself: `runner.json`, or else the job's argv.

Any script may write a dataset, so everything here is optional: a runner.json that is missing,
stale or from a dead process simply means "no run is writing this dataset now".
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from agent.host.signals import is_running
from agent.probes.values import is_small_number
from agent.protocol import ApiUsage
from agent.state import read_json

MAX_TEXT_CHARS = 256
MAX_SETTINGS = 16
MAX_SETTING_NAME = 40
MAX_COUNT = 2**62
PID_MAX = 4_194_304
"""Linux's highest possible pid (pid_max's ceiling)."""
FRESH_S = 15.0
"""A runner.json older than this, or from a dead pid, describes a run that is over."""
ACTIVE_STATES = ("starting", "waiting_for_server", "running", "draining", "cancelling")


@dataclass(frozen=True, slots=True)
class RunView:
    """The stop condition and liveness of the run writing a dataset."""

    active: bool
    state: str | None = None
    budget: int | None = None
    max_samples: int | None = None
    in_flight: int = 0
    runner_sha256: str | None = None
    pid: int | None = None
    write_error: str | None = None
    """Why the run stopped when a file could not be written (runner.json's write_error)."""
    write_disk_full: bool = False
    api_usage: ApiUsage | None = None
    """The backend's whole-dataset tallies (re-encoding, cost, rate limits), run over or not."""
    max_new_tokens: int | None = None
    """The cap on each answer's length the run asked for."""
    generation: dict[str, str] = field(default_factory=dict)
    """runner.json's `sampling`, each setting given as short text (None ones left out)."""


def read_runner_status(
    dataset_dir: Path, now: float | None = None, age_s: Callable[[float], float] | None = None
) -> RunView | None:
    """The runner.json of a dataset folder, or None if there is none.

    `age_s` turns its `updated_at` into an age that survives wall-clock steps (the tracker's
    StampAge); without it the age is plain wall time. Fields of the wrong type count as absent.
    """
    record = read_json(dataset_dir / "runner.json")
    if not isinstance(record, dict):
        return None
    now = time.time() if now is None else now
    updated_at = record.get("updated_at")
    fresh = (
        _number(updated_at)
        and (age_s(updated_at) if age_s is not None else now - updated_at) <= FRESH_S
    )
    state = _str(record.get("state"))
    active = state in ACTIVE_STATES and fresh and _alive(record.get("pid"))
    return RunView(
        active=active,
        state=state,
        budget=_int(record.get("budget")),
        max_samples=_int(record.get("max_samples")),
        in_flight=_int(record.get("in_flight")) or 0 if active else 0,
        runner_sha256=_str(record.get("runner_sha256")),
        pid=_int(record.get("pid")),
        **_write_error(record.get("write_error")),
        api_usage=api_usage(record, float(updated_at) if active and _number(updated_at) else None),
        max_new_tokens=_int(record.get("max_new_tokens")),
        generation=generation_settings(record.get("sampling")),
    )


def generation_settings(sampling: object) -> dict[str, str]:
    """Each setting of runner.json's `sampling` as bounded text; a peer's odd value is left out."""
    if not isinstance(sampling, dict):
        return {}
    settings = {}
    for name, value in list(sampling.items())[:MAX_SETTINGS]:
        if not isinstance(name, str) or value is None or value == {}:
            continue
        text = value if isinstance(value, str) else _compact_json(value)
        if text is not None:
            settings[name[:MAX_SETTING_NAME]] = text[:MAX_TEXT_CHARS]
    return settings


def _compact_json(value: object) -> str | None:
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)[: MAX_TEXT_CHARS + 1]
    except (TypeError, ValueError, RecursionError):
        return None


def api_usage(record: dict[str, Any], live_at: float | None) -> ApiUsage | None:
    """runner.json's dataset tallies; None when there is nothing to tell (a native SGLang run).

    `live_at` is the `updated_at` of a live run: its `rate_limited_until_s` (seconds still to
    wait when it wrote) becomes an epoch time; a run that is over is paused for nobody.
    """
    cost = record.get("dataset_cost")
    wait_s = record.get("rate_limited_until_s")
    usage = ApiUsage(
        reencoded_responses=_int(record.get("dataset_reencoded")) or 0,
        reencode_mismatches=_int(record.get("dataset_reencode_mismatches")) or 0,
        cost_credits=float(cost) if _number(cost) and cost >= 0 else 0.0,
        rate_limited=_int(record.get("rate_limited")) or 0,
        paused_until=live_at + wait_s if live_at is not None and _number(wait_s) and wait_s > 0
        else None,
        responses=_int(record.get("responses")) or 0,
    )  # fmt: skip
    return None if replace(usage, responses=0) == ApiUsage() else usage


def _write_error(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    path, errno_name = value.get("path"), value.get("errno")
    text = f"cannot write {path}: {value.get('message')} ({errno_name})"
    return {"write_error": text, "write_disk_full": value.get("disk_full") is True}


def view_from_argv(argv: tuple[str, ...]) -> RunView:
    """What a runner-like command line asks for: `--token-budget`, `--max-samples`, the length cap."""
    return RunView(
        active=True,
        budget=_flag(argv, "--token-budget"),
        max_samples=_flag(argv, "--max-samples"),
        max_new_tokens=_flag(argv, "--max-new-tokens"),
    )


def _flag(argv: tuple[str, ...], name: str) -> int | None:
    for index, part in enumerate(argv):
        if part == name and index + 1 < len(argv):
            return _int(argv[index + 1].replace("_", ""))
        if part.startswith(name + "="):
            return _int(part.split("=", 1)[1].replace("_", ""))
    return None


def _int(value: object) -> int | None:
    """A count from 0 to MAX_COUNT (an int, or a string of ASCII digits), else None."""
    if isinstance(value, str) and is_small_number(value):
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    return None


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and len(value) <= MAX_TEXT_CHARS else None


def _alive(pid: object) -> bool:
    if type(pid) is not int or not 0 < pid <= PID_MAX:
        return False
    return is_running(pid)
