"""`status` with another config only looks; `apply` changes the box's config, on purpose.

The real CLI as a user runs it (no terminal), on a local host and over both loopback SSH
servers: two config files name one agent state folder and two datasets roots.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from agent.state import StatePaths, read_json
from tests.support.cli_runs import CliResult, run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.datasets import write_prompts
from tests.support.ssh_servers import SshEndpoint

PY = sys.executable


def local_config(tmp_path: Path, name: str, state_dir: Path) -> Path:
    """A config file `NAME.toml` whose host `box` keeps its datasets in `tmp_path/NAME`."""
    root = tmp_path / name
    write_prompts(root / "B1_chat", 3)
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{PY}"\nstate_dir = "{state_dir}"\n'
        f'[hosts.box.datasets]\nroot = "{root}"\n'
        f'[hosts.box.jobs.sleeper]\nargv = ["{PY}", "-c", "import time; time.sleep(60)"]\n'
    )
    return config


def kept_root(state_dir: Path) -> str:
    return str(read_json(StatePaths(state_dir).pipeline_config)["datasets"]["root"])


def assert_a_kept_and_b_named(status_json: CliResult, tmp_path: Path, state_dir: Path) -> None:
    """`status --json` with config b: the box still runs a's root, and b's is named as a difference."""
    [report] = [json.loads(line) for line in status_json.stdout.splitlines()]
    assert report["datasets_root"] == str(tmp_path / "a")
    assert report["config_differences"] == [f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}"]
    assert kept_root(state_dir) == str(tmp_path / "a")


async def test_status_with_another_config_changes_nothing_and_says_how_it_differs(
    tmp_path: Path, state_dir: Path
) -> None:
    mine, other = local_config(tmp_path, "a", state_dir), local_config(tmp_path, "b", state_dir)
    first = await run_cli_ok("status", "box", config=mine)
    assert "config differs" not in first.stdout

    looked = await run_cli_ok("status", "box", config=other)
    assert f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}" in looked.stdout
    assert "eagle-console apply box" in looked.stdout
    assert "does not exist" not in looked.stdout + looked.stderr
    as_json = await run_cli("status", "box", "--json", config=other)
    assert_a_kept_and_b_named(as_json, tmp_path, state_dir)


async def test_verbs_that_start_jobs_refuse_until_the_config_is_applied(
    tmp_path: Path, state_dir: Path
) -> None:
    mine, other = local_config(tmp_path, "a", state_dir), local_config(tmp_path, "b", state_dir)
    assert (await run_cli("jobs", "box", config=mine)).code == 0

    refused = await run_cli("start", "box", "sleeper", config=other)
    assert refused.code == 1
    assert "nothing started" in refused.stderr
    assert "eagle-console apply box" in refused.stderr
    listed = await run_cli_ok("jobs", "box", config=other)
    assert "no jobs" in listed.stdout
    assert "config differs" in listed.stderr
    assert kept_root(state_dir) == str(tmp_path / "a")


async def test_apply_says_what_changes_asks_for_yes_and_applies(
    tmp_path: Path, state_dir: Path
) -> None:
    mine, other = local_config(tmp_path, "a", state_dir), local_config(tmp_path, "b", state_dir)
    assert (await run_cli("status", "box", config=mine)).code == 0
    change = f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}"

    dry = await run_cli_ok("apply", "box", "--dry-run", config=other)
    assert change in dry.stdout
    unasked = await run_cli("apply", "box", config=other)
    assert unasked.code == 2
    assert "pass --yes" in unasked.stderr
    assert kept_root(state_dir) == str(tmp_path / "a")

    applied = await run_cli_ok("apply", "box", "--yes", "--json", config=other)
    assert json.loads(applied.stdout) == {"host": "box", "differences": [change], "applied": True}
    assert kept_root(state_dir) == str(tmp_path / "b")
    await run_cli_ok("start", "box", "sleeper", config=other)
    again = await run_cli("apply", "box", "--yes", config=other)
    assert "already runs this config" in again.stdout
    back = await run_cli("status", "box", config=mine)
    assert f"datasets.root: {tmp_path / 'b'} → {tmp_path / 'a'}" in back.stdout


async def test_a_look_over_ssh_with_another_config_leaves_the_agents_alone(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    configs = []
    for name in ("a", "b"):
        write_prompts(tmp_path / name / "B1_chat", 3)
        body = ssh_endpoint.config_toml(
            "gpu", python=PY, state_dir=state_dir, datasets_root=tmp_path / name
        )
        configs.append(tmp_path / f"{name}.toml")
        configs[-1].write_text(body)

    assert (await run_cli("status", "gpu", config=configs[0])).code == 0
    looked = await run_cli_ok("status", "gpu", "--json", config=configs[1])
    assert_a_kept_and_b_named(looked, tmp_path, state_dir)


async def test_doctor_and_status_say_the_box_runs_another_config_even_when_its_root_is_gone(
    tmp_path: Path, state_dir: Path
) -> None:
    wrong, fixed = local_config(tmp_path, "typo", state_dir), local_config(tmp_path, "b", state_dir)
    assert (await run_cli("status", "box", config=wrong)).code == 0
    shutil.rmtree(tmp_path / "typo")  # the box's root is gone: the status table is not printed

    doctor = await run_cli("doctor", "box", config=fixed)
    [config_line] = [line for line in doctor.stdout.splitlines() if line.split()[1:2] == ["config"]]
    assert config_line.startswith("FAIL"), doctor.stdout
    assert f"datasets.root: {tmp_path / 'typo'} → {tmp_path / 'b'}" in config_line
    assert "eagle-console apply box" in config_line
    assert doctor.code == 1
    assert "console's own log" in doctor.stderr
    assert "console's own log" not in doctor.stdout

    status = await run_cli("status", "box", config=fixed)
    assert status.code == 1
    assert "does not exist" in status.stderr
    assert f"datasets.root: {tmp_path / 'typo'} → {tmp_path / 'b'}" in status.stderr
    again = await run_cli("doctor", "box", config=fixed)
    assert "ok   config" not in again.stdout  # still not applied: looking changes nothing
