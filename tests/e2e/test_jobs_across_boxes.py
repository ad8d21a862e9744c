"""A training job across boxes, with torchrun itself: two agents, a c10d rendezvous, gloo.

Two local hosts stand for two boxes (each its own agent and state dir); the console starts one
part on each with the same rendezvous id and its node rank, stops every part from either box, and,
with `start --wait`, stops the part still running once the other fails, which torchrun alone does
not (the failed box's torchrun leaves; the other waits for a collective that never comes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.ports import free_port

PY = sys.executable
WORKER = Path(__file__).parents[1] / "support" / "torchrun_worker.py"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def two_boxes(tmp_path: Path, mode: str) -> Path:
    """A config with boxes a and b, both running `train` across them (a hosts the rendezvous)."""
    port = free_port()
    config = tmp_path / "eagle-console.toml"
    body = ""
    for name, hosts_it in (("a", 1), ("b", 0)):
        state = tmp_path / f"state-{name}"
        body += (
            f'[hosts.{name}]\nssh = "local"\npython = "{PY}"\nstate_dir = "{state}"\n'
            f"[hosts.{name}.jobs.train]\n"
            'kind = "train"\nnodes = ["a", "b"]\ngrace_s = 5\n'
            f'argv = ["{PY}", "-m", "torch.distributed.run", "--nnodes={{nnodes}}", '
            '"--node-rank={node_rank}", "--nproc-per-node=1", "--rdzv-backend=c10d", '
            f'"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id={{rdzv_id}}", '
            f'"--rdzv-conf=is_host={hosts_it}", "--max-restarts=0", '
            f'"{WORKER}", "{tmp_path / ("out-" + name)}", "{mode}", "{{node_rank}}"]\n'
        )
    config.write_text(body)
    return config


def seen(tmp_path: Path, box: str) -> dict[str, object]:
    [found] = (tmp_path / f"out-{box}").glob("rank*.json")
    return dict(json.loads(found.read_text()))


async def test_both_parts_join_one_rendezvous_and_finish(boxes: Path) -> None:
    config = two_boxes(boxes, "finish")
    started = await run_cli_ok("start", "a", "train", "--wait", config=config)
    lines = started.stdout.splitlines()
    assert [line.split(" as ")[0] for line in lines[:2]] == [
        "started train on a",
        "started train on b",
    ]
    assert "(node 0 of 2, rdzv train-" in lines[0]
    assert "(node 1 of 2, rdzv train-" in lines[1]
    assert "--nnodes=2" in lines[0]
    assert "--node-rank=1" in lines[1]
    a, b = seen(boxes, "a"), seen(boxes, "b")
    assert (a["world_size"], b["world_size"]) == (2, 2)
    assert a["sum"] == b["sum"] == 3.0, "the all-reduce spanned both boxes' workers"
    assert (a["node"], b["node"]) == (0, 1), "each box its node rank from the console"
    assert {a["group_rank"], b["group_rank"]} == {0, 1}, "c10d's own ranks, in joining order"
    assert a["run_id"] == b["run_id"]
    assert str(a["run_id"]).startswith("train-")
    assert "node 0 a exited · node 1 b exited" in started.stdout


async def test_a_failed_part_stops_the_other_box(boxes: Path) -> None:
    config = two_boxes(boxes, "fail-node-1")
    started = await run_cli("start", "a", "train", "--wait", config=config)
    assert started.code == 1, started.stdout + started.stderr
    assert "node 1 on b killed (SIGKILL): stopping node 0 on a" in started.stdout, (
        "a box whose torchrun died ends the other's part, which would wait in its collectives"
    )
    assert ": stopping node 0 on a" in started.stdout
    listed = await run_cli("jobs", "a", "--json", config=config)
    [job] = json.loads(listed.stdout)["jobs"]
    assert job["state"] == "stopped", "the part left waiting was stopped, not left holding GPUs"
    assert job["node"]["rank"] == 0
    assert job["node"]["hosts"] == ["a", "b"]


async def test_stop_on_one_box_stops_every_part(boxes: Path) -> None:
    config = two_boxes(boxes, "sleep")
    await run_cli_ok("start", "b", "train", config=config)
    stopped = await run_cli_ok("stop", "b", "train", config=config)
    assert "stopping every box's part: train across 2 boxes" in stopped.stdout
    for box in ("a", "b"):
        listed = await run_cli("jobs", box, "--json", config=config)
        [job] = json.loads(listed.stdout)["jobs"]
        assert job["state"] == "stopped", (box, job["state"])


async def test_a_box_that_refuses_its_part_leaves_no_part_running(boxes: Path) -> None:
    nap = f'["{PY}", "-c", "import time; time.sleep(120)"]'
    config = boxes / "eagle-console.toml"
    config.write_text(
        f'[hosts.a]\nssh = "local"\npython = "{PY}"\nstate_dir = "{boxes / "state-a"}"\n'
        f'[hosts.a.jobs.train]\nnodes = ["a", "b"]\ngrace_s = 5\nargv = {nap}\n'
        f'[hosts.b]\nssh = "local"\npython = "{PY}"\nstate_dir = "{boxes / "state-b"}"\n'
        '[hosts.b.jobs.train]\nnodes = ["a", "b"]\nargv = ["run", "--data={dataset}"]\n'
    )
    started = await run_cli("start", "a", "train", config=config)
    assert started.code == 1, started.stdout
    assert (
        "train not started on b (node 1 of 2): jobs.launch: job train: argv[1] needs {dataset}"
        in (started.stderr)
    )
    assert "; stopped it again on a" in started.stderr
    listed = await run_cli("jobs", "a", "--json", config=config)
    [job] = json.loads(listed.stdout)["jobs"]
    assert job["state"] == "stopped", "no box is left waiting in a rendezvous that cannot complete"
