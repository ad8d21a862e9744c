"""What an OpenAI-compatible backend's tallies mean to a person: record shares, spend, 429s.

A dataset generated through SGLang's native API has no tallies and gets no line; a hosted API's
server panel adds its rate-limit state and the spend summed over the datasets. Pure functions,
no Textual.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.protocol import ApiUsage, DatasetProgress


def record_shares_line(usage: ApiUsage | None) -> str | None:
    """Exact vs re-encoded records, the mismatch share and the cost; None when all are exact and free."""
    if usage is None or (usage.reencoded_responses == 0 and usage.cost_credits == 0):
        return None
    parts = []
    if usage.reencoded_responses:
        total = max(usage.responses, usage.reencoded_responses)
        exact = total - usage.reencoded_responses
        mismatch = usage.reencode_mismatches / usage.reencoded_responses
        parts.append(
            f"records {_share(exact, total)} exact, {_share(usage.reencoded_responses, total)} "
            f"re-encoded ({usage.reencoded_responses:,}), of which {mismatch:.1%} differ in length"
        )
    if usage.cost_credits:
        parts.append(f"cost so far {money(usage.cost_credits)}")
    return " · ".join(parts)


def hosted_lines(datasets: Iterable[DatasetProgress], now: float) -> list[str]:
    """A hosted API's rate-limit state and spend, from what its runners report per dataset."""
    usages = [d.api_usage for d in datasets if d.api_usage is not None]
    limited = sum(u.rate_limited for u in usages)
    paused = max((u.paused_until for u in usages if u.paused_until is not None), default=None)
    if paused is not None and paused > now:
        rate_line = f"rate limit: {limited:,} × 429 this run · paused for {paused - now:.0f} s more"
    else:
        rate_line = f"rate limit: {limited:,} × 429 this run · not paused"
    spend = sum(u.cost_credits for u in usages)
    paying = sum(1 for u in usages if u.cost_credits)
    return [rate_line, f"spend so far {money(spend)} over {paying} dataset(s)"]


def money(credits: float) -> str:
    """Credits (USD on OpenRouter) with cents, or more digits for the small sums of a test run."""
    return f"${credits:,.2f}" if credits >= 1 else f"${credits:.4f}"


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "—"
