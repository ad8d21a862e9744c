"""{tokenizer}, {trust_remote_code}, {api} and {model} in job argv: the host's settings reach every job.

{trust_remote_code} is a whole argv element that becomes --trust-remote-code, or disappears (an
empty argument would be a different command line) when the host does not trust the code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.jobs.spec import SpecError, render
from agent.protocol import (
    JOBS_LAUNCH,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    ServerApi,
)
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from tests.support.datasets import write_prompts
from tests.support.job_programs import ARGV_ECHO
from tests.support.operations import local_link, wait_for_job

RUNNER_ARGV = ("{python}", "-m", "agent.pipeline.inference", "--tokenizer", "{tokenizer}",
               "{trust_remote_code}", "--dataset-dir", "{dataset_dir}")  # fmt: skip
VALUES = {"python": "/py", "tokenizer": "/models/kimi", "dataset_dir": "/d/B1"}


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        (
            "--trust-remote-code",
            ("--tokenizer", "/models/kimi", "--trust-remote-code", "--dataset-dir"),
        ),
        ("", ("--tokenizer", "/models/kimi", "--dataset-dir")),
    ],
)
def test_the_flag_placeholder_becomes_the_flag_or_nothing(
    flag: str, expected: tuple[str, ...]
) -> None:
    rendered = render("inference", JobSpec(RUNNER_ARGV), VALUES | {"trust_remote_code": flag})
    assert rendered.argv == ("/py", "-m", "agent.pipeline.inference", *expected, "/d/B1")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (JobSpec(("run", "--trust={trust_remote_code}")), "argv[1] uses {trust_remote_code} in"),
        (JobSpec(("run",), cwd="{trust_remote_code}"), "cwd uses {trust_remote_code}"),
        (JobSpec(("run",), env={"T": "{trust_remote_code}"}), "env.T uses {trust_remote_code}"),
    ],
)
def test_the_flag_placeholder_anywhere_but_a_whole_argv_element_is_refused(
    spec: JobSpec, fragment: str
) -> None:
    with pytest.raises(SpecError) as caught:
        render("j", spec, {"trust_remote_code": "--trust-remote-code"})
    assert fragment in str(caught.value)
    assert "whole argv element" in str(caught.value)


def test_a_tokenizer_placeholder_without_a_configured_path_says_where_to_set_it() -> None:
    with pytest.raises(SpecError) as caught:
        render("vocab", JobSpec(("run", "--tokenizer", "{tokenizer}")), {"tokenizer": None})
    assert "needs {tokenizer}" in str(caught.value)
    assert "[hosts.NAME.tokenizer]" in str(caught.value)


def pipeline(tmp_path: Path, *, trust: bool) -> PipelineConfig:
    root = tmp_path / "datasets"
    write_prompts(root / "B1", 2)
    echo = (sys.executable, "-c", ARGV_ECHO, str(tmp_path / "argv.json"), "{tokenizer}",
            "{trust_remote_code}", "{dataset}")  # fmt: skip
    return PipelineConfig(
        datasets=DatasetsConfig(str(root)),
        jobs={"echo": JobSpec(echo, per_dataset=True)},
        tokenizer="/models/kimi",
        trust_remote_code=trust,
    )


@pytest.fixture
async def trusting(tmp_path: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    link = await open_local_link(state_dir, pipeline(tmp_path, trust=True))
    yield link
    await link.close()


@pytest.mark.parametrize("trust", [True, False])
async def test_launched_jobs_get_the_hosts_tokenizer_and_trust_setting(
    tmp_path: Path, state_dir: Path, trust: bool
) -> None:
    async with local_link(state_dir, pipeline(tmp_path, trust=trust)) as link:
        params = LaunchParams("echo", "B1")
        info: JobInfo = await link.call(JOBS_LAUNCH, params, idempotency_key=f"t{trust}")
        await wait_for_job(link, info.id, {"exited"})
    argv = json.loads((tmp_path / "argv.json").read_text())["argv"][1:]
    assert argv == ["/models/kimi", *(["--trust-remote-code"] * trust), "B1"]


async def test_an_edited_argv_gets_the_same_expansion(trusting: AgentLink, tmp_path: Path) -> None:
    out = tmp_path / "edited.json"
    edited = (sys.executable, "-c", ARGV_ECHO, str(out), "{trust_remote_code}", "--x")
    info: JobInfo = await trusting.call(
        JOBS_LAUNCH, LaunchParams("echo", "B1", edited), idempotency_key="edited"
    )
    await wait_for_job(trusting, info.id, {"exited"})
    assert json.loads(out.read_text())["argv"][1:] == ["--trust-remote-code", "--x"]
    with pytest.raises(AgentRequestError) as caught:
        await trusting.call(
            JOBS_LAUNCH, LaunchParams("echo", "B1", ("run", "-t{trust_remote_code}")),
            idempotency_key="inside",
        )  # fmt: skip
    assert caught.value.code == "invalid_params"


def test_a_model_placeholder_without_a_configured_model_says_where_to_set_it() -> None:
    with pytest.raises(SpecError) as caught:
        render("inference", JobSpec(("run", "--model", "{model}")), {"model": None})
    assert "needs {model}" in str(caught.value)
    assert "model under [hosts.NAME.sglang]" in str(caught.value)


@pytest.mark.parametrize(
    ("api", "model", "expected"),
    [
        ("openai-chat", "moonshotai/kimi-k2", ["openai-chat", "moonshotai/kimi-k2"]),
        (None, "m", ["sglang", "m"]),
    ],
)
async def test_launched_jobs_get_the_hosts_api_and_model(
    tmp_path: Path, state_dir: Path, api: ServerApi | None, model: str, expected: list[str]
) -> None:
    echo = (sys.executable, "-c", ARGV_ECHO, str(tmp_path / "argv.json"), "{api}", "{model}")
    config = replace(
        pipeline(tmp_path, trust=False), jobs={"echo": JobSpec(echo)}, sglang_api=api,
        sglang_model=model,
    )  # fmt: skip
    async with local_link(state_dir, config) as link:
        info: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("echo"), idempotency_key="api")
        await wait_for_job(link, info.id, {"exited"})
    assert json.loads((tmp_path / "argv.json").read_text())["argv"][1:] == expected
