"""Speculative decoding in the simulator: a drafter's accept length, its cost, what SGLang reports.

Paths below are under `sglang/srt/` in the sglang 0.5.23 wheel.

Each verify step ("forward") gives a request `accept_length` tokens on average: the accepted
drafts plus the bonus token. The step costs more than a plain decode step, by `step_overhead`
(the draft model's own passes), and verifies `num_draft_tokens` tokens per request out of the
engine's shared token budget. So a request alone (latency-bound) decodes about
accept_length / (1 + step_overhead) times faster, and a full batch (compute-bound) gets only
accept_length / num_draft_tokens of the plain throughput: a drafter helps at low batch and can
hurt at high batch, as on a real GPU.

What SGLang reports, copied here:
- meta_info, when a request finishes, after `e2e_latency` (managers/tokenizer_manager.py:
  2753-2756), only when `spec_verify_ct` > 0: `spec_accept_rate` = correct drafts /
  (verify_ct x (num_draft_tokens - 1)), `spec_accept_length` = completion_tokens / verify_ct,
  `spec_num_correct_drafts`, `spec_num_proposed_drafts`, `spec_verify_ct`
  (tokenizer_manager.py:3138-3172), then `spec_correct_drafts_histogram`, entry k the verify
  steps that accepted k drafts (tokenizer_manager.py:3194-3201; built per step in
  managers/schedule_batch.py:1566-1572 and scheduler_components/batch_result_processor.py:
  832-836). The prefill makes a request's first token with no verify step, so completion_tokens
  is 1 + the tokens of its verify steps, and the per-request accept length counts that token;
- the Decode log line gains `accept len: a, accept rate: b, ` before `cuda graph`
  (managers/scheduler_components/metrics_reporter.py:972-1005);
- /metrics: gauges `sglang:spec_accept_length`, `sglang:spec_accept_rate`
  (observability/metrics_collector.py:511-522), counter `sglang:spec_verify_calls_total`
  (metrics_collector.py:1865-1869, 2111-2112).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Speculation:
    """A drafter: its mean accept length and the cost of a verify step."""

    accept_length: float
    num_draft_tokens: int = 4
    step_overhead: float = 0.25
    """A verify step takes (1 + this) times a plain decode step."""
    algorithm: str = "EAGLE3"

    def __post_init__(self) -> None:
        if self.num_draft_tokens < 2:
            raise ValueError(
                f"--speculative-num-draft-tokens {self.num_draft_tokens} must be 2 or more"
            )
        if not 1.0 <= self.accept_length <= self.num_draft_tokens:
            raise ValueError(
                f"--speculative-accept-length {self.accept_length:g} must be between 1 and "
                f"--speculative-num-draft-tokens ({self.num_draft_tokens})"
            )
        if self.step_overhead < 0:
            raise ValueError(
                f"--speculative-step-overhead {self.step_overhead:g} must be 0 or more"
            )

    def steps_per_request(
        self, decode_tokens_per_s: float, per_request_cap: float, running: int
    ) -> float:
        """Verify steps per second each of `running` requests makes."""
        compute_bound = decode_tokens_per_s / (self.num_draft_tokens * running)
        latency_bound = per_request_cap / (1 + self.step_overhead)
        return min(compute_bound, latency_bound)

    def meta_info(self, completion_tokens: int, verify_steps: float = 0.0) -> dict[str, Any]:
        """The spec_* fields of a finished request's meta_info ({} when no verify step ran).

        The verify steps are SGLang's: the decode tokens (all but the prefill's) over the accept
        length, rounded, and never so few that a step would accept more than it can.
        `verify_steps`, the engine's own count, is not used: it spreads the prefill's token over
        the steps.
        """
        del verify_steps
        verify_ct = self.verify_count(completion_tokens)
        if verify_ct == 0:  # tokenizer_manager.py:3149-3153
            return {}
        correct = completion_tokens - 1 - verify_ct
        proposed = verify_ct * (self.num_draft_tokens - 1)
        return {
            "spec_accept_rate": correct / proposed,
            "spec_accept_length": completion_tokens / verify_ct,
            "spec_num_correct_drafts": correct,
            "spec_num_proposed_drafts": proposed,
            "spec_verify_ct": verify_ct,
            "spec_correct_drafts_histogram": correct_drafts_histogram(correct, verify_ct),
        }

    def verify_count(self, completion_tokens: int) -> int:
        """The verify steps of an answer of `completion_tokens`, as its meta_info counts them."""
        decode_tokens = max(0, completion_tokens - 1)
        return max(
            round(decode_tokens / self.accept_length),
            math.ceil(decode_tokens / self.num_draft_tokens),
        )

    def log_part(self, tokens: float, steps: float) -> str:
        """`accept len: a, accept rate: b, ` for a Decode line covering `steps` verify steps."""
        length = tokens / steps if steps > 0 else 0.0
        rate = (length - 1) / (self.num_draft_tokens - 1) if steps > 0 else 0.0
        return f"accept len: {length:.2f}, accept rate: {max(rate, 0.0):.2f}, "


def correct_drafts_histogram(correct: int, verify_ct: int) -> list[int]:
    """`verify_ct` steps accepting `correct` drafts in all, each floor or ceil of the mean.

    SGLang's list has one entry per accepted count from 0 to the most seen (schedule_batch.py:
    1566-1572); the two-point shape is the simulator's, the sums are SGLang's: the entries add up
    to the verify steps, and k times entry k to the accepted drafts.
    """
    low, above = divmod(correct, verify_ct)
    histogram = [0] * (low + 1)
    histogram[low] = verify_ct - above
    return histogram + [above] if above else histogram
