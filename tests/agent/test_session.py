"""The real daemon, reached through `attach`, survives every bad line and stays usable."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agent.protocol import MAX_LINE_BYTES, PROTOCOL_VERSION
from tests.support.raw_wire import ANSWER_TIMEOUT_S, RawWire, hello
from tests.support.simulator_process import agent_env


async def test_requests_before_hello_are_refused(raw_agent: RawWire) -> None:
    await raw_agent.send(b'{"id": 1, "method": "snapshot", "params": {}}\n')
    assert (await raw_agent.answer())["error"]["code"] == "hello_required"


async def test_unknown_protocol_version_names_both_versions(raw_agent: RawWire) -> None:
    await raw_agent.send(hello(version=99))
    error = (await raw_agent.answer())["error"]
    assert error["code"] == "unsupported_version"
    assert "protocol 99" in error["message"]
    assert f"protocol {PROTOCOL_VERSION}" in error["message"]
    await raw_agent.send(hello(request_id=2))
    assert (await raw_agent.answer())["result"]["protocol_version"] == PROTOCOL_VERSION


async def test_every_bad_line_is_answered_and_the_link_stays_usable(raw_agent: RawWire) -> None:
    await raw_agent.send(hello())
    assert "result" in await raw_agent.answer()
    bad_lines = [
        b"this is not json\n",
        b'{"id": 5, "method": "jobs.nuke", "params": {}}\n',
        b'{"id": 6, "result": {}}\n',
        b"\xff\xfe\xfd\n",
        b"x" * (MAX_LINE_BYTES + 10) + b"\n",
        b'{"id": 7, "method": "ping", "params": {"at": "noon"}}\n',
    ]
    for line in bad_lines:
        await raw_agent.send(line)
    codes = [(await raw_agent.answer())["error"] for _ in bad_lines]
    assert [error["code"] for error in codes] == [
        "malformed", "unknown_method", "malformed", "malformed", "oversized", "invalid_params",
    ]  # fmt: skip
    await raw_agent.send(b'{"id": 8, "method": "ping", "params": {}}\n')
    answer = await raw_agent.answer()
    assert answer["id"] == 8
    assert answer["result"]["agent_time"] > 0


async def test_two_consoles_share_one_daemon(state_dir: Path, raw_agent: RawWire) -> None:
    await raw_agent.send(hello())
    first = (await raw_agent.answer())["result"]
    second = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent", "attach", "--state-dir", str(state_dir),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=agent_env(),
    )  # fmt: skip
    out, _ = await asyncio.wait_for(second.communicate(hello()), ANSWER_TIMEOUT_S)
    assert json.loads(out)["result"]["pid"] == first["pid"]
    assert oct(state_dir.stat().st_mode & 0o777) == oct(0o700)
    assert oct((state_dir / "agent.sock").stat().st_mode & 0o777) == oct(0o600)
