"""A real SSH server on loopback (asyncssh's), for `eagle-console demo --ssh` and the tests.

It listens on 127.0.0.1 only, with a host key generated at start and pinned in a known_hosts file
written beside it, and trusts one client key generated with it: host-key checking stays on. Exec
requests run as real subprocesses through `/bin/sh -c`, as a login shell would; SFTP is served.

`python -m console.link.loopback_ssh FOLDER` serves until SIGTERM or SIGINT, writing `port` into FOLDER
once it listens; the keys and known_hosts are in FOLDER too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from console.link.pipes import read_out, to_end


@dataclass(frozen=True, slots=True)
class LoopbackServer:
    """A listening server and what a client needs to reach it."""

    acceptor: asyncssh.SSHAcceptor
    port: int
    identity: Path
    known_hosts: Path
    host_key: asyncssh.SSHKey


def write_client_key(folder: Path) -> tuple[Path, asyncssh.SSHKey]:
    """A fresh ed25519 client key in OpenSSH format, mode 0600."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    path = folder / "id_ed25519"
    key.write_private_key(str(path))
    path.chmod(0o600)
    key.write_public_key(str(path) + ".pub")
    return path, key


def write_known_hosts(path: Path, port: int, public_line: str) -> None:
    """Pin one host key for 127.0.0.1 on `port`, as OpenSSH writes it."""
    algorithm, blob = public_line.split()[:2]
    path.write_text(f"[127.0.0.1]:{port} {algorithm} {blob}\n")


async def listen_loopback(folder: Path) -> LoopbackServer:
    """Generate the keys in `folder` and listen on 127.0.0.1 on a free port."""
    identity, client_key = _prepare_folder(folder)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    acceptor = await asyncssh.listen(
        "127.0.0.1", 0,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=_run_as_subprocess,
        encoding=None,
        sftp_factory=True,
        allow_scp=False,
        agent_forwarding=False,
    )  # fmt: skip
    port: int = acceptor.sockets[0].getsockname()[1]
    known_hosts = folder / "known_hosts"
    write_known_hosts(known_hosts, port, host_key.export_public_key().decode())
    return LoopbackServer(acceptor, port, identity, known_hosts, host_key)


def _prepare_folder(folder: Path) -> tuple[Path, asyncssh.SSHKey]:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return write_client_key(folder)


async def _run_as_subprocess(process: asyncssh.SSHServerProcess[bytes]) -> None:
    if process.command is None:
        process.stderr.write(b"this server runs exec requests only\n")
        process.exit(1)
        return
    local = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", process.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert local.stdin is not None
    assert local.stdout is not None
    assert local.stderr is not None
    feed = asyncio.create_task(_feed_stdin(process.stdin, local.stdin))
    forwards = (
        asyncio.create_task(_forward(local.stdout, process.stdout)),
        asyncio.create_task(_forward(local.stderr, process.stderr)),
    )
    try:
        # All output is forwarded before the exit status, as sshd does, so no byte is lost.
        await asyncio.gather(*forwards)
        status = await local.wait()
        process.exit(status)
        await process.wait_closed()
    finally:
        for task in (feed, *forwards):
            task.cancel()
        await asyncio.gather(*forwards, return_exceptions=True)  # no other reader of the pipes
        if local.returncode is None:  # the client went away first: end the command as sshd would
            local.kill()
            await local.wait()
        await read_out(to_end(local.stdout), to_end(local.stderr))


async def _feed_stdin(source: asyncssh.SSHReader[bytes], sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncssh.Error):
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    sink.close()


async def _forward(source: asyncio.StreamReader, sink: asyncssh.SSHWriter[bytes]) -> None:
    while chunk := await source.read(65536):
        sink.write(chunk)
        with contextlib.suppress(ConnectionError, asyncssh.Error):
            await sink.drain()


async def serve(folder: Path) -> None:
    """Listen, write `port`, and serve until SIGTERM or SIGINT."""
    server = await listen_loopback(folder)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    _write_port(folder / "port", server.port)
    try:
        await stop.wait()
    finally:
        server.acceptor.close()
        await server.acceptor.wait_closed()


def _write_port(path: Path, port: int) -> None:
    path.with_suffix(".tmp").write_text(str(port))
    path.with_suffix(".tmp").replace(path)


def main(argv: list[str] | None = None) -> int:
    """Serve in the foreground."""
    parser = argparse.ArgumentParser(
        prog="python -m console.link.loopback_ssh", description=__doc__
    )
    parser.add_argument("folder", type=Path, help="where the keys, known_hosts and port go")
    asyncio.run(serve(parser.parse_args(argv).folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
