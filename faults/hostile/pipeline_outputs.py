"""What the pipeline's own jobs write and believe, under hostile inputs.

(a) A dataset whose last LATE answers came from a run with another tokenizer (the same words
under other ids: equal prompt lengths, a clean round trip), exported with the first one's.
Checks: those answers are in no output, counted, and the export exits 1 (they were training data).
(b) `--on-budget cancel` against a batch of equal answers that end together, as on a real vLLM.
Checks: no answer past the one that met the budget is written (cancel once overshot as finish).
(c) The evaluation's request against drafter servers that ignore `max_new_tokens`, streamed or
not. Checks: an error naming it, never a figure (a 63x speedup and a verdict once came of it).
(d) The @reboot line for state folders whose names hold `%`, quotes and spaces, read as cron
and then sh read it. Checks: the agent is started on exactly that folder (cron once cut the line).
detection_s is each export's and each cancelled run's wall time.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path

import aiohttp

from agent.host.autostart import cron_line
from agent.pipeline.evaluate.measure import Request, send
from faults.result import Scale, ScenarioResult
from tests.support.export_data import answered_by_two_tokenizers
from tests.support.loopback_app import answering_generate
from tests.support.pipeline_runs import export
from tests.support.runner_files import response_tokens, run_runner, write_id_prompts
from tests.support.simulator_process import running_simulator

TITLE = "The pipeline's jobs: another tokenizer's answers, cancel at the budget, hostile counts"

PROMPTS = 100
LATE = 40
CANCEL_BUDGET = 150
EQUAL_ANSWER = 100
PAST_THE_LIMIT = {
    "whole": '{"output_ids": [7] , "meta_info": {"completion_tokens": 1024}}'.replace(
        "[7] ", str([7] * 1024)
    ),
    "stream": 'data: {"output_ids": [7], "meta_info": {"completion_tokens": 1024}}'
    "\n\ndata: [DONE]\n\n",
}
STATE_NAMES = ("eagle 100%", 'it\'s "quoted"', "50%off%", "a%b\\%c")


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The four parts; (a) and (b) `trials` times each."""
    result = ScenarioResult("pipeline_outputs", TITLE, seed)
    trials = scale.pick(full=3, quick=1)
    for trial in range(trials):
        _other_tokenizer(workdir / f"tokenizer-{trial}", result, f"export #{trial + 1}")
        _cancel_at_budget(workdir / f"cancel-{trial}", result, f"cancel #{trial + 1}")
    await _ignored_limits(result)
    _cron_names(workdir, result)
    return result


def _other_tokenizer(folder: Path, result: ScenarioResult, name: str) -> None:
    runs = answered_by_two_tokenizers(folder, PROMPTS, LATE)
    if any(run.returncode != 0 for run in runs):
        result.violate(f"{name}: a runner failed: {[run.stderr[-300:] for run in runs]}")
        return
    result.faults += LATE
    result.attempted += PROMPTS
    started = time.monotonic()
    # every prompt's answer counted: none kept for the evaluation
    done = export(folder / "datasets", folder / "ours", folder / "out", "--held-out-share", "0")
    result.detection_s.append(time.monotonic() - started)
    lines = (folder / "out" / "B1" / "ids" / "ids.jsonl").read_text().splitlines()
    left_out = json.loads((folder / "out" / "B1" / "quality.json").read_text())["other_tokenizer"]
    result.acknowledged += len(lines) + left_out["count"]
    if done.returncode != 1 or len(lines) != PROMPTS - LATE or left_out["count"] != LATE:
        result.corrupt += max(0, len(lines) - (PROMPTS - LATE))
        result.violate(f"{name}: exit {done.returncode}, {len(lines)} rows written, "
                       f"{left_out['count']} left out")  # fmt: skip


def _cancel_at_budget(folder: Path, result: ScenarioResult, name: str) -> None:
    dataset = folder / "B2"
    write_id_prompts(dataset, 64)
    started = time.monotonic()
    with running_simulator(folder / "sim", "--speed", "20", "--mean-tokens", str(EQUAL_ANSWER),
                           "--sd-tokens", "0") as sim:  # fmt: skip
        ran = run_runner(dataset, sim.url, "--token-budget", str(CANCEL_BUDGET),
                         "--concurrency", "16", "--on-budget", "cancel")  # fmt: skip
    result.detection_s.append(time.monotonic() - started)
    result.faults += 1
    result.attempted += 1
    tokens = response_tokens(dataset)
    if ran.returncode != 0 or not CANCEL_BUDGET <= tokens <= CANCEL_BUDGET + EQUAL_ANSWER:
        result.violate(f"{name}: exit {ran.returncode}, {tokens} tokens for {CANCEL_BUDGET}")
        return
    result.acknowledged += 1
    result.notes.append(f"{name}: {tokens} tokens written for a budget of {CANCEL_BUDGET}")


async def _ignored_limits(result: ScenarioResult) -> None:
    for kind, body in PAST_THE_LIMIT.items():
        request = Request(max_new_tokens=8, temperature=0.0, stream=kind == "stream")
        async with answering_generate(body) as url, aiohttp.ClientSession() as session:
            answer = await send(session, url, [1, 2], request)
        result.faults += 1
        result.attempted += 1
        if answer.error is None or "ignores the limit" not in answer.error:
            result.violate(f"a drafter ignoring max_new_tokens ({kind}) gave {answer}")
            continue
        result.acknowledged += 1


def _cron_names(workdir: Path, result: ScenarioResult) -> None:
    for name in STATE_NAMES:
        state = workdir / "cron" / name / "state"
        result.faults += 1
        result.attempted += 1
        argv = shlex.split(_as_cron_runs(cron_line(state)), comments=True)
        started_on = argv[argv.index("--state-dir") + 1] if "--state-dir" in argv else None
        if started_on != str(state):
            result.violate(f"@reboot for {state}: cron and sh start the agent on {started_on!r}")
            continue
        result.acknowledged += 1


def _as_cron_runs(line: str) -> str:
    r"""The command cron hands to sh: `\%` is a `%`, an unescaped `%` ends it (crontab(5))."""
    command = line.removeprefix("@reboot ")
    cut = re.search(r"(?<!\\)%", command)
    return (command[: cut.start()] if cut else command).replace("\\%", "%")
