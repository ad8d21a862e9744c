"""A FIFO or a device where the agent reads a log or hashes a file: refused at once, never waited on."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agent.protocol import (
    FILES_HASH,
    LOGS_READ,
    LOGS_SUBSCRIBE,
    PING,
    SNAPSHOT,
    FilesHashParams,
    LogReadParams,
    LogSubscribeParams,
    PingParams,
    PipelineConfig,
    SnapshotParams,
)
from console.link.agent_link import AgentRequestError
from tests.support.hostile_files import link_to_device, make_fifo, make_socket
from tests.support.operations import local_link

ANSWER_S = 15.0


async def test_a_fifo_log_and_a_fifo_deploy_target_are_refused_and_the_agent_serves_on(
    tmp_path: Path, state_dir: Path
) -> None:
    log = make_fifo(tmp_path / "sglang.log")
    root = tmp_path / "deploy"
    target = make_fifo(root / "run.py")
    sock = make_socket(root / "sock.py")
    pipeline = PipelineConfig(sglang_log=str(log), sglang_url=None, deploy_roots=(str(root),))
    async with local_link(state_dir, pipeline) as link:
        with pytest.raises(AgentRequestError) as unreadable:
            await asyncio.wait_for(link.call(LOGS_READ, LogReadParams("sglang")), ANSWER_S)
        assert unreadable.value.code == "unreadable"
        assert "is a FIFO (named pipe), not a regular file" in unreadable.value.detail
        await asyncio.wait_for(link.call(LOGS_SUBSCRIBE, LogSubscribeParams("sglang")), ANSWER_S)
        for path in (target, sock):
            with pytest.raises(AgentRequestError) as refused:
                await asyncio.wait_for(
                    link.call(FILES_HASH, FilesHashParams((str(path),))), ANSWER_S
                )
            assert refused.value.code == "invalid_params"
            assert "not a regular file" in refused.value.detail
        for _ in range(3):
            await asyncio.wait_for(link.call(SNAPSHOT, SnapshotParams()), ANSWER_S)
            await asyncio.wait_for(link.call(PING, PingParams()), ANSWER_S)


def test_the_sglang_stats_probe_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    from agent.probes.sglang_log import latest_decode_stats

    fifo = make_fifo(tmp_path / "sglang.log")
    done = threading.Event()

    def probe() -> None:
        latest_decode_stats(fifo)
        done.set()

    threading.Thread(target=probe, daemon=True).start()
    assert done.wait(ANSWER_S), "the probe blocked on a FIFO"
    assert latest_decode_stats(link_to_device(tmp_path / "zero.log")) is None
