"""Injection and traversal: hostile strings through a real agent over SSH, and paths out of roots.

Injects (a) job argv items, env values and dataset names built from shell metacharacters,
quotes, newlines, globs, a leading dash, non-ASCII, an undecodable byte and NUL, drawn by a seeded
Random from a fixed alphabet, each launched through a real agent over asyncssh's loopback SSH
server (whose exec requests run through /bin/sh -c, so a shell is on the path); every fragment
that a shell would run touches a canary file. The job writes the bytes of its argv and env back.
(b) deploy targets, rollbacks, hashes, log names, job ids and dataset names that lead outside
the allowed roots (`../x`, absolute paths, `root/../../x`, symlinked parents and targets, a parent
swapped for a symlink between plan and upload), see `_injection_traversal`.

Checks: every launch either reached the job byte for byte or was refused with a clear reason
(NUL, an unsafe or unknown dataset name); 0 canary files; every traversal refused with a clear
error, a sentinel tree outside the roots unchanged (names, sha256, mtimes) and no response
carrying a sentinel file's bytes.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import (
    JOBS_LAUNCH,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.ssh_link import open_ssh_link
from faults.harness.agents import agent_cleanup, job_states, private_home
from faults.hostile._injection_cases import (
    CANARY,
    DATASET_NAMES_SAFE,
    MADE_FOLDERS,
    Case,
    draw_case,
    with_canary,
)
from faults.hostile._injection_traversal import Layout, check_traversal
from faults.result import Scale, ScenarioResult
from tests.support.ssh_servers import asyncssh_server
from tests.support.waits import wait_until

TITLE = "Injection and traversal: hostile argv, env and dataset names; paths out of the roots"

BATCH = 8
JOB_TIMEOUT_S = 60.0
REFUSAL_REASONS = ("NUL byte", "not safe to pass", "no dataset", "known placeholders")
ECHO = (
    "import json, os, sys\n"
    "record = dict(argv=[os.fsencode(a).hex() for a in sys.argv[2:]],\n"
    "              env=(os.environb.get(b'PROBE') or b'').hex(), has_env=b'PROBE' in os.environb)\n"
    "with open(sys.argv[1] + '.tmp', 'w') as handle:\n"
    "    json.dump(record, handle)\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
)
"""Writes the bytes of argv[2:] and of $PROBE, as hex, atomically to argv[1]."""


@dataclass(slots=True)
class Tally:
    """Launch verdicts, for the notes."""

    verdicts: Counter[str] = field(default_factory=Counter)


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Launch every hostile case, then try every traversal, then look for canaries."""
    result = ScenarioResult("injection", TITLE, seed)
    rng, nonce = random.Random(seed), secrets.token_hex(4)
    canary = Path(tempfile.gettempdir()) / f"eagle-faults-pwned-{nonce}"
    cases = [
        with_canary(draw_case(rng, index), str(canary), f"pwned-{nonce}")
        for index in range(scale.pick(200, 25))
    ]
    layout = Layout.create(workdir, nonce)
    _make_datasets(layout, f"pwned-{nonce}")
    tally = Tally()
    with private_home(workdir / "home"):
        async with agent_cleanup(layout.state), asyncssh_server(workdir / "ssh") as server:
            endpoint = server.endpoint
            host = HostConfig(
                "gpu", SshTarget(endpoint.host, endpoint.user, endpoint.port),
                python=sys.executable, state_dir=str(layout.state),
                known_hosts=str(endpoint.known_hosts), identity=str(endpoint.identity),
                pipeline=_pipeline(cases, layout),
            )  # fmt: skip
            await _against_agent(host, cases, layout, result, tally)
    _check_canaries(workdir, canary, nonce, result)
    result.notes.append(f"launches: {dict(sorted(tally.verdicts.items()))}")
    return result


async def _against_agent(
    host: HostConfig, cases: list[Case], layout: Layout, result: ScenarioResult, tally: Tally
) -> None:
    link = await open_ssh_link(host)
    try:
        for start in range(0, len(cases), BATCH):
            await _launch_batch(link, cases[start : start + BATCH], layout, result, tally)
        await check_traversal(link, layout, result)
    finally:
        await link.close()


def _make_datasets(layout: Layout, relative_canary: str) -> None:
    """Dataset names cannot hold a path: their canary is a bare file name."""
    for name in DATASET_NAMES_SAFE + MADE_FOLDERS:
        (layout.datasets / name.replace(CANARY, relative_canary)).mkdir(parents=True)


