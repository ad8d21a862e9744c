"""Which SGLang or SpecForge number each figure of eval.json follows, written into eval.json.

Two accept lengths are in use and they differ: SGLang's per-request one counts the token the
prefill makes (it is completion_tokens over verify steps), its server-wide one counts decode
passes only. A figure without its definition beside it cannot be compared with either tool's.
Paths are in the sglang 0.5.23 and specforge 0.2.0 wheels; line numbers are approximate.
"""

from __future__ import annotations

DEFINITIONS = {
    "accept_length": (
        "Plain mean over the level's requests of SGLang's per-request meta_info "
        "spec_accept_length = completion_tokens / spec_verify_ct (sglang "
        "srt/managers/tokenizer_manager.py ~3166-3168), which counts the token the prefill "
        "makes; the number SpecForge's benchmark prints as 'Average acceptance length' "
        "(specforge/benchmarks/sglang.py ~175-195). On vLLM, which gives no per-request "
        "figure: 1 + accepted tokens / drafts over the level, from its counters (the same as "
        "accept_length_decode_steps there)."
    ),
    "accept_length_decode_steps": (
        "SGLang's avg_spec_accept_length from /server_info internal_states, one per DP rank "
        "(scheduler), read after the level as bench_serving reads it for its 'Accept length' "
        "(which takes rank 0's alone); with several ranks, their plain mean (SGLang gives each "
        "rank's average, not its counts), and null when a rank gave none "
        "(sglang/benchmark/serving.py ~1641-1660): accepted tokens per decode pass, the "
        "prefill's token not counted, cumulative since the /flush_cache before the level "
        "(srt/managers/scheduler_components/internal_state.py ~243-253, metrics_reporter.py "
        "~996-1000, reset at ~707-716). SGLang adds each 40 decode batches in at once "
        "(--decode-log-interval), so up to 39 final batches are left out. null when the flush "
        "failed (the count would include earlier requests) or the server gave none; "
        "details say why. On vLLM: 1 + the change of vllm:spec_decode_num_accepted_tokens_total "
        "over the change of vllm:spec_decode_num_drafts_total during the level, every engine "
        "summed, as vLLM derives its 'Mean acceptance length' (v1/spec_decode/metrics.py "
        "~107-118)."
    ),
    "spec_accept_rate": (
        "Sum of meta_info spec_num_correct_drafts over sum of spec_num_proposed_drafts, over "
        "the level's requests: SGLang's per-request spec_accept_rate (accepted drafts over "
        "verify steps x (speculative_num_draft_tokens - 1), the bonus token not counted; "
        "tokenizer_manager.py ~3155-3164) pooled, as the Decode log line's accept rate pools it. "
        "On vLLM: accepted tokens over draft tokens during the level, from its counters."
    ),
    "spec_position_acceptance": (
        "vLLM only: per draft position, the share of the level's drafts whose token at that "
        "position was accepted (vllm:spec_decode_num_accepted_tokens_per_pos_total over drafts, "
        "as vLLM's 'Per-position acceptance rate')."
    ),
    "spec_correct_drafts_histogram": (
        "Entry k: verify steps that accepted exactly k draft tokens (the bonus token not "
        "counted), SGLang's meta_info spec_correct_drafts_histogram (srt/managers/"
        "schedule_batch.py ~1566-1572, tokenizer_manager.py ~3194-3201) added up over the "
        "level's requests."
    ),
    "warm_cache": (
        "true when the /flush_cache before the level failed on the server or the baseline "
        "(on vLLM: its prefix cache could not be reset, POST /reset_prefix_cache being a dev-mode "
        "route): that level ran on whatever the prefix cache held (details say why)."
    ),
    "tokens_per_s": "Completion tokens of the level's answered requests over its wall time.",
    "domains": (
        "Each --domain prompt file measured on its own, at one concurrency (the lowest level, or "
        "--slice-concurrency), through the level procedure on the server and the baseline: "
        "acceptance varies by domain (speculators PR #610), and a mixed level hides it."
    ),
    "lengths": (
        "The prompts of every file, bucketed by their token count between --length-buckets "
        "edges, each bucket measured on its own as a domain is (only when the prompts span two "
        "buckets or more): the accept length falls with the prompt's length (speculators PR "
        "#684). slices_left_out names buckets with fewer prompts than the concurrency."
    ),
    "speedup": "tokens_per_s over baseline_tokens_per_s at the same level.",
    "latency_p50_s": "Per-request latency, nearest-rank percentile (so is latency_p95_s).",
    "procedure": (
        "Per level and server: --warmup requests on prompts not measured, then POST "
        "/flush_cache?timeout=S, then the measured prompts, then /server_info; the order of "
        "SGLang's bench_serving, which also warms up at the measured concurrency "
        "(benchmark/serving.py ~1487-1523, ~1641-1660). SpecForge's "
        "benchmark flushes before its warm-up instead (benchmarks/sglang.py ~152-167), which "
        "leaves the warm-up in the server's cumulative count."
    ),
}
"""eval.json's `definitions`: a figure's key, and what it is."""
