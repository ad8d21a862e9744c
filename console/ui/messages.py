"""App-wide messages: facts about hosts that arrive from their links."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from agent.protocol import Event, Snapshot
from console.link.host_connection import LinkState


@dataclass
class SnapshotReceived(Message):
    """A host sent a fresh snapshot."""

    host: str
    snapshot: Snapshot

    def can_replace(self, message: Message) -> bool:
        """A newer snapshot of the same host makes an unhandled older one pointless."""
        return isinstance(message, SnapshotReceived) and message.host == self.host


@dataclass
class LinkChanged(Message):
    """A host's link changed state."""

    state: LinkState


@dataclass
class AgentEventReceived(Message):
    """A host sent a log chunk or a job event."""

    host: str
    event: Event
