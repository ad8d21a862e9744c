"""GETs the probes make of a server, bounded in size: an endless /metrics took the agent to +4 GB.

A failed, refused or oversized read is a missing figure, never a crash: the probes show what
they could read. JSON may hold NaN here (json.loads reads it); agent/probes/values.py takes each
field only if it is what the field holds.
"""

from __future__ import annotations

import json
from typing import Any

from agent.host.bounded_http import bounded_body

PROBE_TIMEOUT_S = 5.0
"""Every look at a server, all its GETs together."""
MAX_JSON_BYTES = 1 << 20
"""/server_info, /model_info, /workers, /readiness, /v1/models: far less in any real server."""
MAX_METRICS_BYTES = 8 << 20
"""/metrics: a real SGLang's, with its histograms per rank, is well under a megabyte."""


async def get_json(session: Any, url: str, any_status: bool = False) -> tuple[int, dict[str, Any]]:
    """The status and JSON object of a GET; {} when there is none to take.

    None to take: another status than 200 (unless `any_status`), a failure (status 0), an
    answer past MAX_JSON_BYTES, or JSON that is not an object.
    """
    try:
        async with session.get(url) as response:
            status = response.status
            if status != 200 and not any_status:
                return status, {}
            body = json.loads(await bounded_body(response, MAX_JSON_BYTES))
    except Exception:  # noqa: BLE001 (a failed probe is a missing field, not a crash)
        return 0, {}
    return status, body if isinstance(body, dict) else {}


async def get_text(session: Any, url: str) -> str:
    """The text of a 200 answer of at most MAX_METRICS_BYTES; "" otherwise."""
    try:
        async with session.get(url) as response:
            if response.status != 200:
                return ""
            data = await bounded_body(response, MAX_METRICS_BYTES)
    except Exception:  # noqa: BLE001 (metrics are optional: --enable-metrics)
        return ""
    return data.decode("utf-8", "replace")
