"""A server that answers what a broken or malicious peer answers never hangs the runner, never gets
a bad record written, and never costs a prompt silently (#28).

Before: completion_tokens of -50 sent the budget counting into an endless loop, 10**12 hung it,
ids as strings, a NaN, ids of -1 were written as records the agent then called corrupt, and a
body cut mid-way lost its prompt with no errors.jsonl line. Each prompt here gets one kind of
hostile answer on every try from a real HTTP server on loopback; p0 gets a good one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ports import free_port
from tests.support.runner_files import response_ids, run_runner, status, write_id_prompts

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


@pytest.fixture
def hostile_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    script = tmp_path / "hostile_server.py"
    answers = {prompt: text for prompt, (_, text) in HOSTILE.items()}
    script.write_text(SERVER.format(answers=answers, good=GOOD))
    server = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE)
    assert server.stdout is not None
    assert server.stdout.readline().strip() == b"up"
    yield f"http://127.0.0.1:{port}"
    server.kill()
    server.wait()
    server.stdout.close()


@pytest.mark.slow
def test_each_hostile_answer_is_refused_retried_and_marked_never_written(
    tmp_path: Path, hostile_server: str
) -> None:
    folder = tmp_path / "B1"
    write_id_prompts(folder, 1 + len(HOSTILE))
    result = run_runner(folder, hostile_server, "--api", "sglang", "--max-retries", "1")

    assert response_ids(folder) == {"p0": 1}, "only the good answer is a record"
    errors = [json.loads(line) for line in (folder / "errors.jsonl").read_text().splitlines()]
    marked = {error["id"]: error for error in errors}
    assert set(marked) == set(HOSTILE), result.stderr
    for prompt, (kind, _) in HOSTILE.items():
        reason = marked[prompt].get("error") or marked[prompt].get("reason") or ""
        assert "gave up after 2 failures" in json.dumps(marked[prompt]), (kind, marked[prompt])
        assert reason, kind
    final = status(folder)
    assert final["completed"] == 1
    assert final["tokens_this_run"] == 3
