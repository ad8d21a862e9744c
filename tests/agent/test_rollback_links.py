"""A rollback never follows a planted `.eagle-backup` link.

A symlink planted in place of a file's backup made `files.rollback` answer ok and turned the
target into a link leading outside the deploy roots. A backup that is not a regular file of its
own is refused, the target is left as it was, and nothing outside the roots is read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.files import Roots, UnsafeBackupError, backup_path, rollback
from agent.operations.staged_files import put_back
from agent.protocol import FILES_ROLLBACK, PipelineConfig, RollbackParams
from console.link.agent_link import AgentRequestError
from tests.support.operations import local_link

CURRENT = b"print('current')\n"


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A deployed file whose backup is a symlink to a file outside the deploy root."""
    root = tmp_path / "deploy"
    root.mkdir()
    target = root / "run.py"
    target.write_bytes(CURRENT)
    outside = tmp_path / "outside" / "secret"
    outside.parent.mkdir()
    outside.write_bytes(b"not yours\n")
    os.symlink(outside, backup_path(target))
    return target, outside


def _left_alone(target: Path, outside: Path) -> None:
    assert not target.is_symlink(), "the target became a link"
    assert target.read_bytes() == CURRENT
    assert outside.read_bytes() == b"not yours\n"
    assert {p.name for p in target.parent.iterdir()} == {"run.py", "run.py.eagle-backup"}


def test_a_planted_backup_link_is_refused_and_the_target_kept(planted: tuple[Path, Path]) -> None:
    target, outside = planted
    with pytest.raises(UnsafeBackupError, match=r"run\.py\.eagle-backup is a symbolic link"):
        rollback(target)
    _left_alone(target, outside)


def test_a_backup_link_to_a_folder_or_nowhere_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "run.py"
    target.write_bytes(CURRENT)
    for leads_to in (tmp_path, tmp_path / "missing"):
        backup_path(target).unlink(missing_ok=True)
        os.symlink(leads_to, backup_path(target))
        with pytest.raises(UnsafeBackupError, match="symbolic link"):
            rollback(target)
        assert target.read_bytes() == CURRENT


def test_a_redeploys_put_back_refuses_the_link_too(planted: tuple[Path, Path]) -> None:
    target, outside = planted
    with pytest.raises(UnsafeBackupError):
        put_back(Roots.of((str(target.parent),)), str(target))
    _left_alone(target, outside)


async def test_files_rollback_over_the_wire_refuses_a_planted_link(
    state_dir: Path, planted: tuple[Path, Path]
) -> None:
    target, outside = planted
    async with local_link(state_dir, PipelineConfig(deploy_roots=(str(target.parent),))) as link:
        with pytest.raises(AgentRequestError, match="symbolic link") as refused:
            await link.call(FILES_ROLLBACK, RollbackParams(str(target)), idempotency_key="r1")
    assert refused.value.code == "invalid_params"
    _left_alone(target, outside)
