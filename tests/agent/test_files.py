"""File installs: confined to the deploy roots, verified, atomic under SIGKILL, and reversible."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.files import (
    FileError,
    NothingToRollBackError,
    Roots,
    backup_path,
    install,
    remove_stale_uploads,
    rollback,
    sha256_of,
)
from agent.protocol import (
    FILES_HASH,
    FILES_INSTALL,
    FILES_ROLLBACK,
    FilesHashParams,
    FilesHashResult,
    InstallParams,
    InstallResult,
    PipelineConfig,
    RollbackParams,
)
from console.link.agent_link import AgentRequestError
from tests.support.operations import local_link
from tests.support.simulator_process import agent_env


def stage(target: Path, content: bytes, tag: str = "x") -> tuple[Path, str]:
    staged = target.with_name(f".{target.name}.eagle-upload-{tag}")
    staged.write_bytes(content)
    return staged, hashlib.sha256(content).hexdigest()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "deploy"
    (folder / "scripts").mkdir(parents=True)
    return folder


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("relative/run.py", "absolute path"),
        ("{root}/scripts/../../etc/passwd", "without '..'"),
        ("/etc/passwd", "outside the deploy roots"),
        ("{root}/escape/run.py", "outside the deploy roots"),
        ("{root}/link-to-outside", "outside the deploy roots"),
        ("{root}/scripts/run.py\0.txt", "cannot hold a NUL byte"),
    ],
)
def test_paths_outside_the_roots_are_refused(
    root: Path, tmp_path: Path, path: str, fragment: str
) -> None:
    (root / "escape").symlink_to(tmp_path)
    (root / "link-to-outside").symlink_to("/etc/hostname")
    with pytest.raises(FileError, match=fragment):
        Roots.of((str(root),)).confine(path.format(root=root))


def test_no_roots_means_no_installs(root: Path) -> None:
    with pytest.raises(FileError, match="no deploy roots"):
        Roots.of(()).confine(str(root / "x.py"))


def test_install_keeps_a_backup_preserves_mode_and_rolls_back(root: Path) -> None:
    target = root / "scripts" / "run.py"
    target.write_bytes(b"old\n")
    staged, digest = stage(target, b"new\n")

    previous, backup = install(target, staged, digest, 0o750)

    assert target.read_bytes() == b"new\n"
    assert previous == hashlib.sha256(b"old\n").hexdigest()
    assert backup == str(backup_path(target))
    assert backup_path(target).read_bytes() == b"old\n"
    assert target.stat().st_mode & 0o777 == 0o750
    assert not staged.exists()
    assert rollback(target) == previous
    assert target.read_bytes() == b"old\n"


def test_an_install_after_a_rollback_leaves_no_temp_name_behind(root: Path) -> None:
    target = root / "scripts" / "run.py"
    target.write_bytes(b"v1\n")
    for version in (b"v2\n", b"v3\n"):
        install(target, *stage(target, version, tag=version.decode().strip()), 0o644)
        if version == b"v2\n":
            rollback(target)  # the target and its backup are now one file under two names
    assert target.read_bytes() == b"v3\n"
    assert backup_path(target).read_bytes() == b"v1\n"
    names = sorted(p.name for p in target.parent.iterdir())
    assert names == sorted([target.name, backup_path(target).name])


def test_a_rollback_to_the_bytes_the_file_already_has_says_there_is_nothing_to_roll_back(
    root: Path,
) -> None:
    """Once, `b` again after a rollback "rolled back" a file to the bytes it already had."""
    target = root / "scripts" / "run.py"
    target.write_bytes(b"old\n")
    install(target, *stage(target, b"new\n"), None)
    rollback(target)
    with pytest.raises(NothingToRollBackError, match="nothing to roll back"):
        rollback(target)
    assert target.read_bytes() == b"old\n"


def test_a_corrupted_upload_changes_nothing(root: Path) -> None:
    target = root / "scripts" / "run.py"
    target.write_bytes(b"old\n")
    staged, _ = stage(target, b"new\n")
    with pytest.raises(FileError, match="expected"):
        install(target, staged, "0" * 64, None)
    assert target.read_bytes() == b"old\n"
    assert not staged.exists()


def test_the_staged_file_must_sit_beside_its_target(root: Path) -> None:
    target = root / "scripts" / "run.py"
    elsewhere = root / "other.py"
    elsewhere.write_bytes(b"x")
    with pytest.raises(FileError, match="beside it"):
        install(target, elsewhere, hashlib.sha256(b"x").hexdigest(), None)


def test_leftover_uploads_are_cleaned_up(root: Path) -> None:
    target = root / "scripts" / "run.py"
    old_staged, _ = stage(target, b"half", tag="dead")
    os.utime(old_staged, (time.time() - 7200, time.time() - 7200))
    fresh, _ = stage(target, b"in progress", tag="live")
    assert remove_stale_uploads(target.parent) == [old_staged]
    assert fresh.exists()


INSTALL_LOOP = """
import hashlib, sys
from pathlib import Path
from agent.files import install
target = Path(sys.argv[1])
versions = [b"A" * 2_000_000, b"B" * 2_000_000]
for n in range(100000):
    content = versions[n % 2]
    staged = target.with_name(f".{target.name}.eagle-upload-{n}")
    staged.write_bytes(content)
    install(target, staged, hashlib.sha256(content).hexdigest(), None)
"""


@pytest.mark.slow
def test_sigkill_during_installs_leaves_the_target_old_or_new(root: Path) -> None:
    target = root / "scripts" / "model.bin"
    target.write_bytes(b"A" * 2_000_000)
    allowed = {
        hashlib.sha256(b"A" * 2_000_000).hexdigest(),
        hashlib.sha256(b"B" * 2_000_000).hexdigest(),
    }
    rng = random.Random(7)
    for _ in range(30):
        process = subprocess.Popen(
            [sys.executable, "-c", INSTALL_LOOP, str(target)], env=agent_env()
        )
        time.sleep(rng.uniform(0.1, 0.4))  # the fault: a kill at a random point of the loop
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert sha256_of(target) in allowed
    assert any(target.parent.glob(".model.bin.eagle-upload-*")), "kills mid-upload leave temps"


async def test_installs_through_the_daemon(root: Path, state_dir: Path, tmp_path: Path) -> None:
    target = root / "scripts" / "run.py"
    target.write_bytes(b"print('old')\n")
    async with local_link(state_dir, PipelineConfig(deploy_roots=(str(root),))) as link:
        staged, digest = stage(target, b"print('new')\n")
        result: InstallResult = await link.call(
            FILES_INSTALL,
            InstallParams(str(target), str(staged), digest, 0o644),
            idempotency_key="i1",
        )
        hashes: FilesHashResult = await link.call(
            FILES_HASH, FilesHashParams((str(target), str(root / "none")))
        )
        with pytest.raises(AgentRequestError, match="outside the deploy roots"):
            await link.call(FILES_HASH, FilesHashParams((str(tmp_path / "secret"),)))
        back: InstallResult = await link.call(
            FILES_ROLLBACK, RollbackParams(str(target)), idempotency_key="r1"
        )
    assert result.sha256 == digest
    assert [state.sha256 for state in hashes.files] == [digest, None]
    assert back.sha256 == result.previous_sha256
    assert target.read_bytes() == b"print('old')\n"
