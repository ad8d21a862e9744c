"""Looking never changes what the box does: a config is taken once, then applied only on purpose.

With a dashboard open, `eagle-console --config other.toml status kimi` used to replace the
agent's pipeline through hello: the dashboard went empty with "datasets root … does not exist"
while the run went on. These run the real attach and daemon through the local link.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.protocol import (
    EVENTS_LIST,
    JOBS_LAUNCH,
    JOBS_STOP,
    SNAPSHOT,
    DatasetsConfig,
    ErrorCode,
    EventsList,
    EventsParams,
    JobInfo,
    JobSpec,
    LaunchParams,
    NotifyConfig,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
)
from agent.state import StatePaths, read_json
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from tests.support.datasets import write_prompts
from tests.support.operations import jobs_where, local_link

SLEEPER = JobSpec((sys.executable, "-c", "import time; time.sleep(60)"), grace_s=5.0)


def config(root: Path, **jobs: JobSpec) -> PipelineConfig:
    write_prompts(root / "B1_chat", 3)
    return PipelineConfig(datasets=DatasetsConfig(str(root)), jobs={"sleeper": SLEEPER, **jobs})


def kept_root(state_dir: Path) -> str:
    saved = read_json(StatePaths(state_dir).pipeline_config)
    return str(saved["datasets"]["root"])


async def root_shown(link: AgentLink) -> str | None:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    assert not [a for a in snapshot.alerts if a.kind == "datasets_root"]
    return snapshot.datasets_root


async def launch(link: AgentLink, key: str) -> JobInfo:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("sleeper"), idempotency_key=key)
    return job


async def test_a_fresh_agent_takes_the_first_config_and_then_knows_it(
    tmp_path: Path, state_dir: Path
) -> None:
    first = config(tmp_path / "a")
    async with local_link(state_dir, first) as link:
        assert link.hello_result is not None
        assert link.hello_result.pipeline_taken
        assert link.config_differences == ()
        assert await root_shown(link) == str(tmp_path / "a")
    async with local_link(state_dir, first) as again:
        assert again.hello_result is not None
        assert (again.hello_result.pipeline_taken, again.config_differences) == (False, ())
    assert kept_root(state_dir) == str(tmp_path / "a")


async def test_a_look_with_another_config_leaves_the_run_and_the_dashboard_alone(
    tmp_path: Path, state_dir: Path
) -> None:
    async with local_link(state_dir, config(tmp_path / "a")) as dashboard:
        run = await launch(dashboard, "run-1")
        async with local_link(state_dir, config(tmp_path / "b")) as looker:
            assert looker.config_differences == (
                f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}",
            )
            assert looker.hello_result is not None
            assert not looker.hello_result.pipeline_taken
            assert await root_shown(looker) == str(tmp_path / "a")
        assert await root_shown(dashboard) == str(tmp_path / "a")
        [running] = await jobs_where(dashboard, lambda js: js[0].state == "running")
        assert running.id == run.id
    assert kept_root(state_dir) == str(tmp_path / "a")


async def test_a_console_whose_config_differs_starts_nothing_but_may_stop(
    tmp_path: Path, state_dir: Path
) -> None:
    async with (
        local_link(state_dir, config(tmp_path / "a")) as owner,
        local_link(state_dir, config(tmp_path / "b")) as other,
    ):
        run = await launch(owner, "run-1")
        with pytest.raises(AgentRequestError, match="datasets.root: .* → ") as refused:
            await launch(other, "run-2")
        assert refused.value.code == ErrorCode.CONFIG_DIFFERS
        assert "eagle-console apply" in refused.value.detail
        stopped = await other.call(JOBS_STOP, StopParams(run.id), idempotency_key="stop-1")
        assert stopped.outcome == "stopped"
        assert [job.id for job in await jobs_where(owner, lambda js: True)] == [run.id]


async def test_apply_changes_the_config_names_what_changed_and_is_kept(
    tmp_path: Path, state_dir: Path
) -> None:
    owner = await open_local_link(state_dir, config(tmp_path / "a"))
    hook = NotifyConfig("http://127.0.0.1:9/hook-s3cret", min_severity="error")
    secretive = JobSpec(("true",), env={"TOKEN": "env-s3cret"})
    wanted = PipelineConfig(
        datasets=DatasetsConfig(str(tmp_path / "b")), jobs={"sleeper": SLEEPER, "t": secretive},
        notify=hook,
    )  # fmt: skip
    write_prompts(tmp_path / "b" / "B2_code", 3)
    other = await open_local_link(state_dir, wanted)
    try:
        assert await root_shown(owner) == str(tmp_path / "a")
        changed = await other.apply_pipeline(wanted)
        assert changed == (
            f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}",
            "jobs added: t",
            "notify added (http://127.0.0.1/…)",
        )
        assert other.config_differences == ()
        assert await root_shown(owner) == str(tmp_path / "b")
        assert (await launch(other, "run-1")).name == "sleeper"
        with pytest.raises(AgentRequestError, match="jobs removed: t"):
            await launch(owner, "run-2")  # its config is the stale one now
        assert await other.apply_pipeline(wanted) == ()
        found: EventsList = await other.call(EVENTS_LIST, EventsParams())
    finally:
        await other.close()
        await owner.close()
    [applied] = [e for e in found.events if e.kind == "config_applied"]
    assert applied.asked_by is not None
    assert "datasets.root" in applied.message
    audit = (state_dir / "audit.jsonl").read_text()
    assert "pipeline.apply" in audit
    assert "s3cret" not in audit
    assert "s3cret" not in json.dumps([e.message for e in found.events])

    assert stop_daemon(StatePaths(state_dir))  # a restarted daemon runs what was applied
    async with local_link(state_dir, None) as again:
        assert await root_shown(again) == str(tmp_path / "b")
