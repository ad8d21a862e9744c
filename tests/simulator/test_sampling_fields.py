"""top_k, min_p, the seed and the chat template's arguments, as SGLang 0.5 and vLLM 0.34 take them.

Refusals in each server's own words (sglang sampling_params.py:261-311; vllm sampling_params.py
671-688); a seeded answer is drawn from its seed (the same seed gives the same answer, another
seed another); the template's arguments change the rendered prompt.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.support.json_http import post
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "50", "--mean-tokens", "40", "--sd-tokens", "10", "--seed", "3")
MESSAGES = [{"role": "user", "content": "why is the sum so"}]


@pytest.mark.parametrize(
    ("flavor", "field", "value", "said"),
    [
        ("vllm", "top_k", -2, "top_k must be 0 (disable), or at least 1, got -2."),
        ("sglang", "top_k", 0, "top_k must be -1 (disable) or at least 1, got 0."),
        ("vllm", "min_p", 1.5, "min_p must be in [0, 1], got 1.5."),
        ("sglang", "seed", "7", "seed must be an integer"),
    ],
)
async def test_v1_refuses_what_each_server_refuses(
    tmp_path: Path, http: aiohttp.ClientSession, flavor: str, field: str, value: object, said: str
) -> None:
    with running_simulator(tmp_path / "s", *FAST, "--flavor", flavor) as sim:
        status, body = await post(http, f"{sim.url}/v1/completions",
                                  {"prompt": [5, 6], "max_tokens": 8, field: value})  # fmt: skip
    assert status == 400
    assert said in str(body)


async def test_generate_refuses_top_k_zero_and_takes_minus_one(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path / "s", *FAST) as sim:
        url = f"{sim.url}/generate"
        refused = await post(http, url, {"input_ids": [5], "sampling_params": {"top_k": 0}})
        taken = await post(http, url, {"input_ids": [5], "sampling_params": {
            "top_k": -1, "min_p": 0.1, "sampling_seed": 4, "max_new_tokens": 8}})  # fmt: skip
    assert refused[0] == 400
    assert "top_k must be -1 (disable) or at least 1, got 0." in str(refused[1])
    assert taken[0] == 200


async def test_a_seeded_answer_is_drawn_from_its_seed_alike_on_both_apis(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    def generate(seed: int) -> dict[str, object]:
        return {"input_ids": [5, 6, 7], "sampling_params": {"max_new_tokens": 60,
                                                            "sampling_seed": seed}}  # fmt: skip

    with running_simulator(tmp_path / "s", *FAST) as sim:
        first = (await post(http, f"{sim.url}/generate", generate(1)))[1]["output_ids"]
        again = (await post(http, f"{sim.url}/generate", generate(1)))[1]["output_ids"]
        other = (await post(http, f"{sim.url}/generate", generate(2)))[1]["output_ids"]
    with running_simulator(tmp_path / "v", *FAST, "--flavor", "vllm") as sim:
        _, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": [5, 6, 7], "max_tokens": 60, "seed": 1, "return_token_ids": True})  # fmt: skip
    assert first == again != other
    assert body["choices"][0]["token_ids"] == first


async def test_the_templates_arguments_change_the_rendered_chat_prompt(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async def prompt_ids(url: str, arguments: object) -> list[int]:
        body = {"messages": MESSAGES, "max_tokens": 4, "return_token_ids": True}
        if arguments is not None:
            body["chat_template_kwargs"] = arguments
        status, answer = await post(http, f"{url}/v1/chat/completions", body)
        assert status == 200, answer
        ids: list[int] = answer["prompt_token_ids"]
        return ids

    with running_simulator(tmp_path / "v", *FAST, "--flavor", "vllm") as sim:
        plain = await prompt_ids(sim.url, None)
        off = await prompt_ids(sim.url, {"enable_thinking": False})
        on = await prompt_ids(sim.url, {"enable_thinking": True})
        refused = await post(http, f"{sim.url}/v1/chat/completions",
                             {"messages": MESSAGES, "chat_template_kwargs": [1]})  # fmt: skip
    assert len({tuple(plain), tuple(off), tuple(on)}) == 3
    assert refused[0] == 400
