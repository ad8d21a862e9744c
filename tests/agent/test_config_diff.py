"""What applying one config over another changes, in short lines that never show a secret."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.protocol import (
    DatasetsConfig,
    JobSpec,
    NotifyConfig,
    PipelineConfig,
    pipeline_differences,
    without_secrets,
)

HOOK = "https://ntfy.example/eagle-topic-secret?auth=tok3n"
BASE = PipelineConfig(
    datasets=DatasetsConfig("/data/a", budget=10_000_000, budgets={"B8_math": 5_000_000}),
    sglang_url="http://127.0.0.1:30000",
    jobs={
        "inference": JobSpec(("python", "-m", "run", "--budget", "1"), kind="inference"),
        "vocab": JobSpec(("python", "-m", "vocab")),
    },
    notify=NotifyConfig(HOOK),
)


def test_the_same_config_has_no_differences() -> None:
    assert pipeline_differences(BASE, dataclasses.replace(BASE)) == ()
    assert pipeline_differences(PipelineConfig(), PipelineConfig()) == ()


def test_another_datasets_root_is_named_with_both_values() -> None:
    wanted = dataclasses.replace(BASE, datasets=DatasetsConfig("/data/b", budget=10_000_000,
                                                               budgets={"B8_math": 5_000_000}))  # fmt: skip
    assert pipeline_differences(BASE, wanted) == ("datasets.root: /data/a → /data/b",)


def test_budgets_are_named_per_dataset_and_numbers_read_with_separators() -> None:
    assert BASE.datasets is not None
    datasets = dataclasses.replace(
        BASE.datasets, budget=None, budgets={"B8_math": 6_000_000, "B9": 1_000}, guard="stop"
    )
    assert pipeline_differences(BASE, dataclasses.replace(BASE, datasets=datasets)) == (
        "datasets.budget: 10,000,000 → none",
        "datasets.budgets.B8_math: 5,000,000 → 6,000,000",
        "datasets.budgets.B9: none → 1,000",
        "datasets.guard: alert → stop",
    )


def test_jobs_added_removed_and_changed_name_the_fields_not_the_argv() -> None:
    jobs = {
        "inference": JobSpec(("python", "-m", "run", "--budget", "2"), kind="inference",
                             env={"HF_TOKEN": "hf_secret"}),
        "train": JobSpec(("python", "-m", "train")),
    }  # fmt: skip
    differences = pipeline_differences(BASE, dataclasses.replace(BASE, jobs=jobs))
    assert differences == (
        "jobs added: train",
        "jobs removed: vocab",
        "job inference: argv, env changed",
    )
    assert not any("--budget" in line or "hf_secret" in line for line in differences)


def test_a_webhook_url_is_only_said_to_have_changed() -> None:
    other = dataclasses.replace(BASE, notify=NotifyConfig("https://ntfy.example/other-secret"))
    assert pipeline_differences(BASE, other) == ("notify.url changed",)
    added = pipeline_differences(dataclasses.replace(BASE, notify=None), BASE)
    assert added == ("notify added (https://ntfy.example/…)",)
    assert pipeline_differences(BASE, dataclasses.replace(BASE, notify=None)) == (
        "notify removed (https://ntfy.example/…)",
    )


def test_a_config_with_no_datasets_and_plain_fields() -> None:
    wanted = dataclasses.replace(
        BASE, datasets=None, sglang_url=None, trust_remote_code=True, deploy_roots=("/srv",)
    )
    assert pipeline_differences(BASE, wanted) == (
        "datasets removed (root /data/a)",
        "sglang_url: http://127.0.0.1:30000 → none",
        "deploy_roots: [] → [/srv]",
        "trust_remote_code: false → true",
    )
    assert pipeline_differences(PipelineConfig(), BASE)[0] == "datasets added (root /data/a)"


def test_every_field_that_differs_is_named() -> None:
    """A field added to the config one day is compared too: no difference goes unsaid."""
    for field in dataclasses.fields(PipelineConfig):
        if field.name in ("datasets", "jobs", "notify"):
            continue
        value: Any = {"sglang_api": "openai-chat", "external": {"sglang": "sglang.*"},
                 "deploy_roots": ("/srv",), "trust_remote_code": True}.get(field.name, "x")  # fmt: skip
        wanted = dataclasses.replace(PipelineConfig(), **{field.name: value})
        assert [line.split(":")[0].split(".")[0] for line in
                pipeline_differences(PipelineConfig(), wanted)] == [field.name]  # fmt: skip


def test_a_record_of_a_config_keeps_no_secret() -> None:
    jobs = {"train": JobSpec(("python",), env={"HF_TOKEN": "hf_secret"})}
    kept = without_secrets(dataclasses.replace(BASE, jobs=jobs))
    assert kept.notify is not None
    assert kept.notify.url == "https://ntfy.example/…"
    assert kept.jobs["train"].env == {"HF_TOKEN": "…"}
    assert kept.jobs["train"].argv == ("python",)
    assert without_secrets(PipelineConfig()) == PipelineConfig()
