"""vLLM's speculative-decoding counters read into accept length, acceptance and per-position rates.

Derived as vLLM derives them for its own log line (v1/spec_decode/metrics.py ~107-118), summed
over data-parallel engines, and live: the change since the last reading of the same server.
"""

from __future__ import annotations

import pytest

from agent.probes import prometheus
from agent.probes.vllm_spec import figures_of, spec_counters, spec_figures

MODEL = 'model_name="m"'


def metrics(*engines: tuple[float, float, float, tuple[float, ...]]) -> list[prometheus.Sample]:
    lines = []
    for engine, (drafts, tokens, accepted, positions) in enumerate(engines):
        labels = f'engine="{engine}",{MODEL}'
        lines += [
            f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {tokens}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}",
            f"vllm:spec_decode_num_drafts_created{{{labels}}} 1.79e9",
        ]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} {n}'
            for p, n in enumerate(positions)
        ]
    return prometheus.parse("\n".join(lines), "vllm")


def test_two_engines_are_summed_and_derived_as_vllm_logs_them() -> None:
    counters = spec_counters(metrics((10, 30, 12, (6, 4, 2)), (30, 90, 28, (14, 9, 5))))
    assert counters is not None
    figures = figures_of(counters)
    assert figures.accept_length == 1 + 40 / 40
    assert figures.acceptance == round(40 / 120, 4)
    assert figures.per_position == (0.5, 0.325, 0.175)
    assert figures.draft_tokens_per_step == 3


def test_the_live_figure_is_the_change_since_the_last_reading() -> None:
    url = "http://test-live"
    first = spec_figures(url, spec_counters(metrics((100, 300, 300, (100, 100, 100)))))  # type: ignore[arg-type]
    assert first.accept_length == 4.0, "before a second reading: the server's life so far"
    later = spec_figures(url, spec_counters(metrics((200, 600, 300, (100, 100, 100)))))  # type: ignore[arg-type]
    assert later.accept_length == 1.0, "the last 100 drafts had nothing accepted"
    idle = spec_figures(url, spec_counters(metrics((200, 600, 300, (100, 100, 100)))))  # type: ignore[arg-type]
    assert idle.accept_length == 2.5, "no draft since: the whole life again, never 0/0"


@pytest.mark.parametrize(
    ("engine", "why"),
    [
        ((0, 0, 0, ()), "no draft yet"),
        ((10, 30, 31, (10, 10, 11)), "more accepted than drafted"),
        ((10, 30, -1, ()), "a negative count"),
    ],
)
def test_counters_that_say_nothing_or_cannot_be_give_no_figure(
    engine: tuple[float, float, float, tuple[float, ...]], why: str
) -> None:
    counters = spec_counters(metrics(engine))
    assert counters is not None
    assert figures_of(counters).accept_length is None, why


def test_no_drafts_counter_means_no_drafter_and_odd_positions_are_not_taken() -> None:
    assert (
        spec_counters(prometheus.parse('vllm:num_requests_running{engine="0"} 1', "vllm")) is None
    )
    odd = metrics((10, 30, 6, (3, 2, 1)))
    odd += prometheus.parse(
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="99"} 5\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="x"} 5', "vllm"
    )  # fmt: skip
    counters = spec_counters(odd)
    assert counters is not None
    assert counters.per_position == (3, 2, 1)


def test_counters_that_add_up_past_a_float_give_no_figure() -> None:
    assert spec_counters(metrics((1e308, 1e308, 1e308, ()), (1e308, 1e308, 1e308, ()))) is None
