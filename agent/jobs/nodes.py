"""A job that spans boxes: each box's part, checked, filled into its argv and kept in job.json.

Only the console reaches every box, so only it starts such a job: one launch per box, each with
its node rank and the same rendezvous id, which torchrun's c10d rendezvous joins. An agent asked
for one part alone, or for a part that does not match its config, refuses with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agent.jobs.spec import SpecError
from agent.protocol import MAX_NODES, JobSpec, NodePart

NODE_PLACEHOLDERS = ("node_rank", "nnodes", "rdzv_id")
RDZV_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a rendezvous id may be: a name torchrun takes and a log line can show as it is."""


def node_values(name: str, spec: JobSpec, node: NodePart | None) -> dict[str, str | None]:
    """{node_rank}, {nnodes} and {rdzv_id} for this launch, or a SpecError saying what is wrong."""
    if node is None:
        if spec.nodes:
            raise SpecError(
                f"job {name} spans {len(spec.nodes)} boxes ({', '.join(spec.nodes)}): only the "
                f"console starts it, on every box at once (`eagle-console start HOST {name}`, "
                "or t in the dashboard)"
            )
        return dict.fromkeys(NODE_PLACEHOLDERS)
    if not spec.nodes:
        raise SpecError(
            f"job {name} runs on one box (its config names no nodes), yet a node's part was "
            "asked for: the console's config and this box's differ; apply the config again"
        )
    if node.hosts and node.hosts != spec.nodes:
        raise SpecError(
            f"job {name}: asked for across {', '.join(node.hosts)}, but its config spans "
            f"{', '.join(spec.nodes)}; apply the config again"
        )
    if node.nnodes != len(spec.nodes) or not 0 <= node.rank < node.nnodes:
        raise SpecError(
            f"job {name}: node {node.rank} of {node.nnodes} asked for, but its config spans "
            f"{len(spec.nodes)} boxes ({', '.join(spec.nodes)}); apply the config again"
        )
    if RDZV_ID.fullmatch(node.rdzv_id) is None:
        raise SpecError(
            f"job {name}: rendezvous id {node.rdzv_id!r} is not a plain name (letters, digits, "
            "'_', '.', '-'; at most 64)"
        )
    return {"node_rank": str(node.rank), "nnodes": str(node.nnodes), "rdzv_id": node.rdzv_id}


def node_record(node: NodePart | None) -> dict[str, Any] | None:
    """The part as job.json keeps it."""
    if node is None:
        return None
    return {"rank": node.rank, "nnodes": node.nnodes, "rdzv_id": node.rdzv_id,
            "hosts": list(node.hosts)}  # fmt: skip


def read_node(record: object) -> NodePart | None:
    """The part job.json recorded, or None where there is none or it is not one."""
    if not isinstance(record, Mapping):
        return None
    rank, nnodes, rdzv_id = record.get("rank"), record.get("nnodes"), record.get("rdzv_id")
    hosts = record.get("hosts")
    if not (isinstance(rank, int) and isinstance(nnodes, int) and isinstance(rdzv_id, str)):
        return None
    if (
        isinstance(rank, bool)
        or isinstance(nnodes, bool)
        or not 0 <= rank < nnodes <= MAX_NODES
        or RDZV_ID.fullmatch(rdzv_id) is None
    ):
        return None
    names = tuple(h for h in hosts if isinstance(h, str)) if isinstance(hosts, list) else ()
    return NodePart(rank, nnodes, rdzv_id, names[:MAX_NODES])
