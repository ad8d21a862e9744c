"""An sglang-router, probed as what it is: a front for workers, each healthy or not.

The router's own /health answers 200 even with every worker dead, and it has no /metrics.
What tells the truth (sglang-router 0.3.2, checked against the real binary):
- `/readiness`: 200 `{"status": "ready", "healthy_workers": n, "total_workers": m}`, or 503
  `{"status": "not ready", "reason": ...}` when no worker is healthy;
- `/workers`: `{"workers": [{"url", "is_healthy", "load", "model_id", ...}], "total": m}`;
- `/engine_metrics`: every worker's Prometheus text, renamed `sglang_...`, with `worker_addr`.
"""

from __future__ import annotations

from typing import Any

from agent.probes import prometheus
from agent.probes.http_reads import get_json, get_text
from agent.probes.values import count, text
from agent.protocol import ServerPart, ServerStats


async def probe_router(session: Any, url: str) -> ServerStats:
    """One reading of the router at `url` and its workers."""
    ready_status, readiness = await get_json(session, f"{url}/readiness", any_status=True)
    _, listing = await get_json(session, f"{url}/workers", any_status=True)
    samples = prometheus.parse(await get_text(session, f"{url}/engine_metrics"))
    listed = listing.get("workers")
    workers = [w for w in listed if isinstance(w, dict)] if isinstance(listed, list) else []
    healthy_count = sum(1 for w in workers if w.get("is_healthy") is True)
    return ServerStats(
        url=url,
        healthy=ready_status == 200 and (healthy_count > 0 or not workers),
        detail=_detail(ready_status, readiness, healthy_count, len(workers)),
        model_path=next((name for w in workers if (name := text(w.get("model_id")))), None),
        **prometheus.sglang_figures(samples),
        is_router=True,
        healthy_workers=count(readiness.get("healthy_workers"), healthy_count),
        total_workers=count(readiness.get("total_workers"), len(workers)),
        parts=_worker_parts(workers, prometheus.by_part(samples, "worker_addr")),
    )


def _detail(status: int, readiness: dict[str, Any], healthy: int, total: int) -> str:
    if status == 200 and (healthy or not total):
        return f"sglang-router: {healthy} of {total} workers healthy"
    reason = text(readiness.get("reason")) or f"/readiness answered HTTP {status}"
    return f"sglang-router: no healthy worker ({healthy} of {total}; {reason})"


def _worker_parts(
    workers: list[dict[str, Any]], figures: dict[str, dict[str, float]]
) -> tuple[ServerPart, ...]:
    parts = []
    for worker in workers:
        name = text(worker.get("url")) or "?"
        mine = figures.get(name, {})
        parts.append(
            ServerPart(
                name=name,
                healthy=worker.get("is_healthy")
                if isinstance(worker.get("is_healthy"), bool)
                else None,
                load=count(worker.get("load")),
                running_requests=count(mine.get("num_running_reqs")),
                queued_requests=count(mine.get("num_queue_reqs")),
                gen_throughput_tokens_per_s=mine.get("gen_throughput"),
                token_usage=mine.get("token_usage"),
            )
        )
    return tuple(parts)
