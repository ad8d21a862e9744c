"""The demo's one refusal: hidden states that will not fit, shown, then the room made, as a user would.

The hidden-states folder has a quota a stale capture nearly fills (console/demo/workspace.py),
so when the autopilot reaches the hidden states its plan does not fit: it pauses with the bytes
needed, the room left and what to do. The demo leaves that on screen for SHOW_S, then does what
the line says a person would: it deletes the stale capture, waits until the agent's plan sees the
room (the folder is measured every few seconds, not at each look), and resumes the autopilot.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.protocol import (
    AUTOPILOT_CONTROL,
    AUTOPILOT_STATUS,
    SNAPSHOT,
    AutopilotParams,
    AutopilotStatus,
    AutopilotStatusParams,
    Snapshot,
    SnapshotParams,
)
from console.link.agent_link import AgentLink, LinkError
from console.link.host_connection import Opener
from console.model.formatting import byte_size

SHOW_S = 12.0
"""How long the refusal stays on screen before the demo makes the room."""
LOOK_EVERY_S = 1.0
MAX_LOOKS = 1800
REFUSED = "the hidden states will not fit"
"""What the autopilot's pause says when the plan does not fit (agent/operations/stages.py)."""


async def refuse_then_make_room(opener: Opener, stale: Path, tell: Callable[[str], None]) -> None:
    """Wait for the refusal, show it, delete `stale`, and resume once the plan fits."""
    if not await _until(opener, _refused):
        return
    await asyncio.sleep(SHOW_S)
    size = await asyncio.to_thread(_delete, stale)
    if not await _until(opener, _fits):
        return
    link = await _open(opener)
    if link is None:
        return
    try:
        key = f"demo-room-{secrets.token_hex(4)}"
        await link.call(AUTOPILOT_CONTROL, AutopilotParams("resume"), idempotency_key=key)
    except LinkError:
        return
    finally:
        await link.close()
    tell(f"the demo deleted a stale capture ({byte_size(size)}) from the hidden-states folder, "
         "as you would make room on a box, and resumed the autopilot (A)")  # fmt: skip


def _delete(stale: Path) -> int:
    """Delete the stale capture; returns the size it had (0 when it was gone already)."""
    try:
        size = stale.stat().st_size
        stale.unlink()
    except FileNotFoundError:
        return 0
    return size


async def _refused(link: AgentLink) -> bool:
    status: AutopilotStatus = await link.call(AUTOPILOT_STATUS, AutopilotStatusParams())
    return status.state == "paused" and REFUSED in (status.paused_reason or "")


async def _fits(link: AgentLink) -> bool:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    plan = snapshot.hidden_states_plan
    return plan is not None and plan.fits is True


async def _until(opener: Opener, holds: Callable[[AgentLink], Awaitable[bool]]) -> bool:
    """Look every second until `holds`; False when it never did (the demo ended first).

    Over one link, opened again only after it fails: a link a look started an `agent attach`
    (over SSH, a connection), some 200 times in a demo left alone.
    """
    link: AgentLink | None = None
    try:
        for _ in range(MAX_LOOKS):
            link = link or await _open(opener)
            if link is not None:
                try:
                    if await holds(link):
                        return True
                except LinkError:
                    await link.close()
                    link = None
            await asyncio.sleep(LOOK_EVERY_S)
        return False
    finally:
        if link is not None:
            await link.close()


async def _open(opener: Opener) -> AgentLink | None:
    try:
        return await opener()
    except LinkError:
        return None
