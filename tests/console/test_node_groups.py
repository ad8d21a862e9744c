"""Jobs across boxes in the console: the config holds together, the parts make one group.

The config names each box once per job, on every box; the group is put back together from each
box's report, but only where the config puts that box at that rank, so one box cannot end
another's training by claiming its rendezvous id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import JobInfo, JobState, NodePart
from console.config import ConfigError, ConsoleConfig, load_config, node_spans
from console.model.node_groups import node_groups, parts_to_stop, why_stopped
from tests.support.config_ranges import write_config

PY = "/usr/bin/python3"


def box(name: str, nodes: str = '["a", "b"]', extra: str = "") -> str:
    return (
        f'[hosts.{name}]\nssh = "local"\nstate_dir = "/tmp/{name}"\n'
        f'[hosts.{name}.jobs.train]\nargv = ["{PY}", "train.py"]\nkind = "train"\n'
        f"nodes = {nodes}\n{extra}"
    )


def load(tmp_path: Path, text: str) -> ConsoleConfig:
    return load_config(write_config(tmp_path, text))


def test_a_job_across_two_boxes_loads(tmp_path: Path) -> None:
    config = load(tmp_path, box("a") + box("b"))
    assert node_spans(config.hosts) == {"a": {"train": ("a", "b")}, "b": {"train": ("a", "b")}}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (box("a", '["a"]'), "hosts.a.jobs.train.nodes: got ['a']; expected two to 1,024 host"),
        (box("a", '["a", "a"]'), "each once"),
        (box("a", '["a", ""]'), "each once"),
        (box("a", '"a,b"'), "expected a list of host names"),
        (
            box("a", '["a", "b"]', 'restart = "on-failure"\n') + box("b"),
            "hosts.a.jobs.train.restart: got 'on-failure' on a job across boxes",
        ),
        (box("a", '["a", "b"]', "per_dataset = true\n") + box("b"), "set on a per-dataset job"),
        (
            box("a", '["b", "c"]') + box("b", '["b", "c"]') + box("c", '["b", "c"]'),
            "hosts.a.jobs.train.nodes: ['b', 'c'] leaves out a itself",
        ),
        (box("a"), "names 'b', which is not a host in [hosts]"),
        (
            box("a") + '[hosts.b]\nssh = "local"\n',
            "b has no job 'train'; define "
            "[hosts.b.jobs.train] too (its own argv, with nodes = ['a', 'b'])",
        ),
        (box("a") + box("b", '["b", "a"]'), "but hosts.b.jobs.train.nodes is ['b', 'a']"),
    ],
)
def test_a_job_across_boxes_that_does_not_hold_together_is_refused(
    tmp_path: Path, text: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert fragment in str(caught.value)
    assert str(tmp_path / "eagle-console.toml") in str(caught.value)


SPANS = {"a": {"train": ("a", "b")}, "b": {"train": ("a", "b")}, "c": {}}


def part(rank: int, state: JobState, rdzv_id: str = "train-1", **fields: object) -> JobInfo:
    node = NodePart(rank, 2, rdzv_id, ("a", "b"))
    fields = {"started_at": float(rank)} | fields
    return JobInfo(f"train-{rank}", "train", "train", state, (), node=node, **fields)  # type: ignore[arg-type]


def test_the_parts_make_one_group_and_a_failed_part_stops_the_rest() -> None:
    failed = part(1, "failed", exit_code=1, exit_reason="torchrun: rank 1 exitcode 3: NaN")
    [group] = node_groups({"a": (part(0, "running"),), "b": (failed,)}, SPANS)
    assert group.line() == (
        "train across 2 boxes (rdzv train-1): node 0 a running · node 1 b failed (exit 1)"
    )
    [(running, ended)] = parts_to_stop([group])
    assert (running.host, running.rank, ended.host) == ("a", 0, "b")
    assert why_stopped(ended) == "node 1 on b failed (exit 1: torchrun: rank 1 exitcode 3: NaN)"
    assert group.state() == "running", "until the part still running has been stopped"


@pytest.mark.parametrize(
    ("a", "b", "due", "state"),
    [
        ("running", "running", 0, "running"),
        ("running", "exited", 0, "running"),  # a part that finished ends nothing
        ("exited", "exited", 0, "exited"),
        ("stopping", "failed", 0, "running"),  # already being stopped: asked once
        ("running", "stopped", 1, "running"),  # stopped by hand on its box: the rest follow
        ("running", "lost", 1, "running"),
        ("stopped", "failed", 0, "failed"),
    ],
)
def test_only_a_part_that_broke_ends_the_others(
    a: JobState, b: JobState, due: int, state: str
) -> None:
    [group] = node_groups({"a": (part(0, a),), "b": (part(1, b),)}, SPANS)
    assert len(parts_to_stop([group])) == due
    assert group.state() == state


def test_a_box_cannot_join_or_end_another_boxes_group() -> None:
    claims = (part(1, "failed"), part(0, "failed"))  # c claims both ranks of a and b's group
    groups = node_groups({"a": (part(0, "running"),), "c": claims}, SPANS)
    [group] = groups
    assert [p.host for p in group.parts] == ["a"]
    assert parts_to_stop(groups) == []
    b_as_rank_0 = node_groups({"a": (part(0, "running"),), "b": (part(0, "failed"),)}, SPANS)
    assert parts_to_stop(b_as_rank_0) == [], "b is node 1 in the config, whatever it says"
    assert "node 1 b not heard from" in b_as_rank_0[0].line()


def test_two_launches_are_two_groups_newest_first() -> None:
    jobs = {"a": (part(0, "stopped", "train-old"), part(0, "running", "train-new", started_at=9.0))}
    groups = node_groups(jobs, SPANS)
    assert [g.rdzv_id for g in groups] == ["train-new", "train-old"]
