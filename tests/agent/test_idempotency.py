"""A mutating request retried with its idempotency key is answered, not done again."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.protocol import (
    FILES_INSTALL,
    JOBS_LAUNCH,
    JOBS_STOP,
    InstallParams,
    InstallResult,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
    StopResult,
)
from agent.state import StatePaths
from console.link.agent_link import AgentRequestError
from tests.support.operations import local_link
from tests.support.waits import until

STUBBORN = (
    "import pathlib, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "pathlib.Path(sys.argv[1]).touch()\n"
    "time.sleep(60)\n"
)


def staged_install(tmp_path: Path) -> InstallParams:
    """An install of `new` over `deploy/run.py` (now `old`), its upload staged beside it."""
    root = tmp_path / "deploy"
    root.mkdir()
    target, staged = root / "run.py", root / ".run.py.eagle-upload-a"
    target.write_bytes(b"old\n")
    staged.write_bytes(b"new\n")
    return InstallParams(str(target), str(staged), hashlib.sha256(b"new\n").hexdigest(), 0o644)


async def test_a_retried_install_gets_the_first_answer_and_a_reused_key_is_refused(
    tmp_path: Path, state_dir: Path
) -> None:
    params = staged_install(tmp_path)
    pipeline = PipelineConfig(deploy_roots=(str(tmp_path / "deploy"),))
    async with local_link(state_dir, pipeline) as link:
        first: InstallResult = await link.call(FILES_INSTALL, params, idempotency_key="k")
        again: InstallResult = await link.call(FILES_INSTALL, params, idempotency_key="k")
        other = replace(params, sha256="0" * 64)
        with pytest.raises(AgentRequestError, match="was used for another request"):
            await link.call(FILES_INSTALL, other, idempotency_key="k")
    assert again == first  # the staged file is gone: doing it again would have failed
    assert Path(params.target).read_bytes() == b"new\n"


async def test_a_stop_retried_while_it_runs_waits_for_the_same_stop(
    tmp_path: Path, state_dir: Path
) -> None:
    ready = tmp_path / "ready"
    argv = (sys.executable, "-c", STUBBORN, str(ready))
    jobs = {"stubborn": JobSpec(argv, grace_s=1.0, term_grace_s=1.0)}
    async with local_link(state_dir, PipelineConfig(jobs=jobs)) as link:
        job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("stubborn"), idempotency_key="l")
        await until(ready.exists, "the job started", 20)  # SIGTERM is ignored from here on
        stops = [link.call(JOBS_STOP, StopParams(job.id), idempotency_key="s") for _ in range(3)]
        results: list[StopResult] = await asyncio.gather(*stops)
    assert results[0] == results[1] == results[2]  # one stop: the very same steps, times and all
    assert [s.action for s in results[0].steps] == ["SIGTERM", "SIGKILL"]


async def test_a_retried_launch_returns_the_job_as_it_is_now(
    tmp_path: Path, state_dir: Path
) -> None:
    ready = tmp_path / "ready"
    jobs = {"stubborn": JobSpec((sys.executable, "-c", STUBBORN, str(ready)), grace_s=0.5)}
    async with local_link(state_dir, PipelineConfig(jobs=jobs)) as link:
        first: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("stubborn"), idempotency_key="once"
        )
        await until(ready.exists, "the job started", 20)
        again: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("stubborn"), idempotency_key="once"
        )
        await link.call(JOBS_STOP, StopParams(first.id), idempotency_key="end")
    assert (again.id, again.state) == (first.id, "running")
    assert again.pid is not None


async def test_keys_and_their_answers_survive_a_daemon_restart(
    tmp_path: Path, state_dir: Path
) -> None:
    params = staged_install(tmp_path)
    pipeline = PipelineConfig(deploy_roots=(str(tmp_path / "deploy"),))
    async with local_link(state_dir, pipeline) as link:
        first: InstallResult = await link.call(FILES_INSTALL, params, idempotency_key="k")
        with pytest.raises(AgentRequestError) as refused:
            await link.call(JOBS_STOP, StopParams("no-such-job"), idempotency_key="r")
    assert stop_daemon(StatePaths(state_dir))
    async with local_link(state_dir, pipeline) as link:
        again: InstallResult = await link.call(FILES_INSTALL, params, idempotency_key="k")
        with pytest.raises(AgentRequestError) as reused:
            await link.call(FILES_INSTALL, replace(params, mode=0o600), idempotency_key="k")
        with pytest.raises(AgentRequestError) as refused_again:
            await link.call(JOBS_STOP, StopParams("no-such-job"), idempotency_key="r")
    assert again == first  # the staged file is gone: installing again would have failed
    assert reused.value.code == "key_reused"
    assert "was used for another request" in reused.value.detail
    assert (refused_again.value.code, refused_again.value.detail) == (
        refused.value.code, refused.value.detail,
    )  # fmt: skip


def test_a_store_forgets_the_oldest_keys_and_compacts_its_file(tmp_path: Path) -> None:
    from agent.journal.idempotency_store import AnswerStore, StoredAnswer

    path = tmp_path / "idempotency.jsonl"
    store = AnswerStore(path, capacity=3)
    for number in range(8):
        store.put(f"k{number}", StoredAnswer(f"d{number}", "jobs.stop", {"n": number}))
    store.flush()
    with path.open("a") as handle:
        handle.write('{"key": "torn", "dig')  # a crash in the middle of a line
    reloaded = AnswerStore(path, capacity=3)
    assert [reloaded.get(f"k{n}") is not None for n in range(8)] == [False] * 5 + [True] * 3
    assert reloaded.get("k7") == StoredAnswer("d7", "jobs.stop", {"n": 7})
    assert len(path.read_text().splitlines()) <= 2 * 3 + 1
