"""`eagle-console` run as a user would, without a terminal, against a config with one host."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.ssh_servers import SshEndpoint

CLI_TIMEOUT_S = 180
"""A bound, not an expectation: doctor imports transformers on the host, slow beside 5 busy workers."""


@dataclass(frozen=True)
class CliResult:
    """What one eagle-console run printed and returned."""

    code: int
    stdout: str
    stderr: str


async def run_cli(*args: str, config: Path, stdin: bytes = b"") -> CliResult:
    """Run `python -m console --config CONFIG ARGS...` as a user would, without a terminal."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console", "--config", str(config), *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), CLI_TIMEOUT_S)
    except TimeoutError:  # ended here, so its pipes and sockets do not leak into the next test
        process.kill()
        await process.wait()
        raise AssertionError(f"eagle-console {' '.join(args)} ran past {CLI_TIMEOUT_S} s") from None
    assert process.returncode is not None
    return CliResult(process.returncode, out.decode(), err.decode())


def write_config(
    tmp_path: Path, endpoint: SshEndpoint, state_dir: Path, root: Path, **overrides: str
) -> Path:
    """An eagle-console.toml with one host, `gpu`, reached through `endpoint`."""
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        endpoint.config_toml(
            "gpu",
            state_dir=state_dir,
            datasets_root=root,
            **({"python": sys.executable} | overrides),
        )
    )
    return config
