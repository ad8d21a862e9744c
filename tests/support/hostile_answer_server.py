"""A model server on loopback whose every prompt names the hostile answer it gets, on every try.

`python -m tests.support.hostile_answer_server PORT` prints "up" once listening. The prompt's id
(native /generate, from its rid), the last of its input ids (/v1/completions) or its text (chat)
names one of KINDS; "good" gets a good answer. Shared by the runner's tests and the
hostile_answers fault scenario, so both see the same answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.support.ports import free_port
from tests.support.simulator_process import agent_env

FIRST_KIND_ID = 1000
"""A completions prompt's last input id is this plus the index of its kind in KINDS."""
MIB = 1 << 20
GOOD_IDS = [5, 6, 7]


def native(ids: Any, tokens: Any, meta: str = "{}") -> str:
    """A /generate body with these output ids, completion_tokens and extra meta_info field."""
    return (
        f'{{"output_ids": {json.dumps(ids)}, "meta_info": {{"completion_tokens": {tokens}, '
        f'"prompt_tokens": 3, "finish_reason": {{"type": "stop"}}, "extra": {meta}}}}}'
    )


def completion(choice: Any) -> str:
    """A /v1/completions body with one choice."""
    return json.dumps({"choices": [choice], "usage": {"prompt_tokens": 3}})


def stream(*events: str) -> str:
    """An SSE body of these data lines, ended by [DONE]."""
    return "".join(f"data: {event}\n\n" for event in (*events, "[DONE]"))


GOOD_CHOICE = {"token_ids": GOOD_IDS, "finish_reason": "stop"}
NATIVE = {
    "good": native(GOOD_IDS, 3),
    "tokens_negative": native([5], -50),
    "tokens_trillion": native([5], 10**12),
    "tokens_2_22": native([5], 2**22),
    "tokens_true": native([5], "true"),
    "ids_strings": native(["5", "6"], 2),
    "id_minus_one": native([-1, 5], 2),
    "id_past_int32": native([2**40], 1),
    "meta_nan": native([5], 1, "NaN"),
    "meta_list": '{"output_ids": [5], "meta_info": [1, 2]}',
    "meta_deep": native([5], 1, "[" * 100_000 + "]" * 100_000),
    "meta_17mb": native([5], 1, json.dumps("x" * (17 * MIB))),
    "meta_wide": native([5], 1, "[" + ",".join(["[]"] * 2_000_000) + "]"),
    "line_past_limit": native([5], 1, json.dumps("x" * (16 * MIB - 200))),
    "always_aborted": native([5], 1).replace('"stop"', '"abort"'),
}
"""Bodies of /generate answers (200), by kind; the four below are not plain bodies."""
SPECIAL = ("cut_mid_body", "endless_500", "stream_cut", "slow_drip")
COMPLETIONS = {
    "good_completion": completion(GOOD_CHOICE),
    "choices_oops": json.dumps({"choices": ["oops"]}),
    "choices_object": json.dumps({"choices": {"0": GOOD_CHOICE}}),
    "token_ids_strings": completion({"token_ids": ["5"], "finish_reason": "stop"}),
    "prompt_ids_negative": completion({**GOOD_CHOICE, "prompt_token_ids": [-7]}),
}
CHAT = {
    "good_chat": stream(json.dumps({"choices": [{"delta": {"content": "a"}, **GOOD_CHOICE}]})),
    "delta_content_number": stream(json.dumps({"choices": [{"delta": {"content": 5}}]})),
    "chat_choices_oops": stream(json.dumps({"choices": ["oops"]})),
    "event_list": stream("[1, 2, 3]"),
    "choices_string": stream(json.dumps({"choices": "oops"})),
}
KINDS = [*NATIVE, *SPECIAL, *COMPLETIONS, *CHAT]


async def _generate(request: web.Request) -> web.StreamResponse:
    kind = (await request.json())["rid"].split("-")[-2].split(".")[0]
    if kind in SPECIAL:
        return await SPECIAL_ANSWERS[kind](request)
    return web.Response(text=NATIVE[kind], content_type="application/json")


async def _completions(request: web.Request) -> web.Response:
    kind = KINDS[(await request.json())["prompt"][-1] - FIRST_KIND_ID]
    return web.Response(text=COMPLETIONS[kind], content_type="application/json")


async def _chat(request: web.Request) -> web.Response:
    kind = (await request.json())["messages"][-1]["content"]
    return web.Response(text=CHAT[kind], content_type="text/event-stream")


async def _cut_mid_body(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Length": "1000"})
    await response.prepare(request)
    await response.write(b'{"output_ids": [5, ')
    assert request.transport is not None
    request.transport.close()
    return response


async def _endless_500(request: web.Request) -> web.StreamResponse:
    """HTTP 500 whose body never ends (400 MB and more, as long as the client reads)."""
    response = web.StreamResponse(status=500)
    await response.prepare(request)
    chunk = b"x" * MIB
    with contextlib.suppress(ConnectionError):
        for _ in range(1024):
            await response.write(chunk)
    return response


async def _stream_cut(request: web.Request) -> web.StreamResponse:
    """A chunked 200 that closes mid-way: aiohttp's ClientPayloadError on the reading side."""
    response = web.StreamResponse()
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(b'{"output_ids": [5, 6, ')
    assert request.transport is not None
    request.transport.close()
    return response


async def _slow_drip(request: web.Request) -> web.StreamResponse:
    """A 200 that sends a byte a second and never finishes: only a total time bound ends it."""
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):
        for _ in range(3600):
            await response.write(b" ")
            await asyncio.sleep(1.0)
    return response


SPECIAL_ANSWERS: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {
    "cut_mid_body": _cut_mid_body,
    "endless_500": _endless_500,
    "stream_cut": _stream_cut,
    "slow_drip": _slow_drip,
}


def app() -> web.Application:
    """The server: SGLang's health, /generate, and the two OpenAI endpoints."""
    application = web.Application()
    application.router.add_get("/health", _ok)
    application.router.add_get("/readiness", _not_found)
    application.router.add_get("/server_info", _not_found)
    application.router.add_get("/v1/models", _ok)
    application.router.add_post("/generate", _generate)
    application.router.add_post("/v1/completions", _completions)
    application.router.add_post("/v1/chat/completions", _chat)
    return application


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _not_found(request: web.Request) -> web.Response:
    return web.Response(status=404)


def write_kind_prompts(folder: Path, kinds: list[str], copies: int = 1) -> list[str]:
    """`copies` prompts per kind, shaped for the endpoint that serves it; returns their ids.

    The id is the kind's name (`kind.N` for more than one copy).
    """
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    with (folder / "prompts.jsonl").open("w") as handle:
        for copy in range(copies):
            for kind in kinds:
                ids.append(kind if copies == 1 else f"{kind}.{copy}")
                handle.write(json.dumps(_prompt(ids[-1], kind)) + "\n")
    return ids


def _prompt(prompt_id: str, kind: str) -> dict[str, Any]:
    if kind in CHAT:
        return {"id": prompt_id, "messages": [{"role": "user", "content": kind}]}
    return {"id": prompt_id, "input_ids": [1, 2, FIRST_KIND_ID + KINDS.index(kind)]}


@contextlib.contextmanager
def hostile_answer_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The server in its own process; yields its URL and the process."""
    port = free_port()
    command = [sys.executable, "-m", "tests.support.hostile_answer_server", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, env=agent_env())
    assert server.stdout is not None
    try:
        assert server.stdout.readline().strip() == b"up"
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


if __name__ == "__main__":
    web.run_app(
        app(), host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("up", flush=True)
    )
