"""`eagle-console` run as in `tests.support.cli_runs`, by a test that needs it to succeed."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_runs import CliResult, run_cli


async def run_cli_ok(*args: str, config: Path, stdin: bytes = b"") -> CliResult:
    """`run_cli`, failing the test (with what the command wrote) unless it exited 0."""
    result = await run_cli(*args, config=config, stdin=stdin)
    assert result.code == 0, result.stdout + result.stderr
    return result
