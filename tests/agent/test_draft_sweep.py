"""A draft-settings sweep: each setting served, evaluated and stopped by the agent, the best named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.plans.draft_settings import setting_argv, setting_name
from agent.protocol import (
    OPERATIONS_SWEEP,
    DraftSetting,
    JobSpec,
    PipelineConfig,
    SweepParams,
)
from agent.state import StatePaths
from console.link.agent_link import AgentRequestError
from console.link.local_link import open_local_link
from tests.support.export_data import write_jsonl
from tests.support.operations import jobs_now, jobs_where, local_link, operation_ended
from tests.support.ports import free_port

SGLANG = ("python", "-m", "sglang.launch_server", "--speculative-num-steps", "3",
          "--speculative-eagle-topk=1")  # fmt: skip
VLLM = ("vllm", "serve", "m", "--speculative-config", '{"method": "eagle3", "model": "/d"}')


def test_a_setting_replaces_the_servers_flags_where_they_stand() -> None:
    edited = setting_argv(SGLANG, DraftSetting(steps=5, topk=4, draft_tokens=8))
    assert edited == ("python", "-m", "sglang.launch_server", "--speculative-num-steps", "5",
                      "--speculative-eagle-topk=4", "--speculative-num-draft-tokens", "8")  # fmt: skip
    config = setting_argv(VLLM, DraftSetting(speculative_tokens=3))[-1]
    assert json.loads(config) == {"method": "eagle3", "model": "/d", "num_speculative_tokens": 3}
    assert setting_name(DraftSetting(steps=5, topk=4)) == "steps 5 · top-k 4"


@pytest.mark.parametrize(
    ("argv", "setting", "why"),
    [
        (VLLM, DraftSetting(steps=3), "vLLM sets only num_speculative_tokens"),
        (SGLANG, DraftSetting(speculative_tokens=3), "SGLang sets steps, top-k and draft tokens"),
        (("vllm", "serve", "m"), DraftSetting(speculative_tokens=3), "has no --speculative-config"),
        (("vllm", "serve", "--speculative-config", "[1]"), DraftSetting(speculative_tokens=3),
         "is not a JSON object"),
        (("python", "serve.py"), DraftSetting(steps=1), "neither SGLang nor vLLM"),
    ],
)  # fmt: skip
def test_a_setting_the_server_cannot_take_says_why(
    argv: tuple[str, ...], setting: DraftSetting, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        setting_argv(argv, setting)


def pipeline(tmp_path: Path, port: int) -> PipelineConfig:
    prompts = tmp_path / "held_out.jsonl"
    write_jsonl(prompts, [{"id": i, "input_ids": [i + 1, i + 2, 7]} for i in range(6)])
    server = (sys.executable, "-m", "agent.simulator", "--port", str(port), "--speed", "4",
              "--mean-tokens", "400", "--sd-tokens", "1", "--seed", "4", "--vocab-size", "1000",
              "--speculative-algorithm", "EAGLE3", "--speculative-accept-length", "1.8",
              "--speculative-num-draft-tokens", "4")  # fmt: skip
    evaluate = ("{python}", "-m", "agent.pipeline.evaluate", "--server", f"http://127.0.0.1:{port}",
                "--prompts", str(prompts), "--num-prompts", "4", "--concurrency", "1,4",
                "--max-new-tokens", "32", "--ignore-eos", "--warmup", "0", "--wait-for-server",
                "60", "--out", str(tmp_path / "eval"))  # fmt: skip
    return PipelineConfig(jobs={
        "drafter": JobSpec(server, kind="drafter_server", grace_s=5),
        "evaluate": JobSpec(evaluate, kind="evaluate"),
    })  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_each_setting_is_served_evaluated_stopped_and_the_best_named(
    tmp_path: Path, state_dir: Path
) -> None:
    async with local_link(state_dir, pipeline(tmp_path, free_port())) as link:
        settings = (DraftSetting(draft_tokens=2), DraftSetting(draft_tokens=6))
        started = await link.call(
            OPERATIONS_SWEEP, SweepParams("drafter", "evaluate", settings), idempotency_key="s1"
        )
        info = await operation_ended(link, started.id, 240)
        jobs = await jobs_now(link)
    assert info.state == "done", info
    assert info.outcome.startswith("best at c=1: draft tokens ")
    assert "; c=4: draft tokens " in info.outcome
    assert "--speculative-num-draft-tokens" in info.outcome.split("Serve c=1's with: ")[1]
    for index in (0, 1):
        assert (tmp_path / "eval" / "sweep" / started.id / str(index) / "eval.json").exists()
    servers = [job for job in jobs if job.name == "drafter"]
    assert [job.state for job in servers] == ["stopped", "stopped"], "each stopped in its turn"
    assert servers[0].argv[-2:] == ("--speculative-num-draft-tokens", "2")


async def test_a_sweep_the_server_cannot_take_is_refused_before_anything_starts(
    tmp_path: Path, state_dir: Path
) -> None:
    async with local_link(state_dir, pipeline(tmp_path, free_port())) as link:
        with pytest.raises(AgentRequestError) as caught:
            await link.call(OPERATIONS_SWEEP, SweepParams(
                "drafter", "evaluate", (DraftSetting(speculative_tokens=3),)
            ), idempotency_key="bad")  # fmt: skip
        assert "SGLang sets steps, top-k and draft tokens" in caught.value.detail
        with pytest.raises(AgentRequestError) as missing:
            await link.call(OPERATIONS_SWEEP, SweepParams(
                "evaluate", "drafter", (DraftSetting(steps=1),)
            ), idempotency_key="swapped")  # fmt: skip
        assert "no drafter_server job 'evaluate'" in missing.value.detail
        assert await jobs_now(link) == ()


def test_the_spelling_and_the_occurrence_the_servers_parser_keeps_are_edited() -> None:
    underscored = ("vllm", "serve", "m", "--speculative_config", '{"method": "eagle3"}')
    edited = setting_argv(underscored, DraftSetting(speculative_tokens=2))
    assert edited[-2] == "--speculative_config"
    assert json.loads(edited[-1]) == {"method": "eagle3", "num_speculative_tokens": 2}
    twice = (*SGLANG, "--speculative-num-steps", "7")
    assert setting_argv(twice, DraftSetting(steps=2))[-2:] == ("--speculative-num-steps", "2"), (
        "argparse keeps the last: that one is edited"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_an_agent_stopped_mid_sweep_resumes_it_with_the_same_jobs(
    tmp_path: Path, state_dir: Path
) -> None:
    """Its server left running, not stopped by the agent's own shutdown: the resumed sweep's
    evaluation (the same job, by its key) finds it serving."""
    config = pipeline(tmp_path, free_port())
    link = await open_local_link(state_dir, config)
    settings = (DraftSetting(draft_tokens=2), DraftSetting(draft_tokens=6))
    started = await link.call(
        OPERATIONS_SWEEP, SweepParams("drafter", "evaluate", settings), idempotency_key="s"
    )
    await jobs_where(link, lambda jobs: any(j.name == "evaluate" for j in jobs))
    await link.close()
    stop_daemon(StatePaths(state_dir))
    async with local_link(state_dir, config) as link:
        info = await operation_ended(link, started.id, 240)
        jobs = await jobs_now(link)
    assert info.state == "done", info
    assert "failed" not in [step.state for step in info.steps], info.steps
    assert sorted((j.name, j.state) for j in jobs) == [
        ("drafter", "stopped"), ("drafter", "stopped"), ("evaluate", "exited"),
        ("evaluate", "exited"),
    ], "one server and one evaluation per setting, none twice"  # fmt: skip
