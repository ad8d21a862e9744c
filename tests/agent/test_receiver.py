"""The one receive loop both ends use: messages on, bad lines reported, blank lines skipped."""

from __future__ import annotations

import asyncio

from agent.protocol import (
    MAX_LINE_BYTES,
    PING,
    ErrorCode,
    Message,
    PingParams,
    ProtocolError,
    Request,
    encode,
    receive_messages,
)


class Heard:
    """Records what the loop hands on."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.bad: list[ProtocolError] = []

    async def message(self, message: Message) -> None:
        self.messages.append(message)

    async def bad_line(self, error: ProtocolError) -> None:
        self.bad.append(error)


def reader_of(*chunks: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2 * MAX_LINE_BYTES)
    for chunk in chunks:
        reader.feed_data(chunk)
    if eof:
        reader.feed_eof()
    return reader


def ping(request_id: int) -> Request[PingParams]:
    return Request(request_id, PING.name, PingParams())


async def test_each_message_is_handed_on_in_order_until_end_of_input() -> None:
    heard = Heard()
    await asyncio.wait_for(
        receive_messages(
            reader_of(encode(ping(1)) + encode(ping(2))), heard.message, heard.bad_line
        ),
        5,
    )
    assert heard.messages == [ping(1), ping(2)]
    assert heard.bad == []


async def test_a_garbage_line_and_an_oversized_one_are_reported_and_the_stream_goes_on() -> None:
    heard = Heard()
    oversized = b"x" * (MAX_LINE_BYTES + 1) + b"\n"
    stream = b"not json\n" + oversized + b"\n   \n" + encode(ping(3))
    await asyncio.wait_for(receive_messages(reader_of(stream), heard.message, heard.bad_line), 30)
    assert [error.code for error in heard.bad] == [ErrorCode.MALFORMED, ErrorCode.OVERSIZED]
    assert f"{MAX_LINE_BYTES + 1} bytes" in heard.bad[1].message
    assert heard.messages == [ping(3)]


async def test_it_returns_after_a_chunk_once_told_to_stop_without_waiting_for_more() -> None:
    heard = Heard()
    reader = reader_of(encode(ping(4)), eof=False)
    await asyncio.wait_for(
        receive_messages(reader, heard.message, heard.bad_line, stop=lambda: bool(heard.messages)),
        5,
    )
    assert heard.messages == [ping(4)]
