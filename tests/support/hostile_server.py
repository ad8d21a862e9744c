"""A model server on loopback that gives each prompt one kind of hostile answer, on every try (#28).

Prompt p0 gets a good answer; p1-p9 each get one kind of broken or malicious one. Shared by the
runner's test and the hostile_peers fault scenario.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port

GOOD = '{"output_ids": [5, 6, 7], "meta_info": {"completion_tokens": 3, "prompt_tokens": 2, "finish_reason": {"type": "stop"}}}'


def answer(ids: str, tokens: str, meta: str = "{}") -> str:
    return (
        f'{{"output_ids": {ids}, "meta_info": {{"completion_tokens": {tokens}, '
        f'"finish_reason": {{"type": "stop"}}, "extra": {meta}}}}}'
    )


HOSTILE = {
    "p1": ("negative tokens", answer("[5]", "-50")),
    "p2": ("a trillion tokens", answer("[5]", str(10**12))),
    "p3": ("ids as strings", answer('["5", "6"]', "2")),
    "p4": ("tokens a boolean", answer("[5]", "true")),
    "p5": ("a NaN in meta_info", answer("[5]", "1", "NaN")),
    "p6": ("an id of -1", answer("[-1, 5]", "2")),
    "p7": ("meta_info a list", '{"output_ids": [5], "meta_info": [1, 2]}'),
    "p8": ("a 20 MB body", answer("[5]", "1", '"' + "x" * (20 << 20) + '"')),
    "p9": ("cut mid-body", "CUT"),
}
SERVER = """
import sys
from aiohttp import web

answers = {answers!r}
good = {good!r}

async def health(request):
    return web.Response(text="ok")

async def generate(request):
    body = await request.json()
    prompt = body["rid"].split("-")[-2]
    text = answers.get(prompt, good)
    if text == "CUT":
        response = web.StreamResponse(headers={{"Content-Length": "1000"}})
        await response.prepare(request)
        await response.write(b'{{"output_ids": [5, ')
        request.transport.close()
        return response
    return web.Response(text=text, content_type="application/json")

app = web.Application(client_max_size=1 << 20)
app.router.add_get("/health", health)
app.router.add_get("/readiness", lambda r: web.Response(status=404))
app.router.add_post("/generate", generate)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("up", flush=True))
"""


@contextlib.contextmanager
def hostile_server(folder: Path, prompts: int = 1 + len(HOSTILE)) -> Iterator[str]:
    """Start the server (its script written into `folder`); yields its URL.

    Prompt p<i> gets the answer of p<i mod 10>: every tenth a good one, the rest hostile.
    """
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    script = folder / "hostile_server.py"
    kinds = [text for _, text in HOSTILE.values()]
    answers = {f"p{i}": kinds[i % 10 - 1] for i in range(prompts) if i % 10}
    script.write_text(SERVER.format(answers=answers, good=GOOD))
    server = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE)
    assert server.stdout is not None
    try:
        assert server.stdout.readline().strip() == b"up"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
