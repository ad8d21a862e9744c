"""The SGLang simulator as a real subprocess on a loopback port, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.waits import wait_until_blocking

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0


@dataclass
class LoopbackServer:
    """A server running as a subprocess on a loopback port, and how to reach it."""

    process: subprocess.Popen[bytes]
    port: int
    log_file: Path

    @property
    def url(self) -> str:
        """The base URL to pass as --server."""
        return f"http://127.0.0.1:{self.port}"


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL if it has not exited 10 s later."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class SimulatorProcess(LoopbackServer):
    """A running simulator and how to reach it."""

    def set_faults(self, **faults: float) -> dict[str, Any]:
        """Change faults through the simulator's admin endpoint."""
        request = urllib.request.Request(
            f"{self.url}/admin/faults", data=json.dumps(faults).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer


def agent_env() -> dict[str, str]:
    """The environment a subprocess needs to import this checkout's agent."""
    return dict(os.environ, PYTHONPATH=str(REPO))


@contextlib.contextmanager
def running_simulator(folder: Path, *args: str) -> Iterator[SimulatorProcess]:
    """Start `python -m agent.simulator --port 0 ARGS`, wait until it listens, stop it after."""
    folder.mkdir(parents=True, exist_ok=True)
    port_file, log_file = folder / "sim.port", folder / "sglang.log"
    port_file.unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.simulator", "--port", "0", "--port-file", str(port_file),
         "--log-file", str(log_file), *args],
        env=agent_env(), stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until_blocking(
            lambda: port_file.exists() or process.poll() is not None, START_TIMEOUT_S
        )
        if not port_file.exists():
            raise RuntimeError(f"simulator did not start (exit {process.poll()})")
        yield SimulatorProcess(process, int(port_file.read_text()), log_file)
    finally:
        stop_server(process)
