"""Moving file bytes to and from the host: SFTP over the link's SSH connection, or the local disk.

Only bytes travel here; deciding what to install, and the atomic swap itself, are the agent's
(files.install). An upload always goes to a fresh temp name opened exclusively beside its target.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
from pathlib import Path
from typing import Protocol

import asyncssh


class FileChannel(Protocol):
    """Read and stage files on the host."""

    async def read(self, path: str) -> bytes | None: ...  # noqa: D102

    async def stage(self, path: str, content: bytes, mode: int) -> None: ...  # noqa: D102

    async def remove(self, path: str) -> None: ...  # noqa: D102


class SftpChannel:
    """Files over SFTP on the link's own SSH connection."""

    def __init__(self, connection: asyncssh.SSHClientConnection) -> None:
        self.connection = connection

    async def read(self, path: str) -> bytes | None:
        """The file's bytes, or None if it does not exist."""
        async with self.connection.start_sftp_client() as sftp:
            try:
                async with sftp.open(path, "rb") as handle:
                    data: bytes = await handle.read()
                    return data
            except asyncssh.SFTPNoSuchFile:
                return None

    async def stage(self, path: str, content: bytes, mode: int) -> None:
        """Create `path` exclusively (it must not exist) with `content`, then fsync it if the server can."""
        async with self.connection.start_sftp_client() as sftp:
            await sftp.makedirs(posixpath.dirname(path), exist_ok=True)
            async with sftp.open(path, "xb", attrs=asyncssh.SFTPAttrs(permissions=mode)) as handle:
                await handle.write(content)
                with contextlib.suppress(asyncssh.SFTPOpUnsupported):
                    await handle.fsync()  # the agent fsyncs before the swap anyway

    async def remove(self, path: str) -> None:
        """Remove a staged file the agent refused; a missing one is fine."""
        async with self.connection.start_sftp_client() as sftp:
            with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                await sftp.remove(path)


class LocalChannel:
    """Files on this machine (the demo and tests run the agent locally)."""

    async def read(self, path: str) -> bytes | None:
        """The file's bytes, or None if it does not exist."""
        return await asyncio.to_thread(_read_or_none, Path(path))

    async def stage(self, path: str, content: bytes, mode: int) -> None:
        """Create `path` exclusively with `content` and fsync it."""
        await asyncio.to_thread(_write_exclusive, Path(path), content, mode)

    async def remove(self, path: str) -> None:
        """Remove a staged file the agent refused; a missing one is fine."""
        await asyncio.to_thread(Path(path).unlink, missing_ok=True)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write_exclusive(path: Path, content: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
