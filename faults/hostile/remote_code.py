"""Tokenizers that ship their own code: refused in one line, never a question, never a traceback.

(a) Without --trust-remote-code, the runner is pointed at every folder of
`_remote_code_folders.FOLDERS` (Kimi-K2's layout, the legacy auto_map pair, auto_map in
config.json, a missing code file, a hub reference, a syntax error, code that raises) with stdin a
terminal, closed, and /dev/null: each must exit 2 within the bound with one stderr line that
names the flag, never print transformers' "[y/N]" question, write runner.json `refused`, mark no
prompt failed and send the simulator no request. (b) With the flag, the broken folders and a box
without tiktoken must end the same way: one line, no traceback, nothing sent. (c) With the flag,
the good folder runs and every chat prompt's answer is there.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

from faults.hostile._remote_code_folders import (
    FOLDERS,
    REFUSAL_BOUND_S,
    STDIN_KINDS,
    TRUSTED_BROKEN,
    RunOutcome,
    make_folder,
    no_tiktoken_env,
    run_runner,
)
from faults.result import Scale, ScenarioResult
from tests.support.remote_code.folder import kimi_chats
from tests.support.simulator_process import running_simulator

TITLE = "Tokenizers that ship code: one-line refusal, no question, no traceback"
QUICK_FOLDERS = ("kimi-like", "syntax error", "code in a hub repo")
QUICK_TRUSTED = ("raises when built",)


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three parts against one simulator."""
    result = ScenarioResult("remote_code", TITLE, seed)
    with running_simulator(workdir / "sim", "--speed", "100", "--mean-tokens", "40",
                           "--seed", str(seed)) as sim:  # fmt: skip
        check = _Checker(result, sim.url, workdir)
        await asyncio.to_thread(check.untrusted, tuple(FOLDERS) if scale.full else QUICK_FOLDERS)
        await asyncio.to_thread(
            check.trusted_broken, TRUSTED_BROKEN if scale.full else QUICK_TRUSTED
        )
        await asyncio.to_thread(check.trusted_good)
        if _generate_requests(sim.url) != check.answered:
            result.violate(f"the simulator got {_generate_requests(sim.url):g} requests; only "
                           f"{check.answered} came from the trusted good run")  # fmt: skip
    return result


class _Checker:
    """Runs the runner and checks each outcome against the scenario's invariants."""

    def __init__(self, result: ScenarioResult, server: str, workdir: Path) -> None:
        self.result, self.server, self.workdir = result, server, workdir
        self.answered = 0
        self.runs = 0

    def untrusted(self, labels: tuple[str, ...]) -> None:
        for label in labels:
            folder = make_folder(self.workdir / "tokenizers", label)
            for stdin_kind in STDIN_KINDS:
                outcome = run_runner(self._dataset(), self.server, folder, stdin_kind)
                self._refused(f"{label}, stdin {stdin_kind}", outcome, "--trust-remote-code")
        self.result.notes.append(
            f"untrusted: {len(labels)} folders x {len(STDIN_KINDS)} stdin kinds, each refused in "
            f"one line naming --trust-remote-code (bound {REFUSAL_BOUND_S:g} s)"
        )

    def trusted_broken(self, labels: tuple[str, ...]) -> None:
        for label in labels:
            folder = make_folder(self.workdir / "tokenizers", label)
            outcome = run_runner(
                self._dataset(), self.server, folder, "terminal", "--trust-remote-code"
            )
            self._refused(f"{label}, trusted", outcome, str(folder))
        kimi = make_folder(self.workdir / "tokenizers", "kimi-like")
        env = no_tiktoken_env(self.workdir / "no-tiktoken")
        outcome = run_runner(self._dataset(), self.server, kimi, "devnull", "--trust-remote-code",
                             env=env)  # fmt: skip
        self._refused("kimi-like, trusted, no tiktoken", outcome, "pip install tiktoken")
        self.result.notes.append(
            f"trusted but broken: {len(labels)} folders and a box without tiktoken, each one line"
        )

    def trusted_good(self) -> None:
        kimi = make_folder(self.workdir / "tokenizers", "kimi-like")
        dataset = self._dataset()
        outcome = run_runner(dataset, self.server, kimi, "terminal", "--trust-remote-code")
        self.result.attempted += 1
        wanted = len(kimi_chats())
        got = _answered_ids(dataset)
        self.answered = len(got)
        if outcome.code != 0 or len(got) != wanted:
            self.result.lost += wanted - len(got)
            self.result.violate(f"trusted kimi-like: exit {outcome.code}, {len(got)} of {wanted} "
                                f"answers; stderr {outcome.stderr[-300:]!r}")  # fmt: skip
            return
        self.result.acknowledged += 1
        self.result.notes.append(f"trusted kimi-like: {wanted} chat prompts answered, exit 0")

    def _dataset(self) -> Path:
        self.runs += 1
        folder = self.workdir / "datasets" / f"run{self.runs}"
        folder.mkdir(parents=True)
        lines = [{"id": f"c{i}", "messages": chat} for i, chat in enumerate(kimi_chats())]
        (folder / "prompts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        return folder

    def _refused(self, label: str, outcome: RunOutcome, must_name: str) -> None:
        self.result.faults += 1
        self.result.attempted += 1
        problems = _refusal_problems(outcome, must_name)
        if problems:
            self.result.violate(f"{label}: " + "; ".join(problems))
            return
        self.result.acknowledged += 1
        self.result.detection_s.append(outcome.seconds)


def _refusal_problems(outcome: RunOutcome, must_name: str) -> list[str]:
    lines = outcome.stderr.splitlines()
    checks = {
        f"exit {outcome.code}, not 2": outcome.code == 2,
        f"{len(lines)} stderr lines, not one: {outcome.stderr[-400:]!r}": len(lines) == 1,
        f"the line does not name {must_name!r}": bool(lines) and must_name in lines[0],
        "transformers asked [y/N]": "[y/N]" not in outcome.stdout + outcome.stderr,
        "a traceback": "Traceback" not in outcome.stderr,
        f"runner.json state {outcome.record.get('state')!r}": outcome.record.get("state") == "refused",
        "errors.jsonl was written": not outcome.errors_file,
        "responses were written": not outcome.responses_file,
    }  # fmt: skip
    return [problem for problem, ok in checks.items() if not ok]


def _answered_ids(dataset: Path) -> set[str]:
    path = dataset / "raw_responses.jsonl"
    if not path.exists():
        return set()
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line}


def _generate_requests(url: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("sglang:num_requests_total"))  # fmt: skip
