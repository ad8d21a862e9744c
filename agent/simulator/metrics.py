"""`/metrics` in Prometheus text, with SGLang's `sglang:` names and labels.

One series per DP rank, labelled `dp_rank` when data parallelism is on, as SGLang's scheduler
collectors do (srt/observability/metrics_collector.py:1382-1393); names and kinds from
metrics_collector.py:363-540 and 1856-1960.
"""

from __future__ import annotations

from agent.simulator.engine import Engine
from agent.simulator.ranks import Ranks


def prometheus_text(ranks: Ranks, model_name: str) -> str:
    """Every rank's gauges and counters as SGLang's --enable-metrics exposes them."""
    series = [
        (_labels(model_name, rank if ranks.dp_size > 1 else None), engine)
        for rank, engine in enumerate(ranks.engines)
    ]
    lines: list[str] = []
    for kind, values in (("gauge", _gauges), ("counter", _counters)):
        for name in values(ranks.engines[0]):
            lines += [
                f"# HELP sglang:{name} {name.replace('_', ' ')}.",
                f"# TYPE sglang:{name} {kind}",
            ]
            lines += [f"sglang:{name}{labels} {float(values(e)[name])}" for labels, e in series]
    return "\n".join(lines) + "\n"


def _labels(model_name: str, dp_rank: int | None) -> str:
    labels = f'model_name="{model_name}",engine_type="unified",tp_rank="0",pp_rank="0"'
    return "{" + labels + (f',dp_rank="{dp_rank}"' if dp_rank is not None else "") + "}"


def _gauges(engine: Engine) -> dict[str, float]:
    speculation = engine.settings.speculation
    spec: dict[str, float] = {}
    if speculation is not None:  # metrics_collector.py:511-522, set from the Decode line's figures
        rate = (engine.accept_length - 1) / (speculation.num_draft_tokens - 1)
        spec = {"spec_accept_length": round(engine.accept_length, 4),
                "spec_accept_rate": round(max(rate, 0.0), 4)}  # fmt: skip
    return spec | {
        "num_running_reqs": len(engine.running),
        "num_queue_reqs": len(engine.queue),
        "gen_throughput": round(engine.gen_throughput, 2),
        "token_usage": round(engine.token_usage, 4),
        "cache_hit_rate": 0.0,
        "num_used_tokens": sum(r.prompt_tokens + int(r.produced) for r in engine.running),
    }


def _counters(engine: Engine) -> dict[str, float]:
    verify: dict[str, float] = {"spec_verify_calls_total": round(engine.verify_steps_total)}
    return (verify if engine.settings.speculation is not None else {}) | {
        "prompt_tokens_total": engine.prompt_tokens_total,
        "generation_tokens_total": engine.generated_tokens_total,
        "num_requests_total": engine.requests_total,
    }
