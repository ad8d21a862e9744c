"""Processes the agent did not start, shown as external jobs and stoppable the same safe way.

An SGLang server or a runner launched by hand is found by a regex over its command line.
"""

from __future__ import annotations

import os
import re

from agent.host.procfs import all_pids, command_line, process_info, started_at
from agent.jobs.stopper import GroupIdentity, StopTarget, TreeIdentity
from agent.probes.values import is_small_number
from agent.protocol import JobInfo

PREFIX = "ext"


def find_external(patterns: dict[str, str], own_pgids: set[int]) -> tuple[JobInfo, ...]:
    """Every process matching a pattern, outside the agent's own jobs.

    A match whose parent matches too (a server's workers) is left out, unless that parent is a
    shell running it (`bash -c "python -m sglang.launch_server …"`): then the shell is left out
    and the process that serves is the job, its pid the one signalled (the shell's was).
    """
    if not patterns:
        return ()
    compiled = {name: re.compile(pattern) for name, pattern in patterns.items()}
    matches: dict[int, JobInfo] = {}
    parents: dict[int, int] = {}
    for pid in all_pids():
        info = process_info(pid)
        argv = command_line(pid) if info is not None and info.alive else []
        if info is None or not argv or info.pgid in own_pgids or pid == os.getpid():
            continue
        name = next((n for n, rx in compiled.items() if rx.search(" ".join(argv))), None)
        if name is not None:
            parents[pid] = info.ppid
            matches[pid] = JobInfo(
                id=f"{PREFIX}-{pid}-{info.start_ticks}", name=name, kind="external", state="running",
                argv=tuple(argv), pid=pid, pgid=info.pgid, started_at=started_at(info.start_ticks),
                external=True,
            )  # fmt: skip
    wrappers = {
        parents[pid] for pid in matches
        if parents[pid] in matches and is_shell_wrapper(matches[parents[pid]].argv)
    }  # fmt: skip
    return tuple(
        job for pid, job in sorted(matches.items())
        if pid not in wrappers and (parents[pid] not in matches or parents[pid] in wrappers)
    )  # fmt: skip


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


def is_shell_wrapper(argv: tuple[str, ...]) -> bool:
    """`bash -c '…'` and the like: a shell that runs a command line it was given."""
    return bool(argv) and os.path.basename(argv[0]) in SHELLS and "-c" in argv[1:]


def external_target(job_id: str) -> StopTarget | None:
    """The stop target an external job id names, or None if the id is not an external one."""
    parts = job_id.split("-")
    if (
        len(parts) != 3
        or parts[0] != PREFIX
        or not (is_small_number(parts[1]) and is_small_number(parts[2]))
    ):
        return None
    pid, ticks = int(parts[1]), int(parts[2])
    info = process_info(pid)
    if info is not None and info.pgid == pid:
        return GroupIdentity(pid, ((pid, ticks),))
    return TreeIdentity(pid, ticks)
