"""SGLang's Prometheus text, read into one figure per metric and one per rank or worker.

A server has several series per name: one per DP rank (`dp_rank`), and with priority scheduling
a per-priority breakdown beside the total, which carries `priority=""` (sglang
srt/observability/metrics_collector.py:1382-1393, 1414-1426). With
`--enable-metrics-for-all-schedulers` every TP rank repeats its DP rank's figures. Behind
sglang-router, `/engine_metrics` carries every worker's series renamed `sglang_...` with a
`worker_addr` label. vLLM 0.34 labels every series `model_name` and `engine`, one series per
data-parallel engine (vllm v1/metrics/loggers.py:499-545). So: breakdowns are dropped, one
series is kept per (worker, DP rank, engine), and those are summed, or averaged for ratios.

The text format is simple enough to read here: the agent's core must not need a third-party
package (prometheus_client is not always in the Python that runs the agent).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agent.probes.values import count, figure, is_small_number

_LINE = r"^({prefix}[:_][A-Za-z0-9_]+)(?:\{{(.*)\}})?\s+(\S+)(?:\s+\d+)?$"
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
RATIOS = frozenset({
    "token_usage", "cache_hit_rate", "spec_accept_length", "spec_accept_rate", "swa_token_usage",
    "mamba_usage", "utilization", "kv_cache_usage_perc", "gpu_cache_usage_perc",
})  # fmt: skip
"""Averaged across ranks and workers; everything else (counts, rates, totals) is summed."""
_REPLICA_LABELS = ("tp_rank", "pp_rank", "moe_ep_rank")


@dataclass(frozen=True, slots=True)
class Sample:
    """One series' value: the metric's short name (no `sglang:` prefix) and its labels."""

    name: str
    labels: dict[str, str]
    value: float

    @property
    def part(self) -> tuple[str, str, str]:
        """Which worker, DP rank (SGLang) and engine (vLLM) it describes."""
        labels = self.labels
        return labels.get("worker_addr", ""), labels.get("dp_rank", ""), labels.get("engine", "")


def parse(text: str, prefix: str = "sglang") -> list[Sample]:
    """Every `sglang:`/`sglang_` sample (or `prefix`'s, as vLLM's `vllm:`); junk lines skipped."""
    samples = []
    pattern = re.compile(_LINE.format(prefix=re.escape(prefix)))
    for line in text.splitlines():
        match = pattern.match(line.strip())
        if match is None:
            continue
        try:
            value = float(match[3])
        except ValueError:
            continue
        if not math.isfinite(value):  # NaN is legal (no value now): a missing figure, not a sum
            continue
        labels = {key: value for key, value in _LABEL.findall(match[2] or "")}
        samples.append(Sample(match[1][len(prefix) + 1 :], labels, value))
    return samples


def one_per_part(samples: list[Sample]) -> list[Sample]:
    """Drop per-priority breakdowns and TP/PP/EP replicas: one series per (worker, rank)."""
    kept: dict[tuple[str, tuple[str, str, str]], Sample] = {}
    for sample in samples:
        if sample.labels.get("priority", ""):
            continue
        key = (sample.name, sample.part)
        if key not in kept or _replica_order(sample) < _replica_order(kept[key]):
            kept[key] = sample
    return list(kept.values())


def _replica_order(sample: Sample) -> tuple[int, ...]:
    return tuple(_int(sample.labels.get(label, "0")) for label in _REPLICA_LABELS)


def totals(samples: list[Sample]) -> dict[str, float]:
    """One figure per metric over all parts: a sum, or the mean of a ratio."""
    grouped: dict[str, list[float]] = defaultdict(list)
    for sample in one_per_part(samples):
        grouped[sample.name].append(sample.value)
    return {name: _combine(name, values) for name, values in grouped.items()}


def sglang_figures(samples: list[Sample]) -> dict[str, Any]:
    """SGLang's whole-server load from its metrics, as ServerStats fields.

    A server's, or a router's summed over its workers: each a valid figure or None.
    """
    total = totals(samples)
    return {
        "running_requests": count(total.get("num_running_reqs")),
        "queued_requests": count(total.get("num_queue_reqs")),
        "token_usage": figure(total.get("token_usage")),
        "gen_throughput_tokens_per_s": figure(total.get("gen_throughput")),
        "cache_hit_rate": figure(total.get("cache_hit_rate")),
        "accept_length": figure(total.get("spec_accept_length")),
    }


def by_part(samples: list[Sample], label: str) -> dict[str, dict[str, float]]:
    """Figures per value of `label` (dp_rank, worker_addr or engine), combined within each."""
    grouped: dict[str, list[Sample]] = defaultdict(list)
    for sample in one_per_part(samples):
        if label in sample.labels:
            grouped[sample.labels[label]].append(sample)
    return {key: totals(group) for key, group in sorted(grouped.items(), key=_natural)}


def _combine(name: str, values: list[float]) -> float:
    return sum(values) / len(values) if name in RATIOS else sum(values)


def _natural(item: tuple[str, object]) -> tuple[int, str]:
    key = item[0]
    return (int(key), "") if is_small_number(key) else (1 << 62, key)


def _int(text: str) -> int:
    return int(text) if is_small_number(text) else 0
