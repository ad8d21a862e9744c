"""Hostile answers: every kind of broken or malicious model-server answer against the real runner.

(a) One run per API (native /generate, /v1/completions, /v1/chat/completions) over prompts that
each name the hostile answer they get on every try (tests/support/hostile_answer_server.py):
negative, boolean, trillion and 2**22 token counts, ids as strings, -1 or past int32, a NaN, a
list or a 100,000-deep meta_info, a 17 MB body, a line just past the 16 MiB limit, a server that
aborts every request, bodies cut mid-way, a 1 GB body on a 500, `choices: ["oops"]`, a number for
`delta.content`, stream events that are JSON lists. Checks: the run ends by itself (exit 0);
every good answer is a record and every record is a response by the reader's definition; every
hostile prompt has an errors.jsonl line with its reason; the runner's peak memory stays small.
(b) SIGINT while the runner is busy with the worst of them (retried many times over): it stops
within STOP_LIMIT_S, and the next run resumes without --repair.
(c) A body that drips a byte a second: cut at --request-timeout.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
import time
from pathlib import Path

from agent.datasets.response_lines import parse_response_line
from faults.harness.memory import watch_peak_mb
from faults.result import Scale, ScenarioResult
from tests.support.hostile_answer_server import (
    CHAT,
    COMPLETIONS,
    NATIVE,
    SPECIAL,
    hostile_answer_server,
    write_kind_prompts,
)
from tests.support.runner_files import runner_command, status
from tests.support.simulator_process import agent_env
from tests.support.waits import wait_until_blocking

TITLE = "Hostile answers: every kind of broken model-server answer against the real runner"
RUN_TIMEOUT_S = 240.0
RUNNER_RSS_LIMIT_MB = 400.0
STOP_LIMIT_S = 10.0
DRIP_TIMEOUT_S = 2.0
GOOD = {"good", "good_completion", "good_chat"}
RUNS = (
    ("sglang", [*NATIVE, *(kind for kind in SPECIAL if kind != "slow_drip")]),
    ("openai-completions", list(COMPLETIONS)),
    ("openai-chat", list(CHAT)),
)
BUSY_KINDS = ["tokens_negative", "tokens_2_22", "line_past_limit", "endless_500", "meta_deep"]
"""The answers that hung, froze or bloated the runner before; retried over and over in (b)."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three parts against one hostile server."""
    result = ScenarioResult("hostile_answers", TITLE, seed)
    tokenizer = workdir / "tokenizer"
    await asyncio.to_thread(_build_tokenizer, tokenizer)
    with hostile_answer_server() as (url, _):
        for api, kinds in RUNS:
            chat = ("--tokenizer", str(tokenizer), "--reencode")  # its chat answers are text only
            extra = chat if api == "openai-chat" else ()
            copies = scale.pick(full=4, quick=1)
            await asyncio.to_thread(
                _kinds_part, result, workdir / api, url, api, kinds, copies, extra
            )
        await asyncio.to_thread(_stop_part, result, workdir / "stop", url, scale.pick(20, 4))
        await asyncio.to_thread(_drip_part, result, workdir / "drip", url)
    return result


def _build_tokenizer(folder: Path) -> None:
    from tests.support.export_data import build_think_tokenizer

    build_think_tokenizer(folder)


