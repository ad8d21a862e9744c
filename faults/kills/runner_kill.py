"""SIGKILL the inference runner at random moments while it appends records, then resume it.

The real runner (`python -m agent.pipeline.inference`) generates against the SGLang simulator,
whose answers run from a few hundred bytes to ~200 KB per record, so records of every size are
being appended when a kill lands. After each kill the scenario reads the complete lines (the
records the runner acknowledged by writing them whole) and the torn tail, if any; after every
few kills it also plants a torn tail (the first bytes of a real record) as a writer killed
mid-line leaves one. Each resume must move the torn tail it finds to `raw_responses.torn`, and
a last uninterrupted run must finish the dataset with every prompt present exactly once.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from faults.harness.responses import ResponsesFollower, read_final, size_buckets, write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import start_runner, status
from tests.support.simulator_process import running_simulator

TITLE = "Runner SIGKILLed mid-append, then resumed"

SIMULATOR_ARGS = (
    "--speed", "1000", "--per-request-rate", "100", "--decode-rate", "150",
    "--mean-tokens", "800", "--sd-tokens", "1000", "--runaway-share", "0.01",
    "--context-length", "65536",
)  # fmt: skip
"""~150k tokens/s in all: answers of 1-4,000 tokens (0.3-22 KB), 1 % run to 36,000 (~200 KB)."""
CONCURRENCY = 4
RUNNER_ARGS = ("--concurrency", str(CONCURRENCY), "--max-new-tokens", "36000")
PENDING_PROMPTS = 80
"""Prompts kept waiting, so no run finishes before its kill; the last run finishes them."""
PLANT_EVERY = 5
SHORT_LIFE_S, LONG_LIFE_S, LONG_LIFE_SHARE = 0.25, 1.5, 0.15
"""Most kills land within 0.25 s of the resume; some later, so ~200 KB answers complete too."""
RESUME_TIMEOUT_S = 60.0
FINAL_RUN_TIMEOUT_S = 120.0
POLL_S = 0.02


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Kill and resume the runner `scale.pick(200, 12)` times, then let it finish."""
    result = ScenarioResult("runner_kill", TITLE, seed)
    campaign = _KillCampaign(workdir, random.Random(seed), result)
    await asyncio.to_thread(campaign.run, scale.pick(200, 12), seed)
    return result


