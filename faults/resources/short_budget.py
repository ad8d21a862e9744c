"""A run that stopped short of its budget with prompts left, rerun until the one rule says done.

Each trial builds a dataset an earlier run left a few tokens under its budget (1 to half a mean
response short, the gap the old gate could not close), or whose last prompts failed for good
(errors.jsonl), then does what a user pressing `G` does: ask the agent whether the dataset is
done (`DatasetProgress.generation_done`, the rule the console uses), and while it is not, run
the real runner on it. Before the rule was shared, the first kind looped forever: the agent said
idle, the runner exited 0 having sent nothing.

Checks: every rerun that the rule calls for sends at least one request (progress); the run
ends at the budget (tokens >= budget, overshoot within one max_new_tokens), or with no prompt
left; the agent then calls the dataset complete, so `G` stops; a last rerun sends nothing; no id
is written twice and every line is whole.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetProgress, DatasetsConfig
from faults.harness.responses import read_final, write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import run_runner, status
from tests.support.simulator_process import running_simulator

TITLE = "A run stopped short of its budget with prompts left, rerun by the one rule"

MEAN_TOKENS, MAX_NEW = 400, 1200
SIMULATOR_ARGS = ("--speed", "200", "--mean-tokens", str(MEAN_TOKENS), "--sd-tokens", "150")
PROMPTS, DONE = 120, 60
MAX_RERUNS = 5
"""More reruns than this for one dataset is the loop the rule exists to prevent."""


@dataclass(frozen=True, slots=True)
class Trial:
    """One dataset left by an earlier run."""

    index: int
    short_by: int
    """Tokens under the budget the earlier run stopped at (0: its last prompts failed instead)."""

    @property
    def name(self) -> str:
        """The dataset folder."""
        return f"B{self.index}_{'short' if self.short_by else 'failed'}"


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(40, 5)` datasets, one in five ended by failed prompts instead of tokens."""
    result = ScenarioResult("short_budget", TITLE, seed)
    rng = random.Random(seed)
    trials = [
        Trial(i, 0 if i % 5 == 4 else rng.randint(1, MEAN_TOKENS // 2))
        for i in range(scale.pick(40, 5))
    ]
    await asyncio.to_thread(_run_all, trials, workdir, rng, result)
    return result


def _run_all(
    trials: list[Trial], workdir: Path, rng: random.Random, result: ScenarioResult
) -> None:
    overshoots: list[int] = []
    with running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(result.seed)) as sim:
        for trial in trials:
            overshoot = _one(trial, workdir / "datasets", sim.url, rng, result)
            if overshoot is not None:
                overshoots.append(overshoot)
    if overshoots:
        result.notes.append(
            f"overshoot past the budget after the rerun: p50 {statistics.median(overshoots):.0f}, "
            f"max {max(overshoots)} tokens (mean answer {MEAN_TOKENS}, max_new_tokens {MAX_NEW})"
        )
    result.notes.append(
        "each trial: the agent's generation_done (what g/G ask) decides whether to rerun; a rerun "
        f"that sends nothing while it says not done, or more than {MAX_RERUNS} reruns, is a "
        "violation; detect_s is the first rerun, recover_s all reruns to done"
    )


def _one(
    trial: Trial, root: Path, url: str, rng: random.Random, result: ScenarioResult
) -> int | None:
    folder = root / trial.name
    budget = _leave_an_earlier_run(trial, folder, rng)
    result.faults += 1
    started, reruns = time.monotonic(), 0
    while not (progress := _agent_view(root, trial.name, budget)).generation_done:
        if reruns == MAX_RERUNS:
            result.violate(
                f"{trial.name}: still not done after {reruns} reruns ({progress.tokens})"
            )
            return None
        reruns += 1
        if not _rerun_made_progress(trial, folder, url, budget, result):
            return None
        if reruns == 1:
            result.detection_s.append(time.monotonic() - started)
    if reruns:
        result.recovery_s.append(time.monotonic() - started)
    return _check_done(trial, folder, url, budget, progress, result)


def _leave_an_earlier_run(trial: Trial, folder: Path, rng: random.Random) -> int:
    """Prompts, the responses an earlier run wrote, and the budget it stopped under."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = write_prompts(folder / "prompts.jsonl", PROMPTS if trial.short_by else DONE + 3)
    lengths = [rng.randint(MEAN_TOKENS // 2, 2 * MEAN_TOKENS) for _ in range(DONE)]
    with (folder / "raw_responses.jsonl").open("w") as handle:
        for prompt_id, length in zip(ids, lengths, strict=False):
            record = {"id": prompt_id, "output_ids": [5] * length, "completion_tokens": length}
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    if not trial.short_by:
        with (folder / "errors.jsonl").open("w") as handle:
            for prompt_id in ids[DONE:]:
                handle.write(json.dumps({"id": prompt_id, "permanent": True}) + "\n")
        return sum(lengths) + 10 * MEAN_TOKENS
    return sum(lengths) + trial.short_by


def _agent_view(root: Path, name: str, budget: int) -> DatasetProgress:
    tracker = DatasetTracker(DatasetsConfig(str(root), budget=budget))
    return next(p for p in tracker.progress(time.time()) if p.name == name)


def _rerun_made_progress(
    trial: Trial, folder: Path, url: str, budget: int, result: ScenarioResult
) -> bool:
    result.attempted += 1
    done = run_runner(folder, url, "--token-budget", str(budget), "--max-new-tokens", str(MAX_NEW))
    record = status(folder)
    if done.returncode != 0 or not record.get("dispatched"):
        result.violate(
            f"{trial.name}: a rerun {trial.short_by} tokens under its budget with prompts left "
            f"exited {done.returncode} having sent {record.get('dispatched')} request(s)"
        )
        return False
    result.acknowledged += 1
    return True


def _check_done(
    trial: Trial, folder: Path, url: str, budget: int, progress: DatasetProgress,
    result: ScenarioResult,
) -> int | None:  # fmt: skip
    final = read_final(folder / "raw_responses.jsonl")
    result.duplicated += sum(count - 1 for count in final.ids.values())
    result.corrupt += final.corrupt_lines
    if progress.status != "complete":
        result.violate(f"{trial.name}: done by the rule but the agent says {progress.status}")
    last = run_runner(folder, url, "--token-budget", str(budget))
    if last.returncode != 0 or status(folder).get("dispatched"):
        result.violate(f"{trial.name}: a rerun of a done dataset sent requests or failed")
    if not trial.short_by:
        return None
    overshoot = progress.tokens - budget
    if not 0 <= overshoot <= MAX_NEW:
        result.violate(f"{trial.name}: ended {overshoot:+} tokens from its budget of {budget}")
    return overshoot
