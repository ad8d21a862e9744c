"""`python -m agent attach` spoken to in raw bytes: what a broken or hostile console would send.

The tests and the bad_input and request_limits fault scenarios share it, and the one check of a
refused request: its error names what was wrong, and the next request on the same connection
is answered as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from agent.protocol import PROTOCOL_VERSION
from tests.support.simulator_process import agent_env

ANSWER_TIMEOUT_S = 30.0


def request_line(
    request_id: int, method: str, params: dict[str, Any], key: str | None = None
) -> bytes:
    """One request as a line of the wire, with an idempotency key if given."""
    message: dict[str, Any] = {"id": request_id, "method": method, "params": params}
    if key is not None:
        message["idempotency_key"] = key
    return json.dumps(message).encode() + b"\n"


def hello(request_id: int = 1, version: int = PROTOCOL_VERSION) -> bytes:
    """A hello line (valid unless `version` is one the agent does not speak)."""
    return request_line(
        request_id, "hello", {"protocol_version": version, "client_version": "test"}
    )


def ping(request_id: int) -> bytes:
    """A valid ping line."""
    return request_line(request_id, "ping", {})


class RawWire:
    """`python -m agent attach` as a subprocess, spoken to in raw bytes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process, self.stdin, self.stdout = process, process.stdin, process.stdout

    @classmethod
    async def open(cls, state_dir: Path, limit: int = 2**20) -> RawWire:
        """Start attach (and the daemon, if none runs) for `state_dir`; lines up to `limit`."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent", "attach", "--state-dir", str(state_dir),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=agent_env(), limit=limit,
        )  # fmt: skip
        return cls(process)

    async def send(self, raw: bytes) -> None:
        """Write bytes as they are."""
        self.stdin.write(raw)
        await self.stdin.drain()

    async def answer(self) -> dict[str, Any]:
        """The next line the agent sends, which must be whole."""
        line = await asyncio.wait_for(self.stdout.readline(), ANSWER_TIMEOUT_S)
        assert line.endswith(b"\n"), f"agent closed the link: {line!r}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def answers_until(
        self, request_id: int, also: int | None = None
    ) -> tuple[list[dict[str, Any]], Any]:
        """The other answers, and the one to `request_id` (None if the link died).

        The agent answers requests concurrently, so an answer to an earlier request (`also`) may
        come after `request_id`'s: with `also`, reading goes on until both are in.
        """
        before: list[dict[str, Any]] = []
        found: Any = None
        while found is None or (also is not None and not _answered(before, also)):
            try:
                line = await asyncio.wait_for(self.stdout.readline(), ANSWER_TIMEOUT_S)
            except (TimeoutError, ValueError):
                return before, None
            if not line.endswith(b"\n"):
                return before, None
            answer = json.loads(line)
            if "event" in answer:
                continue
            if answer.get("id") == request_id:
                found = answer
            else:
                before.append(answer)
        return before, found

    async def close(self) -> None:
        """End input and wait for attach to exit (killing it if it hangs)."""
        with contextlib.suppress(ConnectionError):
            self.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), ANSWER_TIMEOUT_S)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def refusal_problem(wire: RawWire, line: bytes, request_id: int, said: str) -> str | None:
    """What is wrong, if anything, with how the agent refuses the request `line`.

    It must answer `invalid_params` with `said` in the message, and then answer a ping sent
    right behind it on the same connection.
    """
    pong_id = request_id + 100_000
    await wire.send(line + ping(pong_id))
    answers, pong = await wire.answers_until(pong_id)
    if pong is None or "result" not in pong:
        return f"the ping after it got {pong!r}"
    if len(answers) != 1 or answers[0].get("id") != request_id:
        return f"want one answer to request {request_id}, got {answers!r}"
    error = answers[0].get("error", {})
    if error.get("code") != "invalid_params" or said not in str(error.get("message")):
        return f"want invalid_params saying {said!r}, got {answers!r}"
    return None


def _answered(answers: list[dict[str, Any]], request_id: int) -> bool:
    return any(answer.get("id") == request_id for answer in answers)
