"""Logs: listing, reading and following them, and the notice that a follow fell behind."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogInfo:
    """A log the agent serves."""

    name: str
    """sglang, agent, or job:<job id>."""
    path: str
    size_bytes: int | None


@dataclass(frozen=True, slots=True)
class LogsParams:
    """List the named logs."""


@dataclass(frozen=True, slots=True)
class LogsList:
    """Every named log."""

    logs: tuple[LogInfo, ...]


@dataclass(frozen=True, slots=True)
class LogReadParams:
    """Read whole lines of log `name` after byte `offset` (negative: that many bytes from the end)."""

    name: str
    offset: int = 0
    inode: int | None = None
    """The inode the console last read; a different one means the file was replaced."""
    max_bytes: int = 512 * 1024


@dataclass(frozen=True, slots=True)
class LogSubscribeParams:
    """Push new lines of log `name` as "log" events, starting after byte `offset`."""

    name: str
    offset: int = 0
    inode: int | None = None


@dataclass(frozen=True, slots=True)
class LogUnsubscribeParams:
    """Stop pushing log `name`."""

    name: str


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Whole lines of a log from byte `start_offset` to `end_offset` (exclusive)."""

    name: str
    start_offset: int
    end_offset: int
    text: str
    size_bytes: int
    inode: int | None
    reset: bool = False
    """The file was cut shorter or replaced since the offset asked for: read from its start."""


@dataclass(frozen=True, slots=True)
class LogLagged:
    """The agent stopped pushing log `name` to a console that read too slowly.

    Nothing was skipped: subscribing again from `resume_offset` (with `inode`) goes on exactly
    where it stopped.
    """

    name: str
    resume_offset: int
    inode: int | None
    reason: str
