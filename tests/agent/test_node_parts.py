"""A job's part on one box of several: filled in, recorded, refused where it cannot hold.

Only the console, which reaches every box, can start a job across boxes: an agent asked for one
part alone (a restart, the autopilot, a `start` from an older console) refuses and says who can.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.jobs.nodes import RDZV_ID, node_values, read_node
from agent.jobs.spec import SpecError, render
from agent.jobs.torchrun_reason import torchrun_reason
from agent.operations.restarts import _why_not
from agent.operations.stages import Context, Fail, Wait, job_stage
from agent.protocol import (
    JOBS_LAUNCH,
    JobInfo,
    JobSpec,
    LaunchParams,
    NodePart,
    PipelineConfig,
    Snapshot,
)
from console.link.agent_link import AgentRequestError
from tests.support.operations import jobs_where, local_link

ECHO = "import json, sys; json.dump(sys.argv[2:], open(sys.argv[1], 'w'))"
SPANS = JobSpec(("run", "--nnodes={nnodes}", "--node-rank={node_rank}", "--rdzv-id={rdzv_id}"),
                kind="train", nodes=("a", "b"))  # fmt: skip


def test_the_part_fills_the_torchrun_placeholders() -> None:
    values = node_values("train", SPANS, NodePart(1, 2, "train-1f2e", ("a", "b")))
    assert render("train", SPANS, values).argv == (
        "run",
        "--nnodes=2",
        "--node-rank=1",
        "--rdzv-id=train-1f2e",
    )


@pytest.mark.parametrize(
    ("spec", "node", "fragment"),
    [
        (SPANS, None, "spans 2 boxes (a, b): only the console starts it"),
        (JobSpec(("run",)), NodePart(0, 2, "r"), "runs on one box (its config names no nodes)"),
        (SPANS, NodePart(0, 3, "r"), "node 0 of 3 asked for, but its config spans 2 boxes"),
        (SPANS, NodePart(2, 2, "r"), "node 2 of 2 asked for"),
        (SPANS, NodePart(0, 2, "-x; rm -rf"), "is not a plain name"),
        (SPANS, NodePart(0, 2, "r" * 65), "is not a plain name"),
    ],
)
def test_a_part_that_cannot_hold_is_refused_with_the_reason(
    spec: JobSpec, node: NodePart | None, fragment: str
) -> None:
    with pytest.raises(SpecError) as caught:
        node_values("train", spec, node)
    assert fragment in str(caught.value)


def test_a_job_on_one_box_that_names_a_node_placeholder_says_how_to_set_it() -> None:
    with pytest.raises(SpecError) as caught:
        render(
            "train", JobSpec(("run", "{node_rank}")), node_values("train", JobSpec(("x",)), None)
        )
    assert "needs {node_rank}" in str(caught.value)
    assert "nodes = [...]" in str(caught.value)


@pytest.mark.parametrize(
    "record",
    [
        None,
        "r",
        {"rank": True, "nnodes": 2, "rdzv_id": "r"},
        {"rank": 2, "nnodes": 2, "rdzv_id": "r"},
        {"rank": 0, "nnodes": 10**9, "rdzv_id": "r"},
        {"rank": 0, "nnodes": 2, "rdzv_id": "bad id"},
        {"rank": "0", "nnodes": 2, "rdzv_id": "r"},
    ],
)
def test_a_recorded_part_that_is_not_one_reads_as_none(record: object) -> None:
    assert read_node(record) is None


async def test_the_agent_records_the_part_and_refuses_a_lone_start(
    tmp_path: Path, state_dir: Path
) -> None:
    out = tmp_path / "argv.json"
    argv = (sys.executable, "-c", ECHO, str(out), "{node_rank}", "{nnodes}", "{rdzv_id}")
    jobs = {"train": JobSpec(argv, kind="train", nodes=("a", "b"))}
    async with local_link(state_dir, PipelineConfig(jobs=jobs)) as link:
        with pytest.raises(AgentRequestError) as caught:
            await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="alone")
        assert caught.value.code == "invalid_params"
        assert "only the console starts it, on every box at once" in caught.value.detail
        part = NodePart(1, 2, "train-ab12", ("a", "b"))
        info: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("train", node=part), idempotency_key="part"
        )
        [ended] = await jobs_where(link, lambda jobs: [j.state for j in jobs] == ["exited"])
    assert json.loads(out.read_text()) == ["1", "2", "train-ab12"]
    assert (info.node, ended.node) == (part, part), "kept in job.json, read back in every list"


def test_a_part_is_never_restarted_alone() -> None:
    spec = JobSpec(("run",), kind="train", restart="on-failure")
    part = JobInfo("t1", "train", "train", "failed", (), exit_code=1, node=NodePart(0, 2, "r"))
    assert "one box's part of a job across boxes" in str(_why_not(part, spec))
    assert _why_not(JobInfo("t1", "train", "train", "failed", (), exit_code=1), spec) is None


def context(pipeline: PipelineConfig, *jobs: JobInfo) -> Context:
    return Context(
        Snapshot(100.0, "a", "/data", (), jobs=jobs), pipeline, 0.0, autopilot_since=50.0
    )


def test_the_autopilot_waits_for_the_console_to_start_a_job_across_boxes() -> None:
    pipeline = PipelineConfig(jobs={"train": SPANS})
    first = job_stage("train")(context(pipeline))
    assert isinstance(first, Wait)
    assert "spans 2 boxes (a, b), which only the console starts together" in first.detail
    failed = JobInfo("t1", "train", "train", "failed", (), started_at=60.0, exit_code=1)
    again = job_stage("train")(context(pipeline, failed))
    assert isinstance(again, Fail), "a failed part is the console's to start again, on every box"
    assert "only the console starts together" in again.reason


TORCHRUN_TAIL = """\
node_rank is only used for static rdzv_backend. It will be ignored for rdzv_backend=c10d.
node 1: the loss went NaN at step 1
E1207 05:26:56.256000 26447 torch/distributed/elastic/multiprocessing/api.py:1002] failed \
(exitcode: 3) local_rank: 0 (pid: 26455) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in \
launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/work/train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_05:26:56
  host      : box-b
  rank      : 1 (local_rank: 0)
  exitcode  : 3 (pid: 26455)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_torchruns_summary_gives_the_rank_the_code_and_the_workers_words() -> None:
    reason = torchrun_reason(TORCHRUN_TAIL.splitlines())
    assert reason == (
        "torchrun: rank 1 (local_rank: 0) exitcode 3: node 1: the loss went NaN at step 1"
    )
    recorded = TORCHRUN_TAIL.replace(
        "traceback : To enable", "traceback : ValueError: bad batch\n  x : To enable"
    )
    assert torchrun_reason(recorded.splitlines()) == (
        "torchrun: rank 1 (local_rank: 0) exitcode 3: ValueError: bad batch"
    ), "a worker wrapped in @record leaves its error in the summary, which wins"
    assert torchrun_reason(["Traceback (most recent call last):", "ValueError: x"]) is None


def test_a_recorded_workers_traceback_gives_its_error_line() -> None:
    recorded = TORCHRUN_TAIL.replace(
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "  traceback : Traceback (most recent call last):\n"
        '    File "/work/train.py", line 9, in main\n'
        "      loss.backward()\n"
        "  RuntimeError: CUDA error: an illegal memory access was encountered\n",
    )
    assert torchrun_reason(recorded.splitlines()) == (
        "torchrun: rank 1 (local_rank: 0) exitcode 3: RuntimeError: CUDA error: an illegal "
        "memory access was encountered"
    )


@pytest.mark.parametrize("name", ["_train", "-x", "..", "trâin", "a" * 90, "train"])
def test_every_job_name_gives_a_rendezvous_id_the_agent_takes(name: str) -> None:
    from console.link.node_jobs import new_rdzv_id

    assert RDZV_ID.fullmatch(new_rdzv_id(name)) is not None
