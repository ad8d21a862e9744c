"""`/metrics` of the vLLM flavour: Prometheus text with vLLM's `vllm:` names.

Names, kinds and the `finished_reason` label as vLLM 0.33 exports them
(vllm/v1/metrics/loggers.py:528-809; openai-compat-wire.md §1): the agent's probe reads running,
queued and the generation-token counter from them.
"""

from __future__ import annotations

from collections import Counter

from agent.simulator.ranks import Ranks


class FinishCounts:
    """Finished requests by finish reason, for vllm:request_success_total."""

    def __init__(self) -> None:
        self.by_reason: Counter[str] = Counter()

    def count(self, reason: str) -> None:
        """One more request finished with `reason`."""
        self.by_reason[reason] += 1


def vllm_metrics_text(ranks: Ranks, model_name: str, finishes: FinishCounts) -> str:
    """The gauges and counters a vLLM server exposes, summed over the simulated ranks."""
    engines = ranks.engines
    labels = f'{{engine="0",model_name="{model_name}"}}'
    gauges = {
        "num_requests_running": sum(len(e.running) for e in engines),
        "num_requests_waiting": sum(len(e.queue) for e in engines),
    }
    counters = {
        "prompt_tokens_total": sum(e.prompt_tokens_total for e in engines),
        "generation_tokens_total": sum(e.generated_tokens_total for e in engines),
    }
    lines: list[str] = []
    for kind, values in (("gauge", gauges), ("counter", counters)):
        for name, value in values.items():
            lines += [f"# HELP vllm:{name} {name.replace('_', ' ')}.", f"# TYPE vllm:{name} {kind}"]
            lines.append(f"vllm:{name}{labels} {float(value)}")
    lines += ["# HELP vllm:request_success_total Finished requests.",
              "# TYPE vllm:request_success_total counter"]  # fmt: skip
    for reason in ("stop", "length", "abort"):
        label = f'{{engine="0",finished_reason="{reason}",model_name="{model_name}"}}'
        lines.append(f"vllm:request_success_total{label} {float(finishes.by_reason[reason])}")
    return "\n".join(lines) + "\n"
