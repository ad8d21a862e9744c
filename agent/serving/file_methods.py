"""files.*: hashes, atomic installs and rollbacks, confined to the configured deploy roots."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agent.errors import AgentError
from agent.files import (
    FileError,
    NothingToRollBackError,
    Roots,
    UnsafeBackupError,
    install,
    remove_stale_uploads,
    rollback,
    sha256_of,
)
from agent.protocol import (
    ErrorCode,
    FilesHashParams,
    FilesHashResult,
    FileState,
    InstallParams,
    InstallResult,
    PipelineConfig,
    Request,
    RollbackParams,
)


class FileMethods:
    """The deploy side of the agent: every path is confined to the pipeline's deploy roots."""

    def __init__(
        self, pipeline: Callable[[], PipelineConfig], staged_paths: Callable[[], set[str]]
    ) -> None:
        self._pipeline = pipeline
        self._staged_paths = staged_paths
        """Uploads an operation under way still needs: a stale-upload sweep leaves them."""

    async def files_hash(self, request: Request[FilesHashParams]) -> FilesHashResult:
        """sha256, size and mode of each file (None for a missing one)."""
        targets = [self._confine(path) for path in request.params.paths]
        try:
            return FilesHashResult(tuple(await asyncio.to_thread(_file_states, targets)))
        except FileError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None

    async def files_install(self, request: Request[InstallParams]) -> InstallResult:
        """Verify an uploaded file and swap it in atomically, keeping a backup."""
        params = request.params
        target, staged = self._confine(params.target), self._confine(params.staged)
        try:
            previous, backup = await asyncio.to_thread(
                install, target, staged, params.sha256, params.mode
            )
        except FileError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None
        keep = self._staged_paths()
        removed = await asyncio.to_thread(remove_stale_uploads, target.parent, keep=keep)
        return InstallResult(str(target), params.sha256, previous, backup, tuple(map(str, removed)))

    async def files_rollback(self, request: Request[RollbackParams]) -> InstallResult:
        """Restore the version the last install replaced."""
        target = self._confine(request.params.target)
        try:
            restored = await asyncio.to_thread(rollback, target)
        except NothingToRollBackError as exc:
            raise AgentError(ErrorCode.NOTHING_TO_ROLL_BACK, str(exc)) from None
        except UnsafeBackupError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None
        except FileError as exc:
            raise AgentError(ErrorCode.NOT_FOUND, str(exc)) from None
        return InstallResult(str(target), restored, None, None)

    def _confine(self, path: str) -> Path:
        try:
            return Roots.of(self._pipeline().deploy_roots).confine(path)
        except FileError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None


def _file_states(targets: list[Path]) -> list[FileState]:
    states = []
    for target in targets:
        try:
            info = target.stat()
        except FileNotFoundError:
            states.append(FileState(str(target), None))
            continue
        states.append(
            FileState(str(target), sha256_of(target), info.st_size, info.st_mode & 0o7777)
        )
    return states