def _kinds_part(
    result: ScenarioResult, folder: Path, url: str, api: str, kinds: list[str], copies: int,
    extra: tuple[str, ...],
) -> None:  # fmt: skip
    ids = write_kind_prompts(folder, kinds, copies)
    good = {i for i in ids if i.split(".")[0] in GOOD}
    started = time.monotonic()
    runner = subprocess.Popen(
        runner_command(folder, url, "--api", api, "--max-retries", "1", *extra),
        env=agent_env(), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    peak_mb = watch_peak_mb(runner, RUN_TIMEOUT_S)
    took = time.monotonic() - started
    result.attempted += len(ids)
    result.faults += len(ids) - len(good)
    written, bad = _records(folder)
    result.acknowledged += len(written)
    result.lost += len(good - written)
    result.corrupt += bad + len(written - good)
    unmarked = set(ids) - good - _marked(folder)
    result.lost += len(unmarked)
    if unmarked:
        result.violate(f"{api}: no errors.jsonl line for {sorted(unmarked)[:5]}")
    if runner.returncode != 0:
        result.violate(f"{api}: the run ended with exit {runner.returncode}")
    if peak_mb > RUNNER_RSS_LIMIT_MB:
        result.violate(f"{api}: runner peak memory {peak_mb:.0f} MB")
    result.recovery_s.append(took)
    result.notes.append(
        f"{api}: {len(ids)} cases ({len(kinds) - 1} hostile kinds x {copies}), {len(written)} "
        f"records, {bad} bad records, {len(unmarked)} unmarked, exit {runner.returncode} in "
        f"{took:.1f} s, runner peak memory {peak_mb:.0f} MB (limit {RUNNER_RSS_LIMIT_MB:.0f})"
    )


def _stop_part(result: ScenarioResult, folder: Path, url: str, copies: int) -> None:
    """SIGINT while the runner retries the worst answers; then a resume without --repair."""
    ids = write_kind_prompts(folder, ["good", *BUSY_KINDS], copies)
    command = runner_command(folder, url, "--max-retries", "1000", "--concurrency", "4")
    runner = subprocess.Popen(command, env=agent_env(), stderr=subprocess.DEVNULL)
    peak: list[float] = []
    watcher = threading.Thread(target=lambda: peak.append(watch_peak_mb(runner, RUN_TIMEOUT_S)))
    watcher.start()
    busy = wait_until_blocking(
        lambda: int(status(folder).get("retries", 0)) >= 4 * len(BUSY_KINDS), 60.0
    )
    asked = time.monotonic()
    runner.send_signal(signal.SIGINT)
    try:
        runner.wait(STOP_LIMIT_S)
    except subprocess.TimeoutExpired:
        result.violate(f"stop: the runner did not stop within {STOP_LIMIT_S:g} s of SIGINT")
        runner.kill()
    stop_s = time.monotonic() - asked
    watcher.join()
    result.faults += len(ids)
    result.detection_s.append(stop_s)
    written, bad = _records(folder)
    result.corrupt += bad + len({i for i in written if not i.startswith("good")})
    again = subprocess.run(
        runner_command(folder, url, "--max-retries", "0"), env=agent_env(),
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    resumed = status(folder).get("resumed_responses")
    if "--repair" in again.stderr or resumed != len(written):
        result.violate(f"stop: the next run did not resume ({again.stderr[-300:]!r})")
    result.notes.append(
        f"stop: SIGINT after {status(folder).get('retries', '?')} retries (busy: {busy}); "
        f"stopped in {stop_s:.2f} s (limit {STOP_LIMIT_S:g}), exit {runner.returncode}, peak "
        f"memory {max(peak, default=0):.0f} MB; next run resumed {resumed} record(s)"
    )


def _drip_part(result: ScenarioResult, folder: Path, url: str) -> None:
    """A body that drips forever is cut at --request-timeout, and marked."""
    write_kind_prompts(folder, ["good", "slow_drip"])
    started = time.monotonic()
    subprocess.run(
        runner_command(folder, url, "--max-retries", "0", "--request-timeout", str(DRIP_TIMEOUT_S)),
        env=agent_env(), capture_output=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    took = time.monotonic() - started
    result.faults += 1
    result.attempted += 2
    written, bad = _records(folder)
    result.acknowledged += len(written)
    result.corrupt += bad + len(written - {"good"})
    if "slow_drip" not in _marked(folder):
        result.lost += 1
        result.violate("drip: the dripping answer was not marked")
    result.notes.append(
        f"drip: a byte a second, cut at the {DRIP_TIMEOUT_S:g} s request timeout; run took "
        f"{took:.1f} s"
    )


def _records(folder: Path) -> tuple[set[str], int]:
    """The ids of the responses written, and how many lines are no response or not ours."""
    path = folder / "raw_responses.jsonl"
    ids: set[str] = set()
    bad = 0
    for line in path.read_bytes().splitlines() if path.exists() else ():
        parsed = parse_response_line(line)
        if parsed is None or parsed.ids_text() != b"5,6,7":
            bad += 1
        else:
            ids.add(parsed.id)
    return ids, bad


def _marked(folder: Path) -> set[str]:
    path = folder / "errors.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {str(json.loads(line)["id"]) for line in lines}