class _KillCampaign:
    """The kills, the observations between them, and the final checks."""

    def __init__(self, workdir: Path, rng: random.Random, result: ScenarioResult) -> None:
        self.workdir, self.rng, self.result = workdir, rng, result
        self.folder = workdir / "B1_kill"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.follower = ResponsesFollower(self.folder / "raw_responses.jsonl")
        self.torn_path = self.folder / "raw_responses.torn"
        self.acknowledged: set[str] = set()
        self.prompt_ids: list[str] = []
        self.torn_tails: list[bytes] = []
        self.pending_tail = b""
        self.torn_size = 0
        self.natural_tails = self.planted_tails = 0
        self.first_record_s: list[float] = []

    def run(self, kills: int, seed: int) -> None:
        """Every kill cycle, the final run and the checks, with the simulator up throughout."""
        with running_simulator(self.workdir / "sim", *SIMULATOR_ARGS, "--seed", str(seed)) as sim:
            cycle = 0
            while self.result.faults < kills and cycle < 2 * kills:
                self._kill_cycle(sim.url, cycle)
                cycle += 1
            self._final_run(sim.url)
            requests = _requests_sent(sim.url)
        self._check_final()
        self._write_notes(requests)

    # ------------------------------------------------------------ one cycle

    def _kill_cycle(self, url: str, cycle: int) -> None:
        self._top_up_prompts()
        started = time.monotonic()
        runner = start_runner(self.folder, url, *RUNNER_ARGS)
        try:
            if self._resumed(runner, started, f"cycle {cycle}"):
                self._live(runner, started, self._life_s())
        finally:
            runner.kill()
            if runner.wait() == -9:
                self.result.faults += 1
        self._observe(cycle)

    def _top_up_prompts(self) -> None:
        if len(self.prompt_ids) - len(self.acknowledged) < PENDING_PROMPTS:
            count = len(self.acknowledged) + 2 * PENDING_PROMPTS
            self.prompt_ids = write_prompts(self.folder / "prompts.jsonl", count)

    def _life_s(self) -> float:
        if self.rng.random() < LONG_LIFE_SHARE:
            return self.rng.uniform(SHORT_LIFE_S, LONG_LIFE_S)
        return self.rng.uniform(0.0, SHORT_LIFE_S)

    def _resumed(self, runner: subprocess.Popen[str], started: float, trial: str) -> bool:
        """Wait for this runner's first runner.json (written right after resume); check the repair."""
        deadline = started + RESUME_TIMEOUT_S
        while (record := status(self.folder)).get("pid") != runner.pid:
            if runner.poll() is not None or time.monotonic() > deadline:
                self.result.violate(
                    f"{trial}: the runner did not resume (exit {runner.poll()}): {self._log_tail()}"
                )
                return False
            time.sleep(POLL_S)
        self.result.recovery_s.append(time.monotonic() - started)
        self._check_repair(record, trial)
        return True

    def _check_repair(self, record: dict[str, Any], trial: str) -> None:
        tail, moved = self.pending_tail, record.get("torn_bytes_moved")
        torn = self.torn_path.read_bytes() if self.torn_path.exists() else b""
        if tail and (moved != len(tail) or torn[self.torn_size :] != tail + b"\n"):
            self.result.violate(
                f"{trial}: the torn tail of {len(tail)} bytes seen after the kill was not moved "
                f"to {self.torn_path.name} (runner.json: {moved} bytes moved)"
            )
        elif tail:
            self.result.repaired += 1
        elif moved:
            self.result.violate(f"{trial}: resume moved {moved} bytes though no torn tail was seen")
        self.torn_size, self.pending_tail = len(torn), b""

    def _live(self, runner: subprocess.Popen[str], started: float, life_s: float) -> None:
        """Let the runner work for `life_s`, noting when its first new record lands."""
        deadline, seen = time.monotonic() + life_s, False
        while (left := deadline - time.monotonic()) > 0 and runner.poll() is None:
            if not seen and self._new_record_landed():
                self.first_record_s.append(time.monotonic() - started)
                seen = True
            time.sleep(min(POLL_S, left))

    def _new_record_landed(self) -> bool:
        path = self.follower.path
        if not path.exists() or path.stat().st_size <= self.follower.end:
            return False
        with path.open("rb") as handle:
            handle.seek(self.follower.end)
            return b"\n" in handle.read(256 * 1024)

    def _observe(self, cycle: int) -> None:
        seen = self.follower.observe()
        self.acknowledged.update(seen.new_ids)
        for offset in seen.bad_offsets:
            self.result.violate(f"cycle {cycle}: a complete line at byte {offset} is no record")
        tail = seen.torn_tail
        if tail:
            self.natural_tails += 1
        elif cycle % PLANT_EVERY == PLANT_EVERY - 1 and self.follower.spans:
            tail = self.follower.plant_torn_tail(self.rng)
            self.planted_tails += 1
        if tail:
            self.torn_tails.append(tail)
        self.pending_tail = tail

    # ------------------------------------------------------------ the end

    def _final_run(self, url: str) -> None:
        started = time.monotonic()
        runner = start_runner(self.folder, url, *RUNNER_ARGS)
        try:
            if not self._resumed(runner, started, "final run"):
                return
            code = runner.wait(timeout=FINAL_RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.result.violate(f"final run: not done in {FINAL_RUN_TIMEOUT_S:.0f} s")
            return
        finally:
            runner.kill()
            runner.wait()
        reason = status(self.folder).get("stop_reason")
        if code != 0 or reason != "exhausted":
            self.result.violate(f"final run: exit {code}, stop_reason {reason}: {self._log_tail()}")

    def _check_final(self) -> None:
        final, result = read_final(self.follower.path), self.result
        result.attempted, result.acknowledged = len(self.prompt_ids), len(self.acknowledged)
        result.lost = len(self.acknowledged - final.ids.keys())
        result.duplicated = sum(count - 1 for count in final.ids.values())
        result.corrupt = final.corrupt_lines
        missing = set(self.prompt_ids) - final.ids.keys()
        strangers = final.ids.keys() - set(self.prompt_ids)
        if missing or strangers:
            result.violate(
                f"the final dataset is not the prompts: {len(missing)} missing, "
                f"{len(strangers)} ids that are no prompt"
            )
        torn = self.torn_path.read_bytes() if self.torn_path.exists() else b""
        if torn != b"".join(tail + b"\n" for tail in self.torn_tails):
            result.violate(f"{self.torn_path.name} is not exactly the torn tails seen, in order")
        result.notes.append(
            f"record sizes: {final.smallest_bytes:,}-{final.largest_bytes:,} bytes in the final "
            f"file; acknowledged between kills: {size_buckets(self.follower.sizes)}"
        )

    def _write_notes(self, requests: int | None) -> None:
        kills, notes = max(self.result.faults, 1), self.result.notes
        notes.append(
            f"torn tails: {self.natural_tails} left by the runner itself "
            f"({self.natural_tails / kills:.1%} of kills: it writes each record in one write "
            f"call) + {self.planted_tails} planted after every {PLANT_EVERY}th kill (the first "
            f"bytes of a real record); {self.result.repaired} moved aside by the next resume"
        )
        if requests is not None:
            self._note_rework(requests)
        first = statistics.median(self.first_record_s) if self.first_record_s else float("nan")
        notes.append(
            "recovery_s: from starting the runner to its first runner.json, written right after "
            "resume (the torn-tail repair and its log line); its first new complete record came "
            f"{first:.2f} s after start (p50 of the {len(self.first_record_s)} runs that got one "
            "before their kill)"
        )

    def _note_rework(self, requests: int) -> None:
        """Requests re-sent; at most the ones in flight can be lost to each kill."""
        resent, kills = requests - len(self.prompt_ids), max(self.result.faults, 1)
        if resent > CONCURRENCY * self.result.faults:
            self.result.violate(f"{resent} requests re-sent: over {CONCURRENCY} in flight per kill")
        self.result.notes.append(
            f"rework: {requests:,} requests for {len(self.prompt_ids):,} prompts, {resent:,} "
            f"re-sent ({resent / kills:.1f} per kill, with {CONCURRENCY} in flight)"
        )

    def _log_tail(self) -> str:
        log = self.folder / "runner.log"
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        return " | ".join(lines[-3:]) or "no runner.log"


def _requests_sent(url: str) -> int | None:
    """Generate requests the simulator received, from its /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.search(r"^sglang:num_requests_total\{.*\} ([0-9.]+)$", text, re.MULTILINE)
    return int(float(found[1])) if found else None
