"""Bad input from every side: broken configs, cut and corrupt JSONL, hostile wire lines.

(a) Broken eagle-console.toml files (invalid TOML, wrong types, unknown keys, bad values, bytes
that are not UTF-8, an empty file, a directory) go through `load_config` and the real CLI: each
must be refused with one line naming the file and the key, never a traceback. (b) A sample
responses file, cut at every byte offset and given junk tails, goes to the agent's dataset reader
and tracker and to the runner's resume repair: no exception, counts equal to the complete-line
prefix, the torn tail reported (and moved aside by resume); corrupt lines in the middle are
counted with their offset, refused by resume, and moved aside by `--repair`. (c) Hostile lines go
to a real agent daemon over a raw connection: each gets a clear error (a blank one is skipped),
the connection stays usable, and the daemon lives on.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

from agent.attach import stop_daemon
from agent.state import StatePaths
from faults.harness.agents import daemon_pid, greeted_wire, log_tracebacks
from faults.hostile._bad_input_config import (
    BROKEN,
    CLI_QUICK,
    check_cli,
    check_loading,
    write_broken,
)
from faults.hostile._bad_input_jsonl import (
    CORRUPT_LINES,
    TruncationSweep,
    check_corrupt_line,
    sample_records,
)
from faults.hostile._bad_input_wire import BAD_LINES, answered_by_id, clear_error
from faults.result import Scale, ScenarioResult
from tests.support.process_checks import alive
from tests.support.raw_wire import RawWire, ping

TITLE = "Bad input: config, JSONL, wire"

SAMPLE_TOKENS = (2500, 12)
"""Output tokens of the sample's largest record, full and short campaign: every byte is a cut."""
JUNK_TAILS = (("NUL-filled tail", b"\x00" * 4096), ("binary tail", bytes(range(11, 256)) * 4))
REPORTED_PER_PART = 5
"""Violations recorded word for word per part; beyond that they are counted."""


@dataclass
class _Part:
    """Bad inputs fed to one part, and how many got a clear, correct answer."""

    name: str
    result: ScenarioResult
    fed: int = 0
    clear: int = 0
    failures: int = 0

    def count(self, ok: bool) -> None:
        """One bad input fed; `ok` if it was handled as it must be."""
        self.fed += 1
        self.clear += ok

    def report(self, problem: str) -> None:
        """A broken invariant, word for word for the first few."""
        self.failures += 1
        if self.failures <= REPORTED_PER_PART:
            self.result.violate(problem)

    def close(self) -> None:
        """Add this part's counts to the result."""
        if self.failures > REPORTED_PER_PART:
            self.result.violate(f"{self.name}: {self.failures - REPORTED_PER_PART} more failures")
        self.result.faults += self.fed
        self.result.attempted += self.fed
        self.result.acknowledged += self.clear


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """All three parts, each adding its counts and a note."""
    result = ScenarioResult("bad_input", TITLE, seed)
    rng = random.Random(seed)
    await _configs(scale, workdir / "configs", _Part("config", result))
    await asyncio.to_thread(_jsonl, scale, workdir / "jsonl", rng, _Part("jsonl", result))
    state_dir = workdir / "state"
    try:
        await _wire(state_dir, _Part("wire", result))
    finally:
        if state_dir.exists():
            await asyncio.to_thread(stop_daemon, StatePaths(state_dir))
    return result


async def _configs(scale: Scale, folder: Path, part: _Part) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    through_cli = 0
    for number, case in enumerate(BROKEN):
        path = write_broken(folder, case, number)
        part.count(check_loading(path, case, part.report))
        if scale.full or case.label in CLI_QUICK:
            part.count(await check_cli(path, case, part.report))
            through_cli += 1
    part.close()
    part.result.notes.append(
        f"config: {len(BROKEN)} broken files through load_config, {through_cli} of them also "
        f"through `python -m console --config F status`; {part.clear} of {part.fed} refused "
        "with one line naming the file and key"
    )


def _jsonl(scale: Scale, folder: Path, rng: random.Random, part: _Part) -> None:
    whole = sample_records(scale.pick(*SAMPLE_TOKENS), rng)
    sweep = TruncationSweep(folder, whole, part.report)
    for offset in range(len(whole) + 1):
        part.count(sweep.cut(offset))
    for label, tail in JUNK_TAILS:
        part.count(sweep.check(whole + tail, f"jsonl {label}"))
    for label, line in CORRUPT_LINES:
        part.count(check_corrupt_line(folder / "corrupt", label, line, part.report))
    part.close()
    part.result.notes.append(
        f"jsonl: a {len(whole):,}-byte sample (5 records, multibyte UTF-8 in one) cut at all "
        f"{len(whole) + 1:,} offsets, {len(JUNK_TAILS)} junk tails and {len(CORRUPT_LINES)} "
        f"corrupt mid-file lines, each through the reader, the tracker and resume; "
        f"{part.clear} of {part.fed} read exactly right"
    )


async def _wire(state_dir: Path, part: _Part) -> None:
    wire = await greeted_wire(state_dir, part.result)
    pid = daemon_pid(state_dir)
    try:
        for number, (label, line, expected) in enumerate(BAD_LINES):
            wire = wire or await greeted_wire(state_dir, part.result)
            if wire is None or not alive(pid):
                part.report(f"wire: the daemon is gone before {label!r}")
                break
            wire = await _feed_line(wire, 1000 + number, label, line + b"\n", expected, part)
        part.count(await _cut_mid_line(state_dir, part))
    finally:
        if wire is not None:
            await wire.close()
    _check_daemon(state_dir, pid, part)
    part.close()
    part.result.notes.append(
        f"wire: {len(BAD_LINES)} bad lines (each followed by a ping on the same connection) and "
        f"a connection cut mid-line; {part.clear} of {part.fed} handled clearly"
    )


async def _feed_line(
    wire: RawWire, ping_id: int, label: str, line: bytes, expected: str, part: _Part
) -> RawWire | None:
    """Send one bad line and a ping; returns the wire, or None once the connection died."""
    try:
        await wire.send(line + ping(ping_id))
        before, answer = await wire.answers_until(ping_id, also=answered_by_id(line, expected))
    except ConnectionError:
        before, answer = [], None
    if answer is None:
        part.report(f"wire {label!r}: the connection died (answers before: {before})")
        part.count(False)
        await wire.close()
        return None
    problem = clear_error(before, expected)
    if problem is not None:
        part.report(f"wire {label!r}: {problem}")
    part.count(problem is None)
    return wire


async def _cut_mid_line(state_dir: Path, part: _Part) -> bool:
    """A console that goes away mid-line; the next connection must work."""
    cut = await RawWire.open(state_dir)
    await cut.send(b'{"id": 1, "method": "pi')
    await cut.close()
    wire = await greeted_wire(state_dir, part.result)
    if wire is None:
        return False
    try:
        await wire.send(ping(2))
        _, answer = await wire.answers_until(2)
    finally:
        await wire.close()
    if isinstance(answer, dict) and "result" in answer:
        return True
    part.report(f"wire: after a connection cut mid-line, a new one got {answer!r} to a ping")
    return False


def _check_daemon(state_dir: Path, pid: int | None, part: _Part) -> None:
    if not alive(pid) or daemon_pid(state_dir) != pid:
        part.report(f"wire: the daemon (pid {pid}) did not survive; now {daemon_pid(state_dir)}")
    for line in dict.fromkeys(log_tracebacks(state_dir)):
        part.report(f"wire: a traceback in agent.log: {line}")
