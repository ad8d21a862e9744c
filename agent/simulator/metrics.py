"""`/metrics` in Prometheus text, with SGLang's `sglang:` names and labels."""

from __future__ import annotations

from agent.simulator.engine import Engine


def prometheus_text(engine: Engine, model_name: str) -> str:
    """The engine's gauges and counters as SGLang's --enable-metrics exposes them."""
    labels = f'{{model_name="{model_name}",engine_type="unified",tp_rank="0",pp_rank="0"}}'
    gauges = {
        "num_running_reqs": len(engine.running),
        "num_queue_reqs": len(engine.queue),
        "gen_throughput": round(engine.gen_throughput, 2),
        "token_usage": round(engine.token_usage, 4),
        "cache_hit_rate": 0.0,
        "num_used_tokens": sum(r.prompt_tokens + int(r.produced) for r in engine.running),
    }
    counters = {
        "prompt_tokens_total": engine.prompt_tokens_total,
        "generation_tokens_total": engine.generated_tokens_total,
        "num_requests_total": engine.requests_total,
    }
    lines: list[str] = []
    for kind, values in (("gauge", gauges), ("counter", counters)):
        for name, value in values.items():
            lines += [
                f"# HELP sglang:{name} {name.replace('_', ' ')}.",
                f"# TYPE sglang:{name} {kind}",
            ]
            lines.append(f"sglang:{name}{labels} {float(value)}")
    return "\n".join(lines) + "\n"
