"""The bodies of SGLang's info endpoints, built from the simulator's config and live ranks.

- `/server_info` (srt/entrypoints/http_server.py:863-894): the resolved server args at the top
  level, where `max_running_requests` is the command-line value and so None unless it was given
  (arg_groups/fields/schedule.py:31-34), plus `internal_states`, one per DP rank, each with the
  scheduler's `effective_max_running_requests_per_dp`
  (managers/scheduler_components/internal_state.py:67-74) and, with a drafter, its
  `avg_spec_accept_length` once it has one since start or /flush_cache (internal_state.py:
  119-125; agent/simulator/flush.py).
- `/model_info` (http_server.py:812-850).
- `/get_load` (sglang 0.5.8 http_server.py:601-608, scheduler_metrics_mixin.py:568-595): one
  entry per DP rank; the router polls it. Removed from later 0.5 releases, still polled by
  sglang-router 0.3.2.
"""

from __future__ import annotations

import time
from typing import Any

from agent.protocol import to_wire
from agent.simulator.config import SimulatorConfig
from agent.simulator.engine import Engine
from agent.simulator.flush import avg_spec_accept_length
from agent.simulator.ranks import Ranks


def server_info(config: SimulatorConfig, ranks: Ranks, port: int) -> dict[str, Any]:
    """What `/server_info` answers."""
    return {
        "model_path": config.model_path,
        "tokenizer_path": config.model_path,
        "host": config.host,
        "port": port,
        "tp_size": 1,
        "dp_size": ranks.dp_size,
        "context_length": config.context_length,
        "max_running_requests": config.max_running_requests_flag,
        "max_total_num_tokens": ranks.engines[0].settings.max_total_tokens,
        "skip_tokenizer_init": config.skip_tokenizer_init,
        **_speculative_args(config),
        "decode_log_interval": 40,
        "internal_states": [
            _internal_state(rank, engine) for rank, engine in enumerate(ranks.engines)
        ],
        "version": "0.5.23-simulator",
        "frontend": "python",
        "simulator": {"engine": to_wire(ranks.settings), "faults": to_wire(config.faults)},
    }


def _internal_state(rank: int, engine: Engine) -> dict[str, Any]:
    """One DP rank's scheduler state; the accept length only when SGLang has one to give."""
    state: dict[str, Any] = {
        "dp_rank": rank,
        "effective_max_running_requests_per_dp": engine.settings.max_running_requests,
        "last_gen_throughput": engine.gen_throughput,
    }
    accept_length = avg_spec_accept_length(engine)
    if accept_length is not None:
        state["avg_spec_accept_length"] = accept_length
    return state


def _speculative_args(config: SimulatorConfig) -> dict[str, Any]:
    """SGLang's speculative server args (None without a drafter, as its defaults)."""
    speculation = config.engine.speculation
    if speculation is None:
        return {"speculative_algorithm": None}
    return {
        "speculative_algorithm": speculation.algorithm,
        "speculative_num_draft_tokens": speculation.num_draft_tokens,
        "speculative_eagle_topk": 1,
        "speculative_num_steps": speculation.num_draft_tokens - 1,
    }


def model_info(config: SimulatorConfig) -> dict[str, Any]:
    """What `/model_info` answers."""
    return {
        "model_path": config.model_path,
        "served_model_name": config.model_path,
        "tokenizer_path": config.model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
    }


def loads(ranks: Ranks) -> list[dict[str, Any]]:
    """What `/get_load` answers: one entry per DP rank."""
    return [
        {
            "dp_rank": rank,
            "num_reqs": len(engine.running) + len(engine.queue),
            "num_waiting_reqs": len(engine.queue),
            "num_tokens": sum(r.prompt_tokens + int(r.produced) for r in engine.running)
            + sum(r.prompt_tokens for r in engine.queue),
            "ts_tic": time.perf_counter(),
        }
        for rank, engine in enumerate(ranks.engines)
    ]
