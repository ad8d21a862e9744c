"""Which server wrote a `/server_info` answer, told by keys only that server writes.

A 200 at `/server_info` is no sign of SGLang by itself. Shared by the runner (which ids to ask
a chat API for) and the probes (what to read), so the two cannot disagree:
- SGLang 0.5.23 answers its flat server args with the scheduler's state: `model_path`,
  `max_total_num_tokens`, `internal_states` per DP rank, `version`
  (sglang srt/entrypoints/http_server.py:863-894, managers/scheduler.py:1937-1947);
- vLLM 0.34.0 answers it only with `VLLM_SERVER_DEV_MODE=1`, as `vllm_config`, `vllm_env` and
  `system_env` (vllm entrypoints/serve/dev/server_info/api_router.py:43-59);
- sglang-router 0.3.2 answers 404 there and `{"router_manager": true, "routers_count",
  "workers_count"}` at the deprecated `/get_server_info` (checked against its binary).
Standard library only; no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

ServerKind = Literal["sglang", "vllm", "router", "unknown"]

VLLM_KEYS = frozenset({"vllm_config", "vllm_env"})
SGLANG_KEYS = frozenset({"max_total_num_tokens", "internal_states", "max_req_input_len"})


def server_info_kind(body: Any) -> ServerKind:
    """Who wrote this /server_info (or /get_server_info) body; "unknown" when none says so."""
    if not isinstance(body, dict):
        return "unknown"
    if body.get("router_manager") is True:
        return "router"
    if VLLM_KEYS & body.keys():
        return "vllm"
    if "model_path" in body and SGLANG_KEYS & body.keys():
        return "sglang"
    return "unknown"
