"""doctor's webhook line: how many notifications were lost since the daemon started, and why.

The agent keeps the count and the last reason (`agent/watch/notify.py`); the URL never leaves it but
as scheme and host, since a webhook's path is often its secret. Pure except for the one request;
never imports Textual.
"""

from __future__ import annotations

import time

from agent.protocol import NOTIFY_STATUS, NotifyStatus, NotifyStatusParams
from console.link.agent_link import AgentLink, LinkError


async def webhook_line(link: AgentLink) -> tuple[bool, str]:
    """(ok, detail) for the host's webhook; a host without one is fine."""
    try:
        status: NotifyStatus = await link.call(NOTIFY_STATUS, NotifyStatusParams())
    except LinkError as exc:
        return False, f"cannot ask the agent: {exc}"
    return webhook_detail(status, time.time())


def webhook_detail(status: NotifyStatus, now: float) -> tuple[bool, str]:
    """`https://hooks.example/…: 3 sent, 2 undelivered (last: HTTP 503, 40 s ago)`."""
    if status.site is None:
        return True, "none configured (set [hosts.NAME.notify] url to be told of alerts)"
    sent = f"{status.site}: {status.sent} sent, {status.dead_letters} undelivered"
    if not status.dead_letters:
        return True, sent
    when = ""
    if status.last_failure_at is not None:
        when = f", {max(0, round(now - status.last_failure_at))} s ago"
    return False, f"{sent} (last: {status.last_failure or 'unknown'}{when}); see agent.log"
