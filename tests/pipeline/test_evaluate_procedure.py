"""The evaluation measures as SGLang's bench_serving does: per level, warm-up on prompts it does not
measure, a flush, the measured prompts, the server's own count; a flush that fails marks the level
as run on a warm cache instead of mixing earlier requests into its figures.

The server is a stand-in written here, so each answer and its order can be set and seen.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agent.pipeline.evaluate import server_state
from agent.pipeline.evaluate.__main__ import build_parser, options_from
from agent.pipeline.evaluate.run import encoded_prompts, evaluate
from tests.support.export_data import write_jsonl
from tests.support.loopback_app import serving

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
COMPLETION = 9
SPEC = {  # per prompt parity: two verify-step shapes, with SGLang's sums (9 = 1 + steps + drafts)
    1: {"spec_verify_ct": 2, "spec_accept_length": 4.5, "spec_num_correct_drafts": 6,
        "spec_num_proposed_drafts": 6, "spec_correct_drafts_histogram": [0, 0, 0, 2]},
    0: {"spec_verify_ct": 4, "spec_accept_length": 2.25, "spec_num_correct_drafts": 4,
        "spec_num_proposed_drafts": 12, "spec_correct_drafts_histogram": [0, 4]},
}  # fmt: skip


@dataclass
class StandIn:
    """An SGLang /generate, /flush_cache and /server_info that record what they were asked."""

    routes: dict[str, str] = field(default_factory=dict)
    """Paths answered otherwise: by the method of that name (refuse, hang, not_here, nan_info)."""
    events: list[tuple[str, Any]] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the test is done: a hung answer ends then, so the server stops at once."""

    def app(self) -> web.Application:
        app = web.Application()
        handlers = {"/generate": self.generate, "/flush_cache": self.flush,
                    "/server_info": self.server_info, "/get_server_info": self.server_info,
                    "/health": self.health}  # fmt: skip
        handlers |= {path: getattr(self, name) for path, name in self.routes.items()}
        for path, handler in handlers.items():
            app.router.add_route("*", path, self._recorded(path, handler))
        return app

    def _recorded(self, path: str, handler: Handler) -> Handler:
        async def record(request: web.Request) -> web.StreamResponse:
            if path == "/generate":
                body = await request.json()
                self.events.append((path, (body["input_ids"][0], body["sampling_params"])))
            elif path != "/health":
                self.events.append((path, dict(request.query)))
            return await handler(request)

        return record

    async def generate(self, request: web.Request) -> web.Response:
        first = (await request.json())["input_ids"][0]
        meta = {"completion_tokens": COMPLETION} | SPEC[first % 2]
        return web.json_response({"output_ids": [5] * COMPLETION, "meta_info": meta})

    async def flush(self, request: web.Request) -> web.Response:
        return web.Response(text="Cache flushed.\n")

    async def server_info(self, request: web.Request) -> web.Response:
        return web.json_response({"internal_states": [{"avg_spec_accept_length": 2.75}]})

    async def health(self, request: web.Request) -> web.Response:
        return web.Response()

    async def refuse(self, request: web.Request) -> web.Response:
        return web.Response(status=400, text="Flush cache failed.\n")

    async def hang(self, request: web.Request) -> web.Response:
        await self.released.wait()
        return web.Response(status=500)

    async def not_here(self, request: web.Request) -> web.Response:
        return web.Response(status=404)

    async def nan_info(self, request: web.Request) -> web.Response:
        return web.Response(text='{"internal_states": [{"avg_spec_accept_length": NaN}]}')


@contextlib.asynccontextmanager
async def served(stand_in: StandIn) -> AsyncIterator[str]:
    async with serving(stand_in.app()) as url:
        try:
            yield url
        finally:
            stand_in.released.set()


async def run(tmp_path: Path, url: str, *flags: str) -> dict[str, Any]:
    """Evaluate 2 measured prompts (ids 1, 2) with 2 more (3, 4) for the warm-up."""
    prompts = tmp_path / "held_out.jsonl"
    write_jsonl(prompts, [{"id": i, "input_ids": [i]} for i in range(1, 6)])
    args = build_parser().parse_args(["--server", url, "--prompts", str(prompts),
                                      "--num-prompts", "2", "--concurrency", "1,2",
                                      "--max-new-tokens", "9", "--out", str(tmp_path), *flags])  # fmt: skip
    options = options_from(args)
    return await evaluate(options, encoded_prompts(options))


