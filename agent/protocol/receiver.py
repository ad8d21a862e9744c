"""One receive loop for the line protocol, used by the console's link and the agent's session.

It reads chunks from whatever reader it is given, frames them into lines (`LineFramer`), decodes
each line and hands the message on. What a bad line means differs by side (the agent answers it
with an error, the console logs it and goes on), so a line that is too long or does not decode is
handed on as the `ProtocolError` that says why; the loop itself has no policy and never stops at
a bad line. It ends at end of input, or after a chunk once `stop()` says so. Blank lines are
skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent.protocol.codec import decode
from agent.protocol.envelopes import Message
from agent.protocol.errors import ErrorCode, ProtocolError
from agent.protocol.framing import ByteReader, LineFramer, OversizedLine

READ_SIZE = 256 * 1024
"""Most bytes asked of the reader at once."""

OnMessage = Callable[[Message], Awaitable[None]]
OnBadLine = Callable[[ProtocolError], Awaitable[None]]


async def receive_messages(
    reader: ByteReader,
    on_message: OnMessage,
    on_bad_line: OnBadLine,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Hand every message read from `reader` to `on_message`, every bad line to `on_bad_line`.

    Returns at end of input, or once `stop()` is true after a chunk; the reader's own errors
    (a lost connection) propagate to the caller, who knows what they mean.
    """
    framer = LineFramer()
    while chunk := await reader.read(READ_SIZE):
        for line in framer.feed(chunk):
            await _hand_on(line, on_message, on_bad_line)
        if stop():
            return


async def _hand_on(
    line: bytes | OversizedLine, on_message: OnMessage, on_bad_line: OnBadLine
) -> None:
    if isinstance(line, OversizedLine):
        dropped = f"line of {line.size_bytes} bytes dropped"
        await on_bad_line(ProtocolError(ErrorCode.OVERSIZED, dropped))
        return
    if not line.strip():
        return
    try:
        message = decode(line)
    except ProtocolError as exc:
        await on_bad_line(exc)
        return
    await on_message(message)
