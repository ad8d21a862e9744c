"""A wrong API key is named as one, and the host's key file reaches the jobs.

The server ran with `--api-key right-key` and the host's key file held a wrong one: the probe
said "HTTP 401: set api_key_file" (it was set; the key was wrong) beside a healthy server, and
the runner, started without `--api-key-file`, ran keyless. Real simulator, real agent, the real
runner as the agent's job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent.jobs.spec import SpecError, render
from agent.logs import cut
from agent.probes.cache import ProbeCache
from agent.protocol import (
    EVENTS_LIST,
    JOBS_LAUNCH,
    SNAPSHOT,
    DatasetsConfig,
    EventsParams,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from console.cli.box_commands import job_cells
from console.cli.doctor import sglang_line
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from console.model.formatting import exit_text, server_text
from tests.support.operations import jobs_where, local_link
from tests.support.runner_files import response_ids, write_id_prompts
from tests.support.simulator_process import SimulatorProcess, running_simulator
from tests.support.waits import read_until

FAST = ("--speed", "100", "--mean-tokens", "40", "--sd-tokens", "10")
RUNNER = ("{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}",
          "--dataset-dir", "{dataset_dir}", "--max-new-tokens", "30")  # fmt: skip
"""The runner as a config names it, with no --api-key-file: the host's key file must reach it."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SimulatorProcess]:
    with running_simulator(tmp_path / "sim", *FAST, "--api-key", "right-key") as sim:
        yield sim


def key_file(tmp_path: Path, key: str) -> Path:
    path = tmp_path / f"{key}.key"
    path.write_text(f"{key}\n")
    path.chmod(0o600)
    return path


async def probed(server: SimulatorProcess, key: Path | None) -> ProbeCache:
    cache = ProbeCache()
    config = PipelineConfig(sglang_url=server.url, sglang_api_key_file=str(key) if key else None)
    await cache._refresh(config)
    return cache


async def test_a_refused_key_is_named_as_refused_with_its_file_and_fails_doctor(
    server: SimulatorProcess, tmp_path: Path
) -> None:
    wrong = key_file(tmp_path, "wrong-key")
    cache = await probed(server, wrong)
    reading = cache.server
    assert reading is not None
    assert (reading.healthy, reading.key_problem) == (True, "refused")
    assert (
        f"key refused: the key in {wrong} was refused by the server (/server_info answered "
        "HTTP 401): check the key; it must be the server's --api-key"
    ) in reading.detail
    assert "set api_key_file" not in reading.detail
    assert "wrong-key\n" not in reading.detail.replace(str(wrong), "")

    check = sglang_line(reading)
    assert not check.ok
    assert f"key refused: the key in {wrong} was refused by the server" in check.detail
    assert server_text(reading).splitlines()[0] == f"SGLang {server.url}: healthy · key refused"
    [alert] = cache.alerts(now=1.0)
    assert (alert.kind, alert.severity) == ("server_key", "warning")
    assert f"the key in {wrong} was refused" in alert.message


async def test_no_key_where_the_server_wants_one_says_to_set_api_key_file(
    server: SimulatorProcess, tmp_path: Path
) -> None:
    reading = (await probed(server, None)).server
    assert reading is not None
    assert (reading.healthy, reading.key_problem) == (True, "missing")
    assert "the server wants an API key: set api_key_file under [hosts.NAME.sglang]" in (
        reading.detail
    )
    assert not sglang_line(reading).ok
    assert "wants an API key" in server_text(reading).splitlines()[0]


async def test_the_right_key_is_no_trouble(server: SimulatorProcess, tmp_path: Path) -> None:
    cache = await probed(server, key_file(tmp_path, "right-key"))
    assert cache.server is not None
    assert cache.server.key_problem is None
    assert sglang_line(cache.server).ok
    assert cache.alerts(now=1.0) == []


async def test_a_key_file_that_cannot_be_read_fails_doctor_though_the_server_wants_no_key(
    tmp_path: Path,
) -> None:
    with running_simulator(tmp_path / "keyless", *FAST) as keyless:  # no --api-key
        cache = await probed(keyless, tmp_path / "absent.key")
    reading = cache.server
    assert reading is not None
    assert (reading.healthy, reading.key_problem) == (True, "unreadable")
    assert str(tmp_path / "absent.key") in reading.detail
    assert "EAGLE_API_KEY_FILE fail" in reading.detail
    assert not sglang_line(reading).ok
    [alert] = cache.alerts(now=1.0)
    assert alert.kind == "server_key"


