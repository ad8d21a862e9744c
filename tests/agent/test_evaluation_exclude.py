"""An export job leaves the evaluation's prompts out of training without being told to.

The agent adds `--exclude FILE` for each evaluate job's `--prompts` to a job of kind export that
runs our export, unless its argv names the file already; the added flags are in the job's argv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent.jobs.evaluation_exclude import with_evaluation_excluded
from agent.protocol import JOBS_LAUNCH, JobInfo, JobSpec, LaunchParams, PipelineConfig
from tests.support.operations import local_link

EXPORT = ("{python}", "-m", "agent.pipeline.export", "--out", "/x")
EVALUATE = ("{python}", "-m", "agent.pipeline.evaluate", "--prompts", "{state_dir}/held.jsonl")
VALUES = {"python": "/py", "state_dir": "/s"}


def pipeline(**jobs: JobSpec) -> PipelineConfig:
    return PipelineConfig(jobs=jobs)


def test_each_evaluations_prompts_are_excluded_once() -> None:
    jobs = pipeline(
        export=JobSpec(EXPORT, kind="export"), evaluate=JobSpec(EVALUATE, kind="evaluate"),
        other=JobSpec(("{python}", "-m", "x", "--prompts", "/bench.jsonl"), kind="evaluate"),
        needs=JobSpec(("e", "--prompts", "{dataset_dir}/p.jsonl"), kind="evaluate"),
    )  # fmt: skip
    argv = with_evaluation_excluded(EXPORT, "export", jobs, VALUES)
    assert argv == (*EXPORT, "--exclude", "/s/held.jsonl", "--exclude", "/bench.jsonl")
    named = (*EXPORT, "--exclude", "/s/held.jsonl")
    assert with_evaluation_excluded(named, "export", jobs, VALUES) == (
        *named, "--exclude", "/bench.jsonl",
    )  # fmt: skip
    assert with_evaluation_excluded(EXPORT, "command", jobs, VALUES) == EXPORT
    script = ("python", "my_export.py")
    assert with_evaluation_excluded(script, "export", jobs, VALUES) == script


async def test_a_launched_export_job_carries_the_exclusion_in_its_argv(
    tmp_path: Path, state_dir: Path
) -> None:
    echo = (sys.executable, "-c", "pass", "agent.pipeline.export")
    config = pipeline(
        export=JobSpec(echo, kind="export"),
        evaluate=JobSpec(("e", "--prompts", str(tmp_path / "held.jsonl")), kind="evaluate"),
    )
    async with local_link(state_dir, config) as link:
        info: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("export"), idempotency_key="x")
    assert info.argv == (*echo, "--exclude", str(tmp_path / "held.jsonl"))


def test_a_relative_prompts_file_is_the_evaluations_own_and_other_flags_do_not_count() -> None:
    jobs = pipeline(
        evaluate=JobSpec(("e", "--prompts", "held.jsonl"), kind="evaluate", cwd="/runs/eval"),
    )
    argv = (*EXPORT, "--prompts-file", "/runs/eval/held.jsonl")  # another flag's value
    assert with_evaluation_excluded(argv, "export", jobs, VALUES)[-2:] == (
        "--exclude", "/runs/eval/held.jsonl",
    )  # fmt: skip
    named = (*EXPORT, "--exclude=/runs/eval/held.jsonl")
    assert with_evaluation_excluded(named, "export", jobs, VALUES) == named


def test_one_file_named_twice_is_read_once_and_two_of_one_name_are_told_apart(
    tmp_path: Path,
) -> None:
    from agent.pipeline.export.exclusions import load_exclusions

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        text = f"why is the sum of the numbers in folder {folder} what it is"
        (tmp_path / folder / "mbpp.jsonl").write_text(json.dumps({"id": 1, "prompt": text}) + "\n")
    loaded = load_exclusions(
        [tmp_path / "a" / "mbpp.jsonl", tmp_path / "a" / ".." / "a" / "mbpp.jsonl",
         tmp_path / "b" / "mbpp.jsonl"], 13, lambda ids: "",
    )  # fmt: skip
    assert sorted(loaded.files) == ["a/mbpp", "b/mbpp"]
