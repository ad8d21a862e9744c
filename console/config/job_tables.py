"""`[hosts.NAME.jobs.JOB]`: a job's argv, kind, stop signal, graces, restart policy and limits."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from agent.protocol import (
    MAX_NODES,
    JobSpec,
    RestartPolicy,
    StopSignal,
    field_range,
    in_range,
    show_number,
)
from console.config.reader import TableReader, join_key

_JOB_KINDS = {
    "inference", "server", "vocab", "hidden_states", "train", "command",
    "export", "evaluate", "drafter_export", "drafter_server",
}  # fmt: skip
_SIGNALS: dict[str, StopSignal] = {name: name for name in typing.get_args(StopSignal)}


def job_table(reader: TableReader, jobs: Mapping[str, Any], name: str, where: str) -> JobSpec:
    """`[hosts.NAME.jobs.JOB]`, checked: argv a list of strings, a known kind and signal."""
    table = reader.table(jobs, name, where)
    where = f"{where}.{name}"
    reader.only(table, where, {"argv", "kind", "cwd", "env", "gpu", "per_dataset", "stop_signal",
                               "grace_s", "term_grace_s", "stop_after_peak_evals",
                               "output_quota_gib", "nodes",
                               *_RESTART_KEYS})  # fmt: skip
    argv = reader.optional(table, "argv", where, list, "a list of strings (no shell string)")
    if not argv or not all(isinstance(part, str) for part in argv):
        raise reader.error(f"{where}.argv", f"got {argv!r}", "a non-empty list of strings")
    kind = reader.text(table, "kind", where, "command")
    if kind not in _JOB_KINDS:
        raise reader.error(
            f"{where}.kind", f"got {kind!r}", "one of " + ", ".join(sorted(_JOB_KINDS))
        )
    stop_signal = reader.text(table, "stop_signal", where, "SIGTERM")
    if stop_signal not in _SIGNALS:
        raise reader.error(
            f"{where}.stop_signal", f"got {stop_signal!r}", "one of " + ", ".join(sorted(_SIGNALS))
        )
    env = reader.table(table, "env", where, required=False)
    restart = _restart(reader, table, where)
    return JobSpec(
        argv=tuple(argv),
        kind=kind,
        cwd=reader.optional(table, "cwd", where, str, "a folder path"),
        env={key: reader.text(env, key, f"{where}.env") for key in env},
        gpu=bool(reader.optional(table, "gpu", where, bool, "true or false")),
        per_dataset=bool(reader.optional(table, "per_dataset", where, bool, "true or false")),
        stop_signal=_SIGNALS[stop_signal],
        grace_s=reader.seconds(table, "grace_s", where, 30.0, JobSpec),
        term_grace_s=reader.seconds(table, "term_grace_s", where, 10.0, JobSpec),
        stop_after_peak_evals=_peak_evals(reader, table, where),
        output_quota_bytes=_quota(reader, table, where),
        nodes=_nodes(reader, table, where, restart["restart"]),
        **restart,
    )


def _nodes(
    reader: TableReader, table: Mapping[str, Any], where: str, restart: str
) -> tuple[str, ...]:
    """`nodes`: the hosts a job spans in node-rank order, two or more, each once; or none.

    Checked here for its form; that each is a host defining this job with the same list is
    checked once every host is read (console/config/node_jobs.py).
    """
    nodes = reader.optional(table, "nodes", where, list, "a list of host names")
    if nodes is None:
        return ()
    key = join_key(where, "nodes")
    names = [n for n in nodes if isinstance(n, str) and n]
    if (
        len(names) != len(nodes)
        or len(set(names)) != len(names)
        or not 2 <= len(names) <= MAX_NODES
    ):
        raise reader.error(key, f"got {nodes!r}", (
            f"two to {MAX_NODES:,} host names from [hosts], each once, in node-rank order"
        ))  # fmt: skip
    if table.get("per_dataset"):
        raise reader.error(key, "set on a per-dataset job", "nodes only on a job that runs once")
    if restart != "no":
        raise reader.error(join_key(where, "restart"), f"got {restart!r} on a job across boxes", (
            '"no": torchrun restarts its own workers (--max-restarts), and a box\'s part '
            "restarted alone would wait for a rendezvous the others have left"
        ))  # fmt: skip
    return tuple(names)


def _peak_evals(reader: TableReader, table: Mapping[str, Any], where: str) -> int | None:
    """`stop_after_peak_evals`: a whole number of evaluations, or unset."""
    count = reader.optional(table, "stop_after_peak_evals", where, int, "a number of evaluations")
    if count is not None:
        reader.in_range(count, join_key(where, "stop_after_peak_evals"), JobSpec, "evaluations")
    return count


def _quota(reader: TableReader, table: Mapping[str, Any], where: str) -> int | None:
    """`output_quota_gib`: the most a hidden-states job's output folder may hold, in bytes."""
    if "output_quota_gib" not in table:
        return None
    gib = reader.seconds(table, "output_quota_gib", where, 0.0)
    if not in_range(JobSpec, "output_quota_bytes", gib * 2**30):  # 0, or inf for 1e300
        _, high = field_range(JobSpec, "output_quota_bytes")
        expected = f"a size in GiB above 0 and up to {show_number(high / 2**30)}"
        raise reader.error(join_key(where, "output_quota_gib"), f"got {gib:g}", expected)
    return max(1, round(gib * 2**30))


_RESTART_KEYS = ("restart", "max_restarts", "restart_window_s", "restart_delay_s")
_RESTART_POLICIES: dict[str, RestartPolicy] = {"no": "no", "on-failure": "on-failure"}


def _restart(reader: TableReader, table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The job's restart policy: restart = "no" | "on-failure", its cap, window and back-off."""
    policy = reader.text(table, "restart", where, "no")
    if policy not in _RESTART_POLICIES:
        raise reader.error(f"{where}.restart", f"got {policy!r}", 'one of "no", "on-failure"')
    most = reader.optional(table, "max_restarts", where, int, "a whole number of restarts")
    if most is not None:
        reader.in_range(most, join_key(where, "max_restarts"), JobSpec, "a number of restarts")
    return {
        "restart": _RESTART_POLICIES[policy], "max_restarts": 5 if most is None else most,
        "restart_window_s": reader.seconds(table, "restart_window_s", where, 3600.0, JobSpec),
        "restart_delay_s": reader.seconds(table, "restart_delay_s", where, 10.0, JobSpec),
    }  # fmt: skip
