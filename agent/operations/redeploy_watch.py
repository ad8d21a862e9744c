"""The redeploy's last step: how the new run went, said as soon as it can be said.

The watch ends the moment the new run reports the new runner code, or ends: exit 0 is a success
with its reason (a run restarted with its budget already met has nothing to generate and exits at
once: that is the redeploy doing its job, not a failure), any other end a failure naming its exit
code. Only a run that neither reports nor ends within WATCH_S is settled by the clock. The
runner's own words (runner.json) are read through the one bounded reader, and believed only when
they carry the new run's pid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.protocol import LIVE_JOB_STATES, DatasetProgress, JobInfo
from agent.state import read_json

WATCH_S = 180.0
"""How long the new run has to show it runs the new code before the redeploy settles."""
MAX_FAILURE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Verdict:
    """How the new run went: `good` keeps the new code, else the redeploy rolls back."""

    good: bool
    detail: str
    ended: bool = False
    """The new run is over (it exited, failed or was stopped) rather than running."""


def settled(
    job: JobInfo | None, dataset: DatasetProgress | None, expected: str | None,
    run_record: Mapping[str, Any] | None, *, timed_out: bool,
) -> Verdict | None:  # fmt: skip
    """The verdict once the watch can give one; None while it cannot yet.

    `expected` is the runner code the new run should report (None: not a runner, running is
    enough); `run_record` the dataset's runner.json, whoever wrote it.
    """
    if job is None:
        return Verdict(False, "the new run is gone from the records") if timed_out else None
    if job.state not in LIVE_JOB_STATES:
        return _ended(job, _own_record(job, run_record))
    reported = dataset is not None and dataset.writer_active and dataset.runner_sha256 == expected
    if job.state == "running" and (expected is None or reported):
        said = " and reporting the new runner code" if expected else ""
        where = (
            f"; resumed at {dataset.responses:,} responses, {dataset.tokens:,} tokens"
            if dataset is not None
            else ""
        )
        return Verdict(True, f"running{said}{where}")
    if timed_out:
        return Verdict(True, f"running, though it has not reported its code within {WATCH_S:g} s")
    return None


def read_run_record(datasets_root: str, dataset: str | None) -> Mapping[str, Any] | None:
    """The dataset's runner.json, or None (no dataset, no file, or not a JSON object); blocking."""
    if not dataset or not datasets_root:
        return None
    record = read_json(Path(datasets_root) / dataset / "runner.json")
    return record if isinstance(record, dict) else None


def ending(job: JobInfo) -> str:
    """A job's end in short: "failed, exit 1", "killed, SIGKILL"."""
    code = f", exit {job.exit_code}" if job.exit_code is not None else ""
    signal_name = f", {job.exit_signal}" if job.exit_signal else ""
    return f"{job.state}{code}{signal_name}"


def _ended(job: JobInfo, record: Mapping[str, Any] | None) -> Verdict:
    """The verdict on a new run that is over."""
    if job.state == "exited":
        return Verdict(True, f"the new run ended with exit 0: {exit_reason(record)}", ended=True)
    if job.state == "stopped":  # someone stopped it on purpose: that is not undone
        return Verdict(
            True, "the new run was stopped on request before it reported its code", ended=True
        )
    failure = _text(record.get("failure")) if record is not None else ""
    said = f": {failure}" if failure else ""
    return Verdict(
        False, f"the new run {ending(job)}{said}; see its log ({job.log_path})", ended=True
    )


def exit_reason(record: Mapping[str, Any] | None) -> str:
    """Why a run that exited 0 stopped, in the runner's own terms where it left them."""
    reason = record.get("stop_reason") if record is not None else None
    new = _count(record, "completed")
    if reason == "budget":
        figures = f" ({_count(record, 'tokens'):,} of {_count(record, 'budget'):,} tokens)"
        if not new:
            return f"budget already met{figures}: nothing to generate"
        return f"budget met{figures} after {new:,} more response(s)"
    if reason == "exhausted":
        if not new:
            return "every prompt already has its response: nothing to generate"
        return f"every prompt answered, {new:,} of them by this run"
    return "it had nothing left to do (its log says more)"


def _own_record(job: JobInfo, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """`record` if the new run wrote it (its pid), else None: an older run's words are not its."""
    if record is None or job.pid is None or record.get("pid") != job.pid:
        return None
    return record


def _count(record: Mapping[str, Any] | None, key: str) -> int:
    value = record.get(key) if record is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _text(value: object) -> str:
    if not isinstance(value, str):
        return ""
    line = value.strip().splitlines()[0] if value.strip() else ""
    return line if len(line) <= MAX_FAILURE_CHARS else line[: MAX_FAILURE_CHARS - 1] + "…"