def pipeline(tmp_path: Path, server: SimulatorProcess, key: Path) -> PipelineConfig:
    root = tmp_path / "datasets"
    write_id_prompts(root / "B3_math", 3)
    return PipelineConfig(
        datasets=DatasetsConfig(str(root)),
        sglang_url=server.url,
        sglang_api_key_file=str(key),
        jobs={"inference": JobSpec(RUNNER, kind="inference", per_dataset=True)},
    )


@pytest.fixture
async def wrong_key_agent(
    tmp_path: Path, state_dir: Path, server: SimulatorProcess
) -> AsyncIterator[tuple[AgentLink, Path]]:
    wrong = key_file(tmp_path, "wrong-key")
    link = await open_local_link(state_dir, pipeline(tmp_path, server, wrong))
    yield link, wrong
    await link.close()


async def launch_inference(link: AgentLink) -> JobInfo:
    params = LaunchParams("inference", "B3_math")
    job: JobInfo = await link.call(JOBS_LAUNCH, params, idempotency_key="run-b3")
    return job


async def test_a_runner_the_server_turns_away_says_why_wherever_its_end_is_shown(
    wrong_key_agent: tuple[AgentLink, Path],
) -> None:
    link, wrong = wrong_key_agent
    launched = await launch_inference(link)
    [job] = await jobs_where(link, lambda js: js[0].state not in ("starting", "running"))
    reason = cut(
        f"the server refused the key in {wrong} (HTTP 401 Unauthorized): check the key; it "
        "must be the server's --api-key"
    )  # cut only where the temporary folder's path is long
    assert (job.id, job.state, job.exit_code, job.exit_reason) == (
        launched.id, "failed", 2, reason,
    )  # fmt: skip
    assert "wrong-key" not in " ".join(job.argv)  # the key's path went by the environment

    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    [alert] = [a for a in snapshot.alerts if a.kind == "job_failed"]
    assert alert.message == f"job inference (B3_math) exited with code 2: {reason}"
    event = await _event(link, "job_failed")
    assert event == f"job inference (B3_math) ended (failed, code 2): {reason}"
    assert job_cells(job)[3:6] == ("failed", str(job.pid), f"2: {reason}")
    assert exit_text(job) == f"2 · {reason[:35]}…"  # the row's share; the rest is above


async def test_the_hosts_key_file_reaches_the_runner_with_no_flag_in_its_argv(
    tmp_path: Path, state_dir: Path, server: SimulatorProcess
) -> None:
    right = key_file(tmp_path, "right-key")
    async with local_link(state_dir, pipeline(tmp_path, server, right)) as link:
        await launch_inference(link)
        [job] = await jobs_where(link, lambda js: js[0].state not in ("starting", "running"))
    assert (job.state, job.exit_code, job.exit_reason) == ("exited", 0, None)
    assert sorted(response_ids(tmp_path / "datasets" / "B3_math")) == ["p0", "p1", "p2"]


def test_api_key_file_is_a_placeholder_that_says_where_to_set_it() -> None:
    spec = JobSpec(("run", "--api-key-file", "{api_key_file}"))
    rendered = render("own", spec, {"api_key_file": "/root/.sglang-key"})
    assert rendered.argv == ("run", "--api-key-file", "/root/.sglang-key")
    with pytest.raises(SpecError) as caught:
        render("own", spec, {"api_key_file": None})
    assert "needs {api_key_file}" in str(caught.value)
    assert "set api_key_file under [hosts.NAME.sglang]" in str(caught.value)


async def _event(link: AgentLink, kind: str, timeout_s: float = 30.0) -> str:
    """The message of the first `kind` event, once the agent's recorder has written it."""
    found = await read_until(
        lambda: link.call(EVENTS_LIST, EventsParams()),
        lambda listed: any(e.kind == kind for e in listed.events), f"a {kind} event", timeout_s,
    )  # fmt: skip
    return next(e.message for e in found.events if e.kind == kind)