async def test_each_level_warms_up_on_other_prompts_then_flushes_then_measures(
    tmp_path: Path,
) -> None:
    stand_in = StandIn()
    async with served(stand_in) as url:
        record = await run(tmp_path, url, "--flush-timeout", "7")
    level = [(path, what[0] if path == "/generate" else what) for path, what in stand_in.events]
    flush: tuple[str, Any] = ("/flush_cache", {"timeout": "7"})
    info: tuple[str, Any] = ("/server_info", {})
    assert level[:6] == [("/generate", 3), ("/generate", 4), flush, ("/generate", 1),
                         ("/generate", 2), info]  # fmt: skip
    assert sorted(level[6:8]) == [("/generate", 3), ("/generate", 4)]  # at concurrency 2
    assert level[8] == flush
    assert sorted(level[9:11]) == [("/generate", 1), ("/generate", 2)]
    assert level[11:] == [info]
    settings = record["settings"]
    assert (settings["warmup"], settings["warmup_prompts"], settings["prompts_measured"]) == (
        2,
        2,
        2,
    )
    assert record["details"][0]["server"]["warmup_requests"] == 2


async def test_both_accept_lengths_the_rate_and_the_histogram_with_their_definitions(
    tmp_path: Path,
) -> None:
    async with served(StandIn()) as url:
        record = await run(tmp_path, url)
    for level in record["levels"]:
        assert level["accept_length"] == (4.5 + 2.25) / 2  # SpecForge: mean of per-request
        assert level["accept_length_decode_steps"] == 2.75  # SGLang: /server_info, as bench_serving
        assert level["spec_accept_rate"] == round((6 + 4) / (6 + 12), 4)
        assert level["spec_correct_drafts_histogram"] == [0, 4, 0, 2]
        assert level["warm_cache"] is False
    definitions = record["definitions"]
    assert "SpecForge" in definitions["accept_length"]
    assert "tokenizer_manager.py" in definitions["accept_length"]
    assert "avg_spec_accept_length" in definitions["accept_length_decode_steps"]
    assert {"spec_accept_rate", "spec_correct_drafts_histogram", "warm_cache"} <= set(definitions)
    assert record["settings"]["ignore_eos"] is False


async def test_ignore_eos_is_sglangs_sampling_parameter_on_every_request(tmp_path: Path) -> None:
    stand_in = StandIn()
    async with served(stand_in) as url:
        await run(tmp_path / "without", url)
        sent_without = [what[1] for path, what in stand_in.events if path == "/generate"]
        stand_in.events.clear()
        record = await run(tmp_path / "with", url, "--ignore-eos")
    sent = [what[1] for path, what in stand_in.events if path == "/generate"]
    assert len(sent) == len(sent_without) == 2 * (2 + 2)  # levels x (warm-up + measured)
    assert all(params["ignore_eos"] is True for params in sent)
    assert all("ignore_eos" not in params for params in sent_without)
    assert record["settings"]["ignore_eos"] is True


@pytest.mark.parametrize(("handler", "why"), [("refuse", "HTTP 400: Flush cache failed."),
                                              ("hang", "TimeoutError")])  # fmt: skip
async def test_a_failed_flush_marks_the_level_warm_and_takes_no_server_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    handler: str, why: str,
) -> None:  # fmt: skip
    monkeypatch.setattr(server_state, "FLUSH_GRACE_S", 0.5)  # a hung flush: 0.5 s past its timeout
    stand_in = StandIn(routes={"/flush_cache": handler})
    async with served(stand_in) as url:
        record = await run(tmp_path, url, "--flush-timeout", "0")
    assert not [event for event in stand_in.events if event[0] == "/server_info"]
    for level, details in zip(record["levels"], record["details"], strict=True):
        assert level["warm_cache"] is True
        assert level["accept_length_decode_steps"] is None
        assert level["accept_length"] == (4.5 + 2.25) / 2  # the answers' own figures still stand
        server = details["server"]
        assert server["cache_flushed"] is False
        assert server["flush_error"].startswith(why)
        assert server["decode_steps_unavailable"].startswith("the flush before the level failed")
    assert record["verdict"].endswith(
        "; concurrency 1, 2 ran on a warm cache (the cache was not flushed)"
    )
    assert "/flush_cache failed before concurrency 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("routes", "figure", "why"),
    [({"/server_info": "not_here"}, 2.75, None),  # sglang-router 0.3.2: /get_server_info only
     ({"/server_info": "not_here", "/get_server_info": "not_here"}, None,
      "/server_info: ValueError: HTTP 404"),
     ({"/server_info": "nan_info"}, None, "/server_info: ValueError: NaN is not JSON"),
     ({"/server_info": "hang"}, None, "/server_info: TimeoutError")],
)  # fmt: skip
async def test_the_server_count_is_read_where_the_router_has_it_and_never_believed_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    routes: dict[str, str], figure: float | None, why: str | None,
) -> None:  # fmt: skip
    monkeypatch.setattr(server_state, "SERVER_INFO_TIMEOUT_S", 0.5)
    async with served(StandIn(routes=routes)) as url:
        record = await run(tmp_path, url)
    level, server = record["levels"][0], record["details"][0]["server"]
    assert level["accept_length_decode_steps"] == figure
    assert level["warm_cache"] is False
    unavailable = server["decode_steps_unavailable"]
    assert unavailable == why if why is None else unavailable.startswith(why), unavailable
