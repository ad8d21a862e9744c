"""A command whose answer the agent reads, bounded in time and in bytes, and never left running.

`nvidia-smi` is whatever binary the config names (`nvidia_smi`), and a tokenizer's own code runs
in the tokenizer check: either may hang, flood its output or print garbage. `communicate()` with
a timeout left a hung copy behind at every refresh (six after a minute) and read a flood into
memory whole (880 MB, then the kernel's OOM killer). Here the command runs in a process group of
its own; past its time or its byte budget the whole group is killed, and it is always reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.host.signals import kill_group

CHUNK = 64 * 1024
POLL_S = 0.05
LINGER_S = 0.5
"""How long the output of a command that has ended is read before its group is killed."""
DRAIN_S = 5.0
"""How long its pipes are read to their end once it is killed (a process that left its group
may hold them open: it is not waited for longer)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a bounded command said, and how it ended."""

    returncode: int | None
    """None when it was killed for its time or its size."""
    out: bytes
    err: bytes
    timed_out: bool = False
    flooded: bool = False


async def run_bounded(
    argv: tuple[str, ...], timeout_s: float, max_bytes: int, env: dict[str, str] | None = None
) -> Answer:
    """Run `argv`; its stdout and stderr, each cut at `max_bytes`, within `timeout_s`.

    Raises OSError (FileNotFoundError among them) when it cannot be started.
    """
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True, env=env,
    )  # fmt: skip
    try:
        (out, out_full), (err, err_full) = await asyncio.wait_for(
            _talk(process, max_bytes), timeout_s
        )
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        return Answer(None, b"", b"", timed_out=True)
    finally:
        await _ended(process)
    if out_full or err_full:
        return Answer(None, out, err, flooded=True)
    return Answer(process.returncode, out, err)


async def _talk(
    process: asyncio.subprocess.Process, max_bytes: int
) -> tuple[tuple[bytes, bool], tuple[bytes, bool]]:
    """Both outputs, each cut at `max_bytes`, and its exit.

    A command that floods is killed at once. One that ended while a child it left behind still
    holds its output open is given LINGER_S, then its group is killed, so its answer stands.
    """
    if process.stdout is None or process.stderr is None:
        raise OSError("the command's output is not piped")

    def flooded() -> None:
        _kill(process)

    reading = asyncio.gather(
        _capped(process.stdout, max_bytes, flooded), _capped(process.stderr, max_bytes, flooded)
    )
    try:
        ended_at: float | None = None
        while not reading.done():  # Python 3.11's wait() wakes only once every pipe has closed
            await asyncio.wait({reading}, timeout=POLL_S)
            if process.returncode is not None and ended_at is None:
                ended_at = time.monotonic()
            if ended_at is not None and time.monotonic() - ended_at > LINGER_S:
                _kill(process)  # a child it left holds its output open: the answer is in
                break
        out, err = await reading
    finally:
        reading.cancel()
        reading.add_done_callback(_retrieve)
    return out, err


def _retrieve(reading: asyncio.Future[Any]) -> None:
    """Take a cancelled read's outcome, so it is not logged as "never retrieved".

    Python 3.11's gather, cancelled, ends with CancelledError set as its exception: every hung
    nvidia-smi left a traceback in the agent's log when the future was collected.
    """
    if not reading.cancelled():
        reading.exception()


async def _capped(
    stream: asyncio.StreamReader, max_bytes: int, flooded: Callable[[], None]
) -> tuple[bytes, bool]:
    """Up to `max_bytes` of the stream, and whether it had more.

    Past that, `flooded()` is called and the rest read to its end and dropped (the pipe closes).
    """
    data = bytearray()
    while chunk := await stream.read(CHUNK):
        data += chunk
        if len(data) > max_bytes:
            flooded()
            await _drain(stream)
            return bytes(data[:max_bytes]), True
    return bytes(data), False


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.read(CHUNK):
        pass


def _kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's whole group, its leader ended or not.

    A child it left in the background (`sleep 600 &`) is in it too; a group with no member left
    is no error.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        kill_group(process.pid, signal.SIGKILL)  # its own group: start_new_session


async def _ended(process: asyncio.subprocess.Process) -> None:
    """Kill the command's group unless it ended by itself; reap it and close its pipes.

    Also when the wait for it was cancelled.
    """
    _kill(process)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.shield(
            asyncio.wait_for(
                asyncio.gather(_drain(process.stdout), _drain(process.stderr), process.wait()),
                DRAIN_S,
            )
        )
