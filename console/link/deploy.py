"""Deploying files to a host: what drifted, the diff, the safe upload and swap, the rollback.

The plan compares every mapped file by sha256 on both sides. A deploy stages each changed file
under an exclusive temp name beside its target (SFTP, or the local disk for a local agent) and
asks the agent to verify and swap it in atomically with a backup (files.install). An interrupted
deploy leaves every target exactly old or exactly new; the agent removes stale temp files later.
No Textual here: the TUI and the headless commands share it.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import posixpath
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import (
    FILES_HASH,
    FILES_INSTALL,
    FILES_ROLLBACK,
    FilesHashParams,
    FilesHashResult,
    InstallParams,
    InstallResult,
    RollbackParams,
)
from console.config import DeployMapping
from console.link.agent_link import AgentLink, AgentRequestError, LinkError

SKIP_PARTS = {"__pycache__", ".git", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@dataclass(frozen=True, slots=True)
class FilePlan:
    """One mapped file and how it differs."""

    local: Path | None
    remote: str
    local_sha256: str | None
    remote_sha256: str | None
    mode: int = 0o644

    @property
    def status(self) -> str:
        """unchanged, changed, new (not on the host yet) or missing-locally."""
        if self.local_sha256 is None:
            return "missing-locally"
        if self.remote_sha256 is None:
            return "new"
        return "unchanged" if self.local_sha256 == self.remote_sha256 else "changed"

    @property
    def needs_deploy(self) -> bool:
        """True for changed and new files."""
        return self.status in ("changed", "new")


def mapped_files(mappings: Iterable[DeployMapping]) -> list[tuple[Path | None, str]]:
    """(local file, remote path) for every file of every mapping; a folder maps file by file."""
    pairs: list[tuple[Path | None, str]] = []
    for mapping in mappings:
        if mapping.local.is_dir():
            for path in sorted(mapping.local.rglob("*")):
                if path.is_file() and not SKIP_PARTS & set(path.parts) and path.suffix != ".pyc":
                    pairs.append(
                        (
                            path,
                            posixpath.join(
                                mapping.remote, path.relative_to(mapping.local).as_posix()
                            ),
                        )
                    )
        else:
            pairs.append((mapping.local if mapping.local.is_file() else None, mapping.remote))
    return pairs


async def plan_deploy(link: AgentLink, mappings: Iterable[DeployMapping]) -> list[FilePlan]:
    """Every mapped file, local and remote sha256 side by side."""
    pairs = mapped_files(mappings)
    if not pairs:
        return []
    hashes: FilesHashResult = await link.call(
        FILES_HASH, FilesHashParams(tuple(r for _, r in pairs))
    )
    remote = {state.path: state.sha256 for state in hashes.files}
    return [
        FilePlan(
            local,
            path,
            _sha256(local),
            remote.get(path),
            (local.stat().st_mode & 0o777) if local else 0o644,
        )
        for (local, path) in pairs
    ]


async def unified_diff(link: AgentLink, plan: FilePlan) -> str:
    """The change a deploy of `plan` makes, as a unified diff (host version first)."""
    before = await link.files.read(plan.remote) if link.files else None
    after = plan.local.read_bytes() if plan.local else b""
    return "".join(
        difflib.unified_diff(
            (before or b"").decode(errors="replace").splitlines(keepends=True),
            after.decode(errors="replace").splitlines(keepends=True),
            fromfile=f"host:{plan.remote}",
            tofile=f"local:{plan.local}",
        )
    )


async def deploy(link: AgentLink, plans: Iterable[FilePlan]) -> list[InstallResult]:
    """Upload and swap in every changed or new file; stops at the first failure, saying which."""
    if link.files is None:
        raise LinkError("this link cannot move files")
    results: list[InstallResult] = []
    for plan in plans:
        if not plan.needs_deploy or plan.local is None:
            continue
        content = plan.local.read_bytes()
        digest = hashlib.sha256(content).hexdigest()
        folder, name = posixpath.split(plan.remote)
        staged = posixpath.join(folder, f".{name}.eagle-upload-{secrets.token_hex(6)}")
        try:
            # The agent confines the staging path to the deploy roots before a byte is written.
            await link.call(FILES_HASH, FilesHashParams((staged,)))
            await link.files.stage(staged, content, plan.mode)
            result = await _install(link, plan, staged, digest)
        except (LinkError, OSError) as exc:
            done = ", ".join(r.target for r in results) or "nothing"
            raise LinkError(
                f"deploy stopped at {plan.remote}: {exc}; already deployed: {done}"
            ) from None
        results.append(result)
    return results


async def rollback(link: AgentLink, remote: str) -> InstallResult:
    """Put back the version of `remote` the last deploy replaced."""
    result: InstallResult = await link.call(
        FILES_ROLLBACK, RollbackParams(remote), idempotency_key=f"rollback-{secrets.token_hex(6)}"
    )
    return result


async def _install(link: AgentLink, plan: FilePlan, staged: str, digest: str) -> InstallResult:
    """Swap the staged file in; a refused one is removed, so nothing of it stays behind."""
    try:
        result: InstallResult = await link.call(
            FILES_INSTALL, InstallParams(plan.remote, staged, digest, plan.mode),
            idempotency_key=f"install-{digest[:16]}-{secrets.token_hex(4)}",
        )  # fmt: skip
    except AgentRequestError:
        assert link.files is not None
        with contextlib.suppress(LinkError, OSError):
            await link.files.remove(staged)
        raise
    return result


def _sha256(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None
