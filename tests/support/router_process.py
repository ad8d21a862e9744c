"""The real sglang-router (Rust, from the package index) on loopback, in front of simulators.

It is bound to 127.0.0.1 (its Prometheus exporter too) and given a local tokenizer folder as its model path (the simulators
report the same folder), so it never reaches for the network. Health checks run every second,
so the router notices dead and revived workers within seconds, not its default minutes.
Tests that need it skip, saying why, where the package is not installed or will not start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.json_http import health_ok
from tests.support.ports import free_port
from tests.support.simulator_process import LoopbackServer, stop_server
from tests.support.waits import wait_until_blocking

START_TIMEOUT_S = 60.0
ROUTER_FLAGS = (
    "--health-check-interval-secs", "1", "--health-failure-threshold", "1",
    "--health-success-threshold", "1", "--cb-timeout-duration-secs", "5", "--log-level", "warn",
)  # fmt: skip
"""Health checked every second and open circuits retried after 5 s (defaults: 60 s and 60 s)."""


def router_missing() -> str | None:
    """Why the real router cannot run here, or None when it can."""
    if importlib.util.find_spec("sglang_router") is None:
        return "sglang-router is not installed (pip install 'eagle-console[test]')"
    if importlib.util.find_spec("sglang_router.sglang_router_rs") is None:
        return "sglang-router is installed without its Rust core for this platform"
    return None


def require_router() -> None:
    """Skip the calling test, saying why, where the router cannot run."""
    if (reason := router_missing()) is not None:
        pytest.skip(reason)


class RouterProcess(LoopbackServer):
    """A running router and how to reach it."""

    def readiness(self) -> tuple[int, dict[str, object]]:
        """GET /readiness: its status and JSON body."""
        try:
            with urllib.request.urlopen(f"{self.url}/readiness", timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def wait_listening(self) -> None:
        """Until the router answers its (always 200) /health."""
        up = wait_until_blocking(
            lambda: self.process.poll() is not None or health_ok(self.url, 5), START_TIMEOUT_S, 0.1
        )
        if not up or self.process.poll() is not None:
            raise RuntimeError(f"the router did not start: {self.log_file.read_text()[-2000:]}")

    def wait_ready(self, workers: int, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until /readiness reports `workers` healthy workers."""

        def ready() -> bool:
            with contextlib.suppress(OSError, ValueError):
                status, body = self.readiness()
                return status == 200 and body.get("healthy_workers") == workers
            return False

        wait_until_blocking(lambda: ready() or self.process.poll() is not None, timeout_s, 0.1)
        if not ready():
            raise RuntimeError(
                f"the router never had {workers} healthy workers: {self.log_file.read_text()[-2000:]}"
            )


@contextlib.contextmanager
def running_router(
    folder: Path, worker_urls: list[str], tokenizer: Path, *, ready_workers: int | None = None
) -> Iterator[RouterProcess]:
    """Start `python -m sglang_router.launch_router` on loopback; stop it after."""
    require_router()
    folder.mkdir(parents=True, exist_ok=True)
    port, log_file = free_port(), folder / "router.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", NO_PROXY="*")
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
             "--port", str(port), "--worker-urls", *worker_urls, "--model-path", str(tokenizer),
             "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()),
             *ROUTER_FLAGS],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    router = RouterProcess(process, port, log_file)
    try:
        router.wait_listening()
        if ready_workers:
            router.wait_ready(ready_workers)
        yield router
    finally:
        stop_server(process)
