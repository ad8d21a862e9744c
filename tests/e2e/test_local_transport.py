"""`ssh = "local"`: the plain demo's config answers every headless command its tip prints.

The tip said `eagle-console --config THIS_FILE status demo`, and every such command failed
with "cannot reach localhost:22": the plain demo's host was only reachable from inside the demo.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.state import StatePaths
from console.config import load_config
from console.demo.config_file import write_demo_config
from console.demo.workspace import DATASETS, Workspace, prepare_scripts, write_datasets
from console.link.agent_link import LinkError
from console.link.local_link import STDERR_KEPT_BYTES, open_local_link
from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.ports import free_port
from tests.support.repo import REPO


@pytest.fixture
def demo_space(tmp_path: Path) -> Iterator[Workspace]:
    """The demo's datasets, scripts and config (no server: none of these commands needs one)."""
    space = Workspace(tmp_path / "demo")
    space.root.mkdir()
    write_datasets(space)
    prepare_scripts(space)
    write_demo_config(space, free_port(), None)
    yield space
    if space.state.exists():
        stop_daemon(StatePaths(space.state))
        kill_leftover_jobs(space.state)


def test_the_plain_demo_config_names_a_local_host(demo_space: Workspace) -> None:
    host = load_config(demo_space.config).host("demo")
    assert host.is_local
    tip = demo_space.config.read_text()
    for command in ("status demo", "report demo", "doctor demo", "events demo",
                    "deploy demo --dry-run", "redeploy demo"):  # fmt: skip
        assert f"{demo_space.config} {command}" in tip


async def test_status_answers_from_the_local_agent(demo_space: Workspace) -> None:
    result = await run_cli_ok("status", "demo", "--json", config=demo_space.config)
    [report] = [json.loads(line) for line in result.stdout.splitlines()]
    assert report["link"] == "up"
    assert {d["name"] for d in report["datasets"]} == set(DATASETS)


async def test_doctor_checks_the_local_host_without_ssh(demo_space: Workspace) -> None:
    result = await run_cli("doctor", "demo", config=demo_space.config)
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.strip()}
    for name in ("local", "python", "aiohttp", "agent", "datasets"):
        assert lines[name].startswith("ok"), result.stdout
    assert "ssh" not in lines
    assert f"{len(DATASETS)} dataset(s)" in lines["datasets"]
    assert "localhost:22" not in result.stdout + result.stderr
    checked = ["ssh" if (name := line.split()[1]) == "local" else name
               for line in result.stdout.splitlines() if line.startswith(("ok ", "FAIL "))]  # fmt: skip
    assert guide_doctor_sample() == checked, "the guide's doctor sample shows what doctor checks"


def guide_doctor_sample() -> list[str]:
    """The check names of the guide's `eagle-console doctor kimi` sample, in order."""
    guide = (REPO / "docs" / "getting-started.md").read_text()
    sample = guide.split("$ eagle-console doctor kimi\nok ", 1)[1].split("```", 1)[0]
    return [line.split()[1] for line in ("ok " + sample).splitlines() if line.strip()]


async def test_events_and_report_answer_from_the_local_agent(demo_space: Workspace) -> None:
    events = await run_cli_ok("events", "demo", "--json", config=demo_space.config)
    kinds = [json.loads(line)["kind"] for line in events.stdout.splitlines()]
    assert "agent_started" in kinds
    report = await run_cli_ok("report", "demo", config=demo_space.config)
    assert report.stdout.startswith("# Run report: demo")


async def test_deploy_copies_locally_confined_to_the_roots(demo_space: Workspace) -> None:
    dry = await run_cli_ok("deploy", "demo", "--dry-run", config=demo_space.config)
    assert "changed" in dry.stdout
    assert demo_space.remote_script.read_text().startswith('"""The old runner')
    await run_cli_ok("deploy", "demo", config=demo_space.config)
    assert demo_space.remote_script.read_bytes() == demo_space.local_script.read_bytes()
    outside = demo_space.root / "outside.py"
    text = demo_space.config.read_text()
    demo_space.config.write_text(text.replace(str(demo_space.remote_script), str(outside)))
    refused = await run_cli("deploy", "demo", config=demo_space.config)
    assert refused.code == 1
    assert not outside.exists()
    assert "Traceback" not in refused.stderr


async def test_trust_says_a_local_host_has_no_key(demo_space: Workspace) -> None:
    result = await run_cli("trust", "demo", config=demo_space.config)
    assert result.code == 2
    assert "no host key to trust" in result.stderr


async def test_a_piped_dry_run_prints_long_paths_whole(demo_space: Workspace) -> None:
    deep = demo_space.remote_script.parent / ("a" * 90) / ("b" * 90) / ("c" * 90) / "run.py"
    text = demo_space.config.read_text()
    demo_space.config.write_text(text.replace(str(demo_space.remote_script), str(deep)))
    result = await run_cli_ok("deploy", "demo", "--dry-run", config=demo_space.config)
    assert len(str(deep)) > 300  # past $COLUMNS (run_cli sets 200) and Rich's default 80
    assert str(deep) in result.stdout
    assert "…" not in result.stdout


@pytest.mark.parametrize("said_bytes", [40, 1_000_000])
async def test_an_agent_that_dies_before_hello_is_quoted_from_its_stderr_within_a_bound(
    tmp_path: Path, said_bytes: int
) -> None:
    """The link's error quotes what the attach said before it died, at most STDERR_KEPT_BYTES of
    it however much it wrote, and the closed link leaves no pipe open (no ResourceWarning)."""
    dying = tmp_path / "python"
    dying.write_text(
        "#!/bin/sh\nhead -c "
        f"{said_bytes} /dev/zero | tr '\\0' x >&2\necho ' no agent here' >&2\nexit 3\n"
    )
    dying.chmod(0o755)
    with pytest.raises(LinkError) as refused:
        await open_local_link(tmp_path / "state", None, python=str(dying))
    said = str(refused.value).split("; agent said: ", 1)[1]
    assert said.startswith("x")
    assert len(said) <= STDERR_KEPT_BYTES
    assert said.endswith("no agent here") == (said_bytes < STDERR_KEPT_BYTES)


async def test_a_link_closed_twice_at_once_and_cancelled_once_still_ends_its_attach(
    tmp_path: Path,
) -> None:
    """The console's quit and the link's own worker both close a link, and Textual cancels the
    worker: the attach is still reaped and its pipes closed (no ResourceWarning on collection)."""
    state = tmp_path / "state"
    link = await open_local_link(state, None)
    try:
        first, second = asyncio.create_task(link.close()), asyncio.create_task(link.close())
        await asyncio.sleep(0)
        first.cancel()
        await second
        assert first.cancelled()
        gc.collect()  # an open pipe's transport warns here, and the warning fails the test
    finally:
        stop_daemon(StatePaths(state))
