"""A TCP relay on loopback between the console and its SSH server, whose connections can be cut.

A cut resets both sockets of every relayed connection at once (SO_LINGER 0, then abort: an RST
each way), as a dropped NAT entry or a restarted router would: neither end gets a polite close.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

READ_SIZE = 65536


class CuttableRelay:
    """Forwards 127.0.0.1:`port` to 127.0.0.1:`target_port` until `cut` resets what it carries."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Listen on a free loopback port and return it."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def cut(self) -> int:
        """Reset every relayed connection now; returns how many sockets were reset."""
        writers = list(self._writers)
        for writer in writers:
            _reset(writer)
        self._writers.clear()
        return len(writers)

    async def close(self) -> None:
        """Stop listening and reset what is still relayed."""
        if self._server is not None:
            self._server.close()
        self.cut()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            _reset(writer)
            return
        self._writers |= {writer, upstream[1]}
        pipes = (
            asyncio.create_task(_copy(reader, upstream[1])),
            asyncio.create_task(_copy(upstream[0], writer)),
        )
        self._pipes.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
                self._pipes.discard(pipe)
            for end in (writer, upstream[1]):
                self._writers.discard(end)
                end.close()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await source.read(READ_SIZE):
            sink.write(data)
            await sink.drain()


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