def _pipeline(cases: list[Case], layout: Layout) -> PipelineConfig:
    """The echo jobs; an env value can only come from the config, so one job per env case."""
    jobs = {
        "echo_argv": JobSpec((sys.executable, "-c", ECHO)),
        "echo_dataset": JobSpec(
            (sys.executable, "-c", ECHO), env={"PROBE": "{dataset_dir}"}, per_dataset=True
        ),
    }
    for case in cases:
        if case.kind == "env":
            out = str(layout.out_file(case.index))
            jobs[f"echo_env_{case.index}"] = JobSpec(
                (sys.executable, "-c", ECHO, out), env={"PROBE": case.values[0]}
            )
    return PipelineConfig(
        datasets=DatasetsConfig(str(layout.datasets)), jobs=jobs,
        deploy_roots=(str(layout.deploy_root),),
    )  # fmt: skip


def _launch_params(case: Case, layout: Layout) -> LaunchParams:
    echo = (sys.executable, "-c", ECHO, str(layout.out_file(case.index)))
    if case.kind == "env":
        return LaunchParams(f"echo_env_{case.index}")
    if case.kind == "dataset":
        return LaunchParams("echo_dataset", case.values[0], (*echo, "{dataset}"))
    return LaunchParams("echo_argv", None, (*echo, *case.values))


def _expected(case: Case, layout: Layout) -> dict[str, object]:
    """What the job must write: the bytes of the hostile strings, as hex."""
    if case.kind == "env":
        return {"argv": [], "env": os.fsencode(case.values[0]).hex(), "has_env": True}
    if case.kind == "dataset":
        folder = os.fsencode(str(layout.datasets / case.values[0])).hex()
        return {"argv": [os.fsencode(case.values[0]).hex()], "env": folder, "has_env": True}
    return {"argv": [os.fsencode(v).hex() for v in case.values], "env": "", "has_env": False}


async def _launch_batch(
    link: AgentLink, cases: list[Case], layout: Layout, result: ScenarioResult, tally: Tally
) -> None:
    launched: list[tuple[Case, JobInfo]] = []
    for case in cases:
        job = await _launch(link, case, layout, result, tally)
        if job is not None:
            launched.append((case, job))
    files = [layout.out_file(case.index) for case, _ in launched]
    await wait_until(lambda: all(path.exists() for path in files), JOB_TIMEOUT_S)
    states = await job_states(link) if not all(path.exists() for path in files) else {}
    for case, job in launched:
        _check_echo(case, layout, states.get(job.id), result, tally)


async def _launch(
    link: AgentLink, case: Case, layout: Layout, result: ScenarioResult, tally: Tally
) -> JobInfo | None:
    result.faults += 1
    result.attempted += 1
    key = f"injection-{layout.nonce}-{case.index}"
    try:
        job: JobInfo = await link.call(
            JOBS_LAUNCH, _launch_params(case, layout), idempotency_key=key
        )
    except AgentRequestError as exc:
        _judge_refusal(case, exc, result, tally)
        return None
    if case.must_refuse:
        result.violate(f"case {case.index} ({case.kind} {case.values!r}): launched, not refused")
    return job


def _judge_refusal(
    case: Case, exc: AgentRequestError, result: ScenarioResult, tally: Tally
) -> None:
    label = f"case {case.index} ({case.kind} {case.values!r})"
    if not case.must_refuse:
        result.violate(f"{label}: a safe input was refused: {exc.detail}")
    elif exc.code != "invalid_params" or not any(r in exc.detail for r in REFUSAL_REASONS):
        result.violate(f"{label}: refused without a clear reason: {exc.code}: {exc.detail}")
    else:
        result.acknowledged += 1
        tally.verdicts[f"{case.kind} refused"] += 1


def _check_echo(
    case: Case, layout: Layout, job: JobInfo | None, result: ScenarioResult, tally: Tally
) -> None:
    label = f"case {case.index} ({case.kind} {case.values!r})"
    try:
        written = json.loads(layout.out_file(case.index).read_text())
    except (OSError, ValueError):
        state = f"{job.state}, exit {job.exit_code}" if job else "unknown"
        result.violate(f"{label}: the job wrote nothing within {JOB_TIMEOUT_S} s ({state})")
        return
    if written != _expected(case, layout):
        result.violate(f"{label}: the job received {written}, not the bytes sent")
        return
    if not case.must_refuse:
        result.acknowledged += 1
        tally.verdicts[f"{case.kind} exact"] += 1


def _check_canaries(workdir: Path, canary: Path, nonce: str, result: ScenarioResult) -> None:
    """The canary files are named exactly so (a dataset folder only holds the name in its own)."""
    relative = f"pwned-{nonce}"
    found = [canary] if canary.exists() else []
    found += list(workdir.rglob(relative)) + list(Path.cwd().glob(relative))
    result.notes.append(f"canary files: {len(found)}")
    if found:
        result.violate(f"a shell ran an injected command: canary files {found}")
    for path in found:
        path.unlink(missing_ok=True)
