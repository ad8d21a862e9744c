"""Workers behind the real sglang-router killed mid-run: one at a time, then every one at once.

The runner generates a dataset through sglang-router 0.3.2 (its Rust binary, from the package
index) in front of three SGLang simulators. Each round SIGKILLs one worker and brings it back,
then SIGKILLs all three: the router answers 503 no_available_workers, which is an outage to wait
out, not a reason to fail prompts. The runner must pause (runner.json says waiting_for_server),
resume when the workers are back, and finish with every prompt exactly once: nothing lost,
nothing twice, no prompt in errors.jsonl.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.simulator.tokenizer import build_tokenizer
from faults.result import Scale, ScenarioResult
from tests.support.ports import free_port
from tests.support.router_process import router_missing, running_router
from tests.support.runner_files import response_ids, start_runner, status, write_id_prompts
from tests.support.simulator_process import SimulatorProcess, running_simulator

TITLE = "sglang-router: a worker killed, then every worker, mid-run"
WORKERS = 3
SIMULATOR_ARGS = ("--speed", "1", "--mean-tokens", "80", "--sd-tokens", "30")
"""About 1 s per answer, ~12 answers a second with 12 in flight: every fault lands mid-run."""
RUNNER_ARGS = ("--concurrency", "12", "--max-retries", "3")
PROGRESS_BETWEEN_FAULTS = 25
"""New responses to wait for before the next fault, so each one lands mid-run."""
STEP_TIMEOUT_S = 90.0
POLL_S = 0.05


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(6, 1)` rounds of one kill and one outage over a dataset sized to last."""
    result = ScenarioResult("router_outage", TITLE, seed)
    if (reason := router_missing()) is not None:
        result.violate(f"cannot run: {reason}")
        return result
    rounds = scale.pick(6, 1)
    campaign = _Campaign(workdir, random.Random(seed), result, prompts=200 + 200 * rounds)
    await asyncio.to_thread(campaign.run, rounds)
    return result


class _Campaign:
    """The workers, the router, the runner, the faults and the checks."""

    def __init__(
        self, workdir: Path, rng: random.Random, result: ScenarioResult, prompts: int
    ) -> None:
        self.workdir, self.rng, self.result = workdir, rng, result
        self.folder = workdir / "dataset"
        self.ids = write_id_prompts(self.folder, prompts)
        self.tokenizer = build_tokenizer(workdir / "tokenizer")
        self.ports = [free_port() for _ in range(WORKERS)]
        self.stack = contextlib.ExitStack()
        self.sims: dict[int, SimulatorProcess] = {}
        self.starts = 0

    def run(self, rounds: int) -> None:
        """Start everything, inject the faults, let the run finish, check what it left."""
        urls = [f"http://127.0.0.1:{port}" for port in self.ports]
        with self.stack, running_router(self.workdir / "router", urls, self.tokenizer) as router:
            for port in self.ports:
                self._start(port)
            router.wait_ready(WORKERS)
            runner = start_runner(self.folder, router.url, *RUNNER_ARGS)
            try:
                for number in range(rounds):
                    self._round(runner, number)
                code = runner.wait(timeout=STEP_TIMEOUT_S * 2)
            finally:
                runner.kill()
                runner.wait()
        self._check(code)

    def _round(self, runner: subprocess.Popen[str], number: int) -> None:
        self._progress(runner, f"round {number}: before the kill")
        victim = self._busiest()
        self.sims[victim].process.kill()
        self.result.faults += 1
        self._progress(runner, f"round {number}: with worker {victim} dead")
        self._start(victim)
        self._progress(runner, f"round {number}: before the outage")
        for port in self.ports:
            self.sims[port].process.kill()
        self.result.faults += 1
        killed_at = time.monotonic()
        self._wait(
            lambda s: s.get("state") == "waiting_for_server", f"round {number}: pause", runner
        )
        self.result.detection_s.append(time.monotonic() - killed_at)
        back_at, before = time.monotonic(), len(response_ids(self.folder, allow_torn_tail=True))
        for port in self.ports:
            self._start(port)
        self._wait(lambda s: s.get("responses", 0) > before, f"round {number}: resume", runner)
        self.result.recovery_s.append(time.monotonic() - back_at)

    def _busiest(self) -> int:
        """The worker running the most requests (the router's policy may favour one)."""
        running = {port: _running(self.sims[port].url) for port in self.ports}
        top = max(running.values())
        return self.rng.choice([port for port, count in running.items() if count == top])

    def _start(self, port: int) -> None:
        self.starts += 1
        folder = self.workdir / f"worker-{port}-{self.starts}"
        self.sims[port] = self.stack.enter_context(
            running_simulator(
                folder, "--port", str(port), "--model-path", str(self.tokenizer), *SIMULATOR_ARGS
            )
        )

    def _progress(self, runner: subprocess.Popen[str], what: str) -> None:
        target = status(self.folder).get("responses", 0) + PROGRESS_BETWEEN_FAULTS
        if target >= len(self.ids):
            self.result.violate(f"{what}: the dataset is too small for the faults planned")
        self._wait(lambda s: s.get("responses", 0) >= min(target, len(self.ids)), what, runner)

    def _wait(
        self, done: Callable[[dict[str, Any]], bool], what: str, runner: subprocess.Popen[str]
    ) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while time.monotonic() < deadline:
            if done(status(self.folder)):
                return
            if runner.poll() is not None:
                raise RuntimeError(f"{what}: the runner exited ({runner.returncode}) too early")
            time.sleep(POLL_S)
        raise TimeoutError(f"{what}: nothing happened in {STEP_TIMEOUT_S:.0f} s")

    def _check(self, code: int) -> None:
        result, final = self.result, response_ids(self.folder)
        result.attempted, result.acknowledged = len(self.ids), sum(final.values())
        result.lost = len(set(self.ids) - final.keys())
        result.duplicated = sum(count - 1 for count in final.values())
        failed = _error_lines(self.folder / "errors.jsonl")
        if code != 0:
            result.violate(f"the runner exited {code}: {_log_tail(self.folder)}")
        if failed:
            result.violate(f"{len(failed)} prompt(s) marked failed: {failed[0][:200]}")
        record = status(self.folder)
        result.notes.append(
            f"runner: {record.get('retries')} retries, {record.get('errors')} errors, "
            f"{len(failed)} prompts in errors.jsonl; detection_s: kill of every worker to "
            "runner.json saying waiting_for_server; recovery_s: workers back to the next response"
        )


def _running(url: str) -> float:
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return 0.0
    found = re.findall(r"^sglang:num_running_reqs\{.*\} ([0-9.]+)$", text, re.M)
    return sum(float(value) for value in found)


def _error_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _log_tail(folder: Path) -> str:
    log = folder / "runner.log"
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return " | ".join(lines[-3:]) or "no runner.log"
