"""Deploying files: hashing what is on the host, installing uploads, rolling back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FilesHashParams:
    """sha256 of files under the deploy roots."""

    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as it is on the host."""

    path: str
    sha256: str | None
    """None when the file does not exist."""
    size_bytes: int | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class FilesHashResult:
    """The files asked for, in order."""

    files: tuple[FileState, ...]


@dataclass(frozen=True, slots=True)
class InstallParams:
    """Swap the uploaded `staged` file in for `target`, if its sha256 is `sha256`."""

    target: str
    staged: str
    sha256: str
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class RollbackParams:
    """Put back the version of `target` the last install replaced."""

    target: str


@dataclass(frozen=True, slots=True)
class InstallResult:
    """What an install or rollback did."""

    target: str
    sha256: str
    previous_sha256: str | None
    backup: str | None
    removed_leftovers: tuple[str, ...] = ()
