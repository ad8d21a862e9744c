"""What the app publishes and its screens subscribe to while they are mounted.

Attributes down: the app never looks for a screen to hand it data. It publishes each fact on a
Textual signal; a screen subscribes in `on_mount` and takes what concerns it; an unmounted screen
is dropped by the signal itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from textual.dom import DOMNode
from textual.signal import Signal

from agent.protocol import LogChunk
from console.link.deploy import FilePlan
from console.model.host_view import HostView


@dataclass(frozen=True, slots=True)
class HostShown:
    """The host in focus as of `now`, and a headline for each of the others."""

    view: HostView
    others: list[str]
    now: float


@dataclass(frozen=True, slots=True)
class LogChunkReceived:
    """New lines of one named log of one host."""

    host: str
    chunk: LogChunk


@dataclass(frozen=True, slots=True)
class DeployPlanned:
    """The mapped files of one host as they are now (after a deploy or a rollback changed them)."""

    host: str
    plans: list[FilePlan]
    bundle_line: str


class ConsoleSignals:
    """The facts the app publishes, one signal each."""

    def __init__(self, owner: DOMNode) -> None:
        self.host_shown: Signal[HostShown] = Signal(owner, "host_shown")
        self.log_chunk_received: Signal[LogChunkReceived] = Signal(owner, "log_chunk_received")
        self.deploy_planned: Signal[DeployPlanned] = Signal(owner, "deploy_planned")
        """A host's files planned afresh: a deploy screen of that host shows them."""


@runtime_checkable
class Publisher(Protocol):
    """An app that publishes ConsoleSignals (the console's app)."""

    @property
    def signals(self) -> ConsoleSignals:
        """The signals to subscribe to."""
        ...


def signals_of(node: DOMNode) -> ConsoleSignals:
    """The signals of the app `node` runs in."""
    app = node.app
    if not isinstance(app, Publisher):
        raise TypeError(f"{type(app).__name__} publishes no console signals")
    return app.signals
