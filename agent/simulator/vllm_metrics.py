"""`/metrics` of the vLLM flavour: Prometheus text with vLLM's `vllm:` names, one series per engine.

Names, kinds and labels as vLLM 0.34.0 exports them (vllm/v1/metrics/loggers.py): every series
carries `model_name` and `engine`, one per data-parallel engine (:499-505), so `--dp-size N`
gives N series of each; `vllm:num_requests_running`/`_waiting` (:528-545), the KV-cache share
`vllm:kv_cache_usage_perc`, 1 meaning full (:620; `gpu_cache_usage_perc` before 0.34), the
token counters (:798-809) and `vllm:request_success_total` by `finished_reason` (:811).
"""

from __future__ import annotations

from collections import Counter

from agent.simulator.engine import Engine
from agent.simulator.ranks import Ranks

REASONS = ("stop", "length", "abort")


class FinishCounts:
    """Finished requests by engine and finish reason, for vllm:request_success_total."""

    def __init__(self) -> None:
        self.by_reason: Counter[tuple[int, str]] = Counter()

    def count(self, engine: int, reason: str) -> None:
        """One more request finished on `engine` with `reason`."""
        self.by_reason[engine, reason] += 1


def vllm_metrics_text(ranks: Ranks, model_name: str, finishes: FinishCounts) -> str:
    """The gauges and counters a vLLM server exposes, one series per simulated engine."""
    engines = list(enumerate(ranks.engines))
    lines: list[str] = []
    for kind, values in (("gauge", _gauges), ("counter", _counters)):
        for name in values(ranks.engines[0]):
            lines += [f"# HELP vllm:{name} {name.replace('_', ' ')}.", f"# TYPE vllm:{name} {kind}"]
            lines += [
                f"vllm:{name}{_labels(model_name, index)} {float(values(engine)[name])}"
                for index, engine in engines
            ]
    lines += _spec_lines(ranks, model_name)
    lines += ["# HELP vllm:request_success_total Finished requests.",
              "# TYPE vllm:request_success_total counter"]  # fmt: skip
    for index, _ in engines:
        for reason in REASONS:
            labels = _labels(model_name, index, f'finished_reason="{reason}",')
            lines.append(
                f"vllm:request_success_total{labels} {float(finishes.by_reason[index, reason])}"
            )
    return "\n".join(lines) + "\n"


def _spec_lines(ranks: Ranks, model_name: str) -> list[str]:
    """The drafter's counters, as vLLM 0.32 names them (v1/spec_decode/metrics.py ~229-275).

    A verify step is one draft of `num_draft_tokens - 1` tokens (vLLM's num_speculative_tokens:
    SGLang counts the verified root token too); it yields the accepted ones and a bonus token,
    so accepted = tokens made - drafts. The accepted are spread evenly over the positions.
    """
    speculation = ranks.engines[0].settings.speculation
    if speculation is None:
        return []
    positions = speculation.num_draft_tokens - 1
    lines: list[str] = []
    for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens",
                 "num_accepted_tokens_per_pos"):  # fmt: skip
        lines += [
            f"# HELP vllm:spec_decode_{name} {name}.",
            f"# TYPE vllm:spec_decode_{name} counter",
        ]
        for index, engine in enumerate(ranks.engines):
            drafts = round(engine.verify_steps_total)
            accepted = max(0, engine.generated_tokens_total - drafts)
            values = {"num_drafts": drafts, "num_draft_tokens": drafts * positions,
                      "num_accepted_tokens": accepted}  # fmt: skip
            if name in values:
                lines.append(f"vllm:spec_decode_{name}_total{_labels(model_name, index)} "
                             f"{float(values[name])}")  # fmt: skip
                continue
            share = accepted / positions
            for position in range(positions):
                labels = _labels(model_name, index, 'position="' + str(position) + '",')
                lines.append(f"vllm:spec_decode_{name}_total{labels} {share:.1f}")
    return lines


def _labels(model_name: str, engine: int, extra: str = "") -> str:
    return f'{{engine="{engine}",{extra}model_name="{model_name}"}}'


def _gauges(engine: Engine) -> dict[str, float]:
    return {
        "num_requests_running": len(engine.running),
        "num_requests_waiting": len(engine.queue),
        "kv_cache_usage_perc": round(engine.token_usage, 4),
    }


def _counters(engine: Engine) -> dict[str, float]:
    return {
        "prompt_tokens_total": engine.prompt_tokens_total,
        "generation_tokens_total": engine.generated_tokens_total,
    }
