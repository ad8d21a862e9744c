"""Why a server could not be asked, in a person's words, not aiohttp's.

`Cannot connect to host 127.0.0.1:30000 ssl:default [Connect call failed ('127.0.0.1', 30000)]`
says less than "nothing listens on 127.0.0.1:30000": the server is not up (yet), or on another
port. The probes and the alerts use this one sentence.
"""

from __future__ import annotations

import asyncio
import socket

TIMEOUT_HINT = "no answer within {s:g} s: the server is busy, stuck, or the address drops packets"


def unreachable_reason(exc: BaseException, timeout_s: float) -> str:
    """What went wrong reaching the server, and where, as one short clause."""
    if isinstance(exc, asyncio.TimeoutError):
        return TIMEOUT_HINT.format(s=timeout_s)
    host = _host_port(exc)
    cause = _os_cause(exc)
    if isinstance(cause, ConnectionRefusedError):
        where = host or "that address"
        return f"nothing listens on {where} (connection refused): is the server up, on that port?"
    if isinstance(cause, socket.gaierror):
        return f"cannot resolve {host.rsplit(':', 1)[0] or 'the host'}: check the url's host name"
    if isinstance(cause, OSError) and cause.strerror:
        return f"cannot reach {host}: {cause.strerror}"
    if type(exc).__name__ == "ServerDisconnectedError":
        return f"{host or 'the server'} closed the connection without an answer"
    return f"cannot reach {host or 'the server'}: {str(exc) or type(exc).__name__}"


def _host_port(exc: BaseException) -> str:
    """HOST:PORT of aiohttp's connector errors (they carry both), else empty."""
    host, port = getattr(exc, "host", None), getattr(exc, "port", None)
    return f"{host}:{port}" if isinstance(host, str) and isinstance(port, int) else ""


def _os_cause(exc: BaseException) -> BaseException | None:
    """The OSError under aiohttp's connector error, if any."""
    return (
        getattr(exc, "os_error", None)
        or exc.__cause__
        or (exc if isinstance(exc, OSError) else None)
    )
