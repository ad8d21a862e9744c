"""`eagle-console events`: the host's timeline, kept by the agent whether or not anyone watched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli, write_config
from tests.support.datasets import response_line, write_prompts
from tests.support.ssh_servers import SshEndpoint


@pytest.mark.slow
async def test_events_print_what_happened_while_nobody_watched(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_prompts(root / "B1_chat", 5)
    responses = root / "B1_chat" / "raw_responses.jsonl"
    responses.write_text(response_line("p0", 600))
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root)
    assert (await run_cli("status", "gpu", config=config)).code == 0
    responses.write_text(response_line("p0", 600) + response_line("p1", 600))  # past 1000
    for _ in range(100):  # the agent records it on its own schedule, with no console attached
        listed = await run_cli("events", "gpu", "--json", config=config)
        events = [json.loads(line) for line in listed.stdout.splitlines()]
        if any(event["kind"] == "budget_reached" for event in events):
            break
    assert listed.code == 0, listed.stderr
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "agent_started"
    assert "budget_reached" in kinds
    [budget] = [event for event in events if event["kind"] == "budget_reached"]
    assert budget["subject"] == "B1_chat"
    text = await run_cli("events", "gpu", "--since", "1h", config=config)
    assert "budget_reached" in text.stdout
    assert "B1_chat reached its budget: 1,200 of 1,000 tokens" in text.stdout


async def test_events_refuse_a_span_that_is_not_one(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, tmp_path / "datasets")
    result = await run_cli("events", "gpu", "--since", "yesterday", config=config)
    assert result.code == 2
    assert "not a span of time" in result.stderr
