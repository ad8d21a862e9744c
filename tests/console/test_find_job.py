"""Which job `eagle-console redeploy HOST JOB` means: by id, name, name/dataset or dataset."""

from __future__ import annotations

import pytest

from agent.protocol import JobInfo, Snapshot
from console.link.redeploy import JobNotFoundError, find_job

JOBS = (
    JobInfo("inference-B1-1", "inference", "inference", "running", (), dataset="B1"),
    JobInfo("inference-B2-1", "inference", "inference", "running", (), dataset="B2"),
    JobInfo("inference-B2-0", "inference", "inference", "exited", (), dataset="B2"),
    JobInfo("sglang-1", "sglang", "server", "running", ()),
)
SNAPSHOT = Snapshot(1.0, "h", "/d", (), jobs=JOBS)


@pytest.mark.parametrize(
    ("ref", "job_id"),
    [
        ("inference-B2-0", "inference-B2-0"),
        ("sglang", "sglang-1"),
        ("inference/B2", "inference-B2-1"),
        ("B1", "inference-B1-1"),
    ],
)
def test_a_job_is_found_by_id_name_name_and_dataset_or_dataset(ref: str, job_id: str) -> None:
    assert find_job(SNAPSHOT, ref).id == job_id


@pytest.mark.parametrize(("ref", "said"), [("inference", "more than one"), ("B9", "no job")])
def test_an_ambiguous_or_unknown_reference_names_the_jobs(ref: str, said: str) -> None:
    with pytest.raises(JobNotFoundError, match=said) as caught:
        find_job(SNAPSHOT, ref)
    assert "inference-B1-1" in str(caught.value)
