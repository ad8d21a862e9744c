"""The command's first step: a dependency's Python warnings reach the console's log, not the screen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import REPO

ROUTED_FIRST = """
import sys
import console.cli.launch
loaded = {"asyncssh", "cryptography", "rich", "textual", "torch", "aiohttp"} & set(sys.modules)
print(sorted(loaded))
"""

DEPENDENCY_WARNS = """
import sys, warnings
from pathlib import Path
from console.cli.launch import send_warnings_to_log
send_warnings_to_log(Path(sys.argv[1]))
warnings.warn_explicit(
    "DSA is deprecated\\x1b[2J and support will be removed", UserWarning,
    "asyncssh/crypto/misc.py", 32, module="asyncssh.crypto.misc",
)
"""


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
        timeout=60, env=dict(env or os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip


def test_warnings_are_routed_before_any_dependency_is_imported() -> None:
    result = run_python(ROUTED_FIRST)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_dependency_warning_goes_to_the_log_sanitised_and_never_to_stderr(
    tmp_path: Path,
) -> None:
    log = tmp_path / "state" / "eagle-console" / "console.log"  # its folder made at the first line
    result = run_python(DEPENDENCY_WARNS, str(log))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    text = log.read_text()
    assert "asyncssh/crypto/misc.py:32: UserWarning: DSA is deprecated" in text
    assert "\x1b" not in text  # a warning's text is sanitised like host text


def test_a_log_that_cannot_be_written_drops_the_warning_silently(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run_python(DEPENDENCY_WARNS, str(blocker / "console.log"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_command_and_python_m_console_start_at_the_launch() -> None:
    scripts = (REPO / "pyproject.toml").read_text()
    assert 'eagle-console = "console.cli.launch:main"' in scripts
    assert "from console.cli.launch import main" in (REPO / "console" / "__main__.py").read_text()


def test_a_headless_command_prints_only_its_own_line(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONWARNINGS="always")
    result = subprocess.run(
        [sys.executable, "-m", "console", "--config", str(tmp_path / "missing.toml"), "status"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
        env=dict(env, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("eagle-console: config error:")


BOTH_WRITE = """
import logging, sys, warnings
from pathlib import Path
from console.cli.launch import send_warnings_to_log
from console.ui import log_file
log_file.MAX_BYTES = 4096  # rotate often
path = Path(sys.argv[1])
send_warnings_to_log(path)
attached = log_file.attach_log_file(path)
for n in range(60):
    warnings.warn_explicit(f"warning {n} " + "w" * 100, UserWarning, "dep.py", n, module="dep")
    logging.getLogger("console.ui.app").warning("failure %d %s", n, "f" * 100)
log_file.detach_log_file(attached)
print(len(logging.getLogger("py.warnings").handlers), attached is logging.getLogger("py.warnings").handlers[0])
"""


def test_the_tui_and_the_warnings_write_one_rotating_file_through_one_handler(
    tmp_path: Path,
) -> None:
    """Two handlers rotating one file each renamed it under the other, which wrote on into the
    old copy: lines were lost past the backups, or landed out of order."""
    log = tmp_path / "console.log"
    result = run_python(BOTH_WRITE, str(log))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "True"]
    files = sorted(tmp_path.glob("console.log*"))
    assert [f.name for f in files] == ["console.log", "console.log.1", "console.log.2"]
    assert all(f.stat().st_size <= 4096 + 300 for f in files), "each rotated at its size"
    newest = log.read_text()
    assert "failure 59" in newest
    assert "warning 59" in newest


def test_ctrl_c_while_the_command_starts_ends_it_with_130_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At half a second into `make demo`, Ctrl+C printed a traceback from an import."""
    import types

    from console.cli import launch

    def interrupted() -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "console.cli.main", types.SimpleNamespace(main=interrupted))
    assert launch.main() == 130


def test_a_headless_failure_is_in_the_console_log_too(tmp_path: Path) -> None:
    """`events kimi` once failed with nothing in console.log to say more."""
    config = tmp_path / "eagle-console.toml"
    config.write_text('[hosts.kimi]\nssh = "root@127.0.0.1:1"\n')
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "console", "--config", str(config), "jobs", "kimi"],
        capture_output=True, text=True, cwd=REPO, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "cannot reach" in result.stderr
    log = (tmp_path / "state" / "eagle-console" / "console.log").read_text()
    assert "jobs failed: kimi: cannot reach" in log
