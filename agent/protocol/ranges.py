"""The one table of what each numeric field may hold, for both sides of the wire.

The agent refuses a request whose field is out of its range (agent/serving/limits.py), and the
console checks the config it reads against the same table, naming the config key: a value the
console accepted and the agent refused at hello (a budget of 10**30, stall_after_s 0.5) made
every command on that host fail, naming a wire field nobody had written. Bounds are inclusive
and keyed by dataclass and field, so they hold wherever that type travels.
"""

from __future__ import annotations

from agent.protocol.audit import AuditParams
from agent.protocol.config import DatasetsConfig, JobSpec
from agent.protocol.datasets import DetailParams
from agent.protocol.files import InstallParams
from agent.protocol.handshake import WatchParams
from agent.protocol.jobs import NodePart
from agent.protocol.logs import LogReadParams
from agent.protocol.operations import DraftSetting, StagedFile
from agent.protocol.timeline import EventsParams

MAX_INT = 2**63 - 1
"""Numbers without a range of their own must still fit in 64 bits."""
MAX_LOG_READ_BYTES = 1024 * 1024
DAY_S = 86400.0
MAX_NODES = 1024
"""The most boxes one job may span (SpecForge's users train on 16 nodes of 8 GPUs)."""

RANGES: dict[tuple[type, str], tuple[float, float]] = {
    (WatchParams, "interval_s"): (0.1, 3600.0),
    (LogReadParams, "max_bytes"): (1, MAX_LOG_READ_BYTES),
    (DetailParams, "recent"): (1, 1000),
    (AuditParams, "limit"): (1, 10_000),
    (EventsParams, "since_s"): (0.0, 366 * DAY_S),
    (EventsParams, "limit"): (1, 10_000),
    (InstallParams, "mode"): (0, 0o7777),
    (StagedFile, "mode"): (0, 0o7777),
    (DatasetsConfig, "budget"): (0, 2**62),
    (DatasetsConfig, "budgets"): (0, 2**62),
    (DatasetsConfig, "stall_after_s"): (1.0, 365 * DAY_S),
    (DatasetsConfig, "stall_guard_s"): (1.0, 365 * DAY_S),
    (DatasetsConfig, "overrun_alert_share"): (0.0, 100.0),
    (DatasetsConfig, "low_disk_floor_bytes"): (0, 2**62),
    (DatasetsConfig, "truncation_alert_share"): (0.0, 1.0),
    (JobSpec, "grace_s"): (0.0, 7 * DAY_S),
    (JobSpec, "term_grace_s"): (0.0, 7 * DAY_S),
    (JobSpec, "max_restarts"): (0, 1000),
    (JobSpec, "restart_window_s"): (1.0, 30 * DAY_S),
    (JobSpec, "restart_delay_s"): (0.0, DAY_S),
    (JobSpec, "stop_after_peak_evals"): (1, 1000),
    (JobSpec, "output_quota_bytes"): (1, 2**62),
    (DraftSetting, "steps"): (1, 64),
    (DraftSetting, "topk"): (1, 64),
    (DraftSetting, "draft_tokens"): (2, 256),
    (DraftSetting, "speculative_tokens"): (1, 64),
    (NodePart, "rank"): (0, MAX_NODES - 1),
    (NodePart, "nnodes"): (2, MAX_NODES),
}
"""Inclusive bounds of numeric fields (of each value, for a dict field)."""


def field_range(owner: type, field: str) -> tuple[float, float]:
    """The bounds of `owner.field`: its own, or those of a 64-bit integer."""
    return RANGES.get((owner, field), (-MAX_INT - 1, MAX_INT))


def in_range(owner: type, field: str, value: float) -> bool:
    """True if `value` is a finite number within the bounds of `owner.field`."""
    low, high = field_range(owner, field)
    return low <= value <= high


def range_text(owner: type, field: str) -> str:
    """`from 1 to 31,536,000`: the bounds of `owner.field`, for messages."""
    low, high = field_range(owner, field)
    return f"from {show_number(low)} to {show_number(high)}"


def show_number(number: float) -> str:
    """A number as a person reads it: digits grouped, or how many digits for a huge one."""
    if isinstance(number, int) and abs(number) >= 10**30:
        return f"a number of {len(str(abs(number))):,} digits"
    if isinstance(number, int) or number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:g}"
