"""The simulator stops on SIGTERM or Ctrl-C with requests in flight, as a server must.

It used to wait out aiohttp's 60 s for 64 generations in flight and ignore a second Ctrl-C:
only SIGKILL stopped it, and each test that stopped one waited for it.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent.simulator.server import SHUTDOWN_GRACE_S
from tests.support.simulator_process import SimulatorProcess, running_simulator
from tests.support.waits import wait_until_blocking

IN_FLIGHT = 8
SLOW = ("--decode-rate", "40", "--mean-tokens", "4000", "--sd-tokens", "1")


def generate(url: str) -> None:
    body = b'{"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 4000}}'
    request = urllib.request.Request(f"{url}/generate", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
    except (urllib.error.URLError, ConnectionError, OSError):
        pass  # cut by the stop: what the test wants


def running(url: str) -> int:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(int(float(v)) for v in re.findall(r"^sglang:num_running_reqs\S* (\S+)$", text, re.M))


def text_in(path: Path, text: str) -> None:
    assert wait_until_blocking(lambda: text in path.read_text(), 10), (
        f"{path.name} never said {text!r}"
    )


def with_requests_in_flight(simulator: SimulatorProcess) -> list[threading.Thread]:
    threads = [threading.Thread(target=generate, args=(simulator.url,)) for _ in range(IN_FLIGHT)]
    for thread in threads:
        thread.start()
    assert wait_until_blocking(lambda: running(simulator.url) >= IN_FLIGHT, 30), (
        "the requests never ran"
    )
    return threads


@pytest.mark.parametrize(("signals", "code"), [((signal.SIGTERM,), 0), ((signal.SIGINT,) * 2, 130)])
def test_a_stop_with_generations_in_flight_ends_within_its_grace(
    tmp_path: Path, signals: tuple[signal.Signals, ...], code: int
) -> None:
    with running_simulator(tmp_path, *SLOW) as simulator:
        threads = with_requests_in_flight(simulator)
        for signum in signals:  # two signals at once are one: a person presses again later
            simulator.process.send_signal(signum)
            text_in(simulator.log_file, "Stop signal:")
        try:
            assert simulator.process.wait(timeout=SHUTDOWN_GRACE_S + 10) == code
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {SHUTDOWN_GRACE_S + 10:g} s after {signals}")
        for thread in threads:
            thread.join(timeout=10)
