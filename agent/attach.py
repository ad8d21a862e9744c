"""`python -m agent attach`: make sure the right daemon runs, then bridge stdin/stdout to it.

This is the one fixed command the console runs over SSH (or as a local subprocess). Parameters
never travel in the command line: everything after the bridge is JSON lines on the channel.
If no daemon runs, or one runs other agent code than this bundle, attach starts this bundle's
daemon detached (its own session, stdin from /dev/null, output to `agent.log`). Jobs are not the
daemon's children in a way that ties them to it, so replacing the daemon leaves them running.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from agent.bundle import AGENT_PACKAGE, running_bundle_sha256
from agent.host.signals import UnsafeSignalError, kill_process
from agent.state import SOCKET_NAME, StatePaths, read_json
from agent.state.private_files import open_private

START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0
"""A SIGTERMed daemon has this long to let go of its lock; then it is SIGKILLed."""
KILL_TIMEOUT_S = 5.0
POLL_S = 0.02


class AttachError(Exception):
    """The daemon could not be reached or started."""


def attach(paths: StatePaths) -> int:
    """Ensure this bundle's daemon runs, then bridge until either side closes."""
    os.chdir(paths.root)
    ensure_daemon(paths)
    asyncio.run(_bridge())
    return 0


def start(paths: StatePaths) -> int:
    """Ensure this bundle's daemon runs, and return: what a boot entry runs."""
    os.chdir(paths.root)
    ensure_daemon(paths)
    return 0


def ensure_daemon(paths: StatePaths) -> None:
    """Start this bundle's daemon unless it already runs; replace a daemon of other code."""
    with _held(paths.start_lock):
        info = read_json(paths.daemon_info)
        running = isinstance(info, dict) and _accepts_connections()
        if running and info.get("bundle_sha256") == running_bundle_sha256():
            return
        if running:
            stop_daemon(paths)
        _start_daemon(paths)


@contextlib.contextmanager
def _held(lock_path: Path) -> Iterator[None]:
    fd = open_private(lock_path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _accepts_connections() -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(SOCKET_NAME)
        except OSError:
            return False
    return True


def stop_daemon(paths: StatePaths, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """SIGTERM the daemon of `paths` and wait until it has let go of its lock; jobs live on.

    The pid comes from `daemon.json`, and a signal goes only to a process that still holds
    the daemon lock (a recycled pid never does). One that still holds it after `timeout_s` is
    SIGKILLed: a daemon stuck on a peer must not keep every later attach out. Returns
    False when no daemon was running.
    """
    info = read_json(paths.daemon_info)
    if not isinstance(info, dict) or not _lock_is_held(paths.daemon_lock):
        return False
    try:
        pid = int(info["pid"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AttachError(
            f"{paths.daemon_info} names no daemon pid ({exc}); not signalled"
        ) from None
    if not _signalled(paths, pid, signal.SIGTERM, timeout_s):
        if not _signalled(paths, pid, signal.SIGKILL, KILL_TIMEOUT_S):
            raise AttachError(f"agent daemon {pid} did not stop, even on SIGKILL")
        print(f"agent daemon {pid} did not stop within {timeout_s:g} s; killed", file=sys.stderr)  # noqa: T201
    return True


def _signalled(paths: StatePaths, pid: int, signum: signal.Signals, timeout_s: float) -> bool:
    """Send `signum` to the lock's holder `pid`; whether the lock was let go within `timeout_s`."""
    if not _lock_is_held(paths.daemon_lock):
        return True
    try:
        kill_process(pid, signum)
    except ProcessLookupError:
        pass
    except UnsafeSignalError as exc:
        raise AttachError(
            f"{paths.daemon_info} names no daemon pid ({exc}); not signalled"
        ) from None
    deadline = time.monotonic() + timeout_s
    while _lock_is_held(paths.daemon_lock):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def _lock_is_held(path: Path) -> bool:
    try:
        fd = open_private(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _start_daemon(paths: StatePaths) -> None:
    env = dict(os.environ, PYTHONPATH=str(AGENT_PACKAGE.parent))
    log_fd = open_private(paths.daemon_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(log_fd, "ab") as log_file:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "agent", "serve", "--state-dir", str(paths.root)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=paths.root,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _daemon_ready(paths, daemon.pid):
        if daemon.poll() is not None or time.monotonic() > deadline:
            raise AttachError(f"agent daemon did not start; see {paths.daemon_log}")
        time.sleep(POLL_S)


def _daemon_ready(paths: StatePaths, pid: int) -> bool:
    info = read_json(paths.daemon_info)
    return isinstance(info, dict) and info.get("pid") == pid and _accepts_connections()


async def _bridge() -> None:
    sock_reader, sock_writer = await asyncio.open_unix_connection(SOCKET_NAME)
    stdin = await _stdin_reader()
    stdout = await _stdout_writer()
    upstream = asyncio.create_task(_pump(stdin, sock_writer, half_close=True))
    downstream = asyncio.create_task(_pump(sock_reader, stdout, half_close=False))
    await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
    if not downstream.done():
        await downstream
    upstream.cancel()


async def _stdin_reader() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file: asyncio pipes refuse it, a thread reads it instead
        threading.Thread(target=_feed_from_file, args=(loop, reader), daemon=True).start()
    return reader


def _feed_from_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    while chunk := os.read(sys.stdin.fileno(), 256 * 1024):
        loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


async def _stdout_writer() -> Sink:
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
    except ValueError:  # a regular file: plain blocking writes are fine there
        return _FileSink()
    return asyncio.StreamWriter(transport, protocol, None, loop)


class Sink(Protocol):
    """Where the bridge writes: a stream writer or a plain file."""

    def write(self, data: bytes) -> None: ...  # noqa: D102

    async def drain(self) -> None: ...  # noqa: D102

    def can_write_eof(self) -> bool: ...  # noqa: D102

    def write_eof(self) -> None: ...  # noqa: D102


class _FileSink:
    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    async def drain(self) -> None:
        return None

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        return None


async def _pump(source: asyncio.StreamReader, sink: Sink, *, half_close: bool) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await source.read(256 * 1024):
            sink.write(chunk)
            await sink.drain()
        if half_close and sink.can_write_eof():
            sink.write_eof()
