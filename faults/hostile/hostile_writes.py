"""Hostile writes: a lock-less writer racing a repair, 7 MB keys, planted backup links, bad config.

(a) Torn-tail repairs while an old script appends with no lock (its descriptor held, or reopened
for each half record), and the real runner started while it is stopped mid-record: no record
it wrote whole may be lost, nothing it wrote may be moved to `.torn`, a refusal says to stop it;
a dead writer's tail is still moved. (b) Launches with 7 MB idempotency keys: each refused, and
audit.jsonl and `audit.read limit=1` stay small. (c) `.eagle-backup` planted as links (to a file
or a folder outside the roots, to nowhere, to a file inside) and as a FIFO: each rollback
refused, the target never a link. (d) Config values out of their range: each refused at load,
naming the config key; values at the edges load and the agent takes them at hello.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agent.protocol import (
    AUDIT_READ,
    FILES_ROLLBACK,
    JOBS_LAUNCH,
    AuditParams,
    AuditResult,
    LaunchParams,
    PipelineConfig,
    RollbackParams,
    to_wire,
)
from console.config import ConfigError, load_config
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.link.local_link import open_local_link
from faults.harness.agents import agent_cleanup, daemon_pid
from faults.harness.memory import resident_mb
from faults.hostile._hostile_writes_race import (
    REPAIRS_PER_TRIAL,
    RaceFigures,
    dead_writer_trial,
    race_trial,
    runner_trial,
)
from faults.result import Scale, ScenarioResult
from tests.support.config_ranges import OUT_OF_RANGE, edge_config
from tests.support.operations import local_link

TITLE = "Hostile writes: a lock-less writer racing a repair, 7 MB keys, backup links, bad config"
HUGE_KEY = "k" * (7 << 20)
AUDIT_MAX_BYTES = 64 * 1024
"""audit.jsonl after every launch with a 7 MB key: a few hundred bytes a line."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The four parts, each adding its counts and a note."""
    result = ScenarioResult("hostile_writes", TITLE, seed)
    started = time.monotonic()
    await _repairs(workdir / "race", scale.pick(10, 2), result)
    state_dir = workdir / "state"
    root = workdir / "deploy"
    root.mkdir(parents=True)
    async with agent_cleanup(state_dir):
        async with local_link(state_dir, PipelineConfig(deploy_roots=(str(root),))) as link:
            await _huge_keys(link, state_dir, scale.pick(60, 10), result)
            await _backup_links(link, root, workdir / "outside", result)
        await _config(workdir / "config", state_dir, result)
    result.wall_s = time.monotonic() - started
    return result


async def _repairs(workdir: Path, trials: int, result: ScenarioResult) -> None:
    figures = RaceFigures()
    for trial in range(trials):
        await race_trial(workdir / f"race-{trial}", trial % 2 == 0, result, figures)
    await runner_trial(workdir / "runner", result)
    dead_writer_trial(workdir / "dead", result, figures)
    result.notes.append(
        f"repair race: {trials} trials of {trials * REPAIRS_PER_TRIAL} repairs under a lock-less writer and one "
        f"runner: {figures.refusals} refused, {result.lost} acknowledged records lost, "
        f"{figures.bytes_moved} bytes of a live writer moved; a dead writer's tail "
        f"({figures.dead_tail_bytes} bytes) still moved"
    )


async def _huge_keys(link: AgentLink, state_dir: Path, count: int, result: ScenarioResult) -> None:
    pid = daemon_pid(state_dir)
    peak_mb = resident_mb(pid)
    for _ in range(count):
        result.faults += 1
        result.attempted += 1
        try:
            await link.call(JOBS_LAUNCH, LaunchParams("x"), idempotency_key=HUGE_KEY)
            result.violate("a launch with a 7 MB idempotency key was accepted")
        except AgentRequestError as exc:
            result.acknowledged += "at most 128" in exc.detail
        peak_mb = max(peak_mb, resident_mb(pid))
    read: AuditResult = await link.call(AUDIT_READ, AuditParams(limit=1))
    answer_bytes = len(json.dumps(to_wire(read)))
    audit_bytes = (state_dir / "audit.jsonl").stat().st_size
    if audit_bytes > AUDIT_MAX_BYTES or answer_bytes > 4096:
        result.violate(f"audit.jsonl {audit_bytes:,} bytes, audit.read limit=1 {answer_bytes:,}")
    result.notes.append(
        f"7 MB keys: {count} launches refused; audit.jsonl {audit_bytes:,} bytes, audit.read "
        f"limit=1 answered {answer_bytes:,} bytes; daemon at most {peak_mb:.0f} MB"
    )


async def _backup_links(link: AgentLink, root: Path, outside: Path, result: ScenarioResult) -> None:
    outside.mkdir()
    (outside / "secret").write_bytes(b"not yours\n")
    (root / "inside").write_bytes(b"inside\n")
    plants: dict[str, Path | None] = {
        "a file outside": outside / "secret",
        "a folder outside": outside,
        "nowhere": outside / "missing",
        "a file inside": root / "inside",
        "a FIFO": None,
    }
    refused = 0
    for number, (name, leads_to) in enumerate(plants.items()):
        target = root / f"run{number}.py"
        target.write_bytes(b"current\n")
        backup = target.with_name(target.name + ".eagle-backup")
        if leads_to is None:
            os.mkfifo(backup)
        else:
            os.symlink(leads_to, backup)
        result.faults += 1
        refused += await _rollback_refused(link, target, name, result)
    if (outside / "secret").read_bytes() != b"not yours\n":
        result.violate("a file outside the deploy roots was changed")
    result.notes.append(f"backup links: {refused} of {len(plants)} planted backups refused")


async def _rollback_refused(
    link: AgentLink, target: Path, name: str, result: ScenarioResult
) -> bool:
    try:
        await link.call(FILES_ROLLBACK, RollbackParams(str(target)), idempotency_key=target.name)
        result.violate(f"a backup that is {name} was rolled back to")
    except AgentRequestError as exc:
        if exc.code != "invalid_params":
            result.violate(f"a backup that is {name}: {exc.code} ({exc.detail})")
    if target.is_symlink() or target.read_bytes() != b"current\n":
        result.violate(f"a backup that is {name} changed the target")
        return False
    return True


async def _config(folder: Path, state_dir: Path, result: ScenarioResult) -> None:
    folder.mkdir()
    refused = 0
    for text, key, _ in OUT_OF_RANGE:
        result.faults += 1
        path = folder / "eagle-console.toml"
        path.write_text(text)
        try:
            load_config(path)
            result.violate(f"{key} out of range was loaded")
        except ConfigError as exc:
            refused += f"{path}: {key}: got" in str(exc)
        except Exception as exc:  # noqa: BLE001 - any other failure is the finding
            result.violate(f"{key} out of range: {type(exc).__name__} at load: {exc}")
    for high in (False, True):
        path = folder / "edges.toml"
        path.write_text(edge_config(high))
        try:
            pipeline = load_config(path).host("gpu").pipeline
            link = await open_local_link(state_dir, pipeline)
        except (ConfigError, LinkError) as exc:
            result.violate(f"values at the {'highest' if high else 'lowest'} edge: {exc}")
            continue
        try:  # a hello only compares a config with the one the agent runs: apply takes it
            await link.apply_pipeline(pipeline)
        except LinkError as exc:
            result.violate(f"values at the {'highest' if high else 'lowest'} edge: {exc}")
        finally:
            await link.close()
    result.notes.append(
        f"config: {refused} of {len(OUT_OF_RANGE)} out-of-range values refused at load naming "
        "their key; the lowest and highest in range applied"
    )
