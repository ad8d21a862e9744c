"""A drafter server is not started on a checkpoint that failed the drafter check.

A real daemon; checkpoints written by SpecForge's and speculators' own save code; the drafter
server is the SGLang simulator, named with SGLang's --speculative-draft-model-path. A
speculators folder (SGLang has no loader for it) is refused with the field and its fix, served
when the start is forced; a SpecForge export passes and the simulator serves it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.protocol import (
    DRAFTER_CHECK,
    JOBS_LAUNCH,
    DrafterCheck,
    DrafterCheckParams,
    ErrorCode,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from console.link.agent_link import AgentRequestError
from tests.support.drafters import shared_drafters
from tests.support.operations import local_link, snapshot_where, text_appears
from tests.support.ports import free_port

pytestmark = [
    pytest.mark.slow,  # the trainers' save code and export take seconds
    pytest.mark.timeout(360),  # a bound for a loaded machine (6 workers on 2 cores), not a goal
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return shared_drafters(tmp_path_factory, tmp_path_factory.mktemp("drafters") / "built")


def pipeline(built: dict[str, Path], checkpoint: str) -> PipelineConfig:
    server = (sys.executable, "-m", "agent.simulator", "--port", str(free_port()),
              "--speculative-accept-length", "2.5", "--speculative-algorithm", "EAGLE3",
              "--speculative-draft-model-path", checkpoint, "--model-path", str(built["target"]))  # fmt: skip
    vocab = (sys.executable, "-m", "agent.pipeline.vocab", "--out", str(built["vocab"]))
    return PipelineConfig(jobs={
        "drafter": JobSpec(server, kind="drafter_server", grace_s=5),
        "vocab": JobSpec(vocab, kind="vocab"),
    })  # fmt: skip


async def test_a_drafter_that_fails_its_check_is_refused_and_served_only_when_forced(
    built: dict[str, Path], state_dir: Path
) -> None:
    async with local_link(state_dir, pipeline(built, str(built["speculators"]))) as link:
        with pytest.raises(AgentRequestError) as refused:
            await link.call(JOBS_LAUNCH, LaunchParams("drafter"), idempotency_key="d1")
        snapshot = await snapshot_where(
            link, lambda s: s.drafter_check is not None and s.drafter_check.ok is False
        )
        forced: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("drafter", force=True), idempotency_key="d2"
        )
    assert refused.value.code == ErrorCode.DRAFTER_CHECK_FAILED
    assert "architecture: speculators eagle3" in refused.value.detail
    assert "start --force" in refused.value.detail
    check = snapshot.drafter_check
    assert check is not None
    assert check.checkpoint == str(built["speculators"])
    assert [f.name for f in check.fields if f.ok is False] == ["architecture"]
    assert any(a.kind == "drafter_check_failed" for a in snapshot.alerts)
    assert forced.name == "drafter"


async def test_a_good_checkpoint_passes_and_the_simulator_serves_it(
    built: dict[str, Path], state_dir: Path
) -> None:
    async with local_link(state_dir, pipeline(built, str(built["specforge"]))) as link:
        job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("drafter"), idempotency_key="d")
        await text_appears(Path(job.log_path or ""), "The server is fired up", timeout_s=60)
        other: DrafterCheck = await link.call(DRAFTER_CHECK, DrafterCheckParams(str(built["step"])))
        snapshot = await snapshot_where(
            link, lambda s: s.drafter_check is not None and s.drafter_check.ok is not None
        )
    assert snapshot.drafter_check is not None
    assert snapshot.drafter_check.ok is True
    assert (snapshot.drafter_check.layout, snapshot.drafter_check.server) == ("specforge", "sglang")
    assert other.ok is False  # a training step asked for by path: not servable
    assert other.fields[0].fix.startswith("specforge export --to sglang")
