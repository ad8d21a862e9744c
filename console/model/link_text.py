"""Why a link is not up, in a word the user knows, and when it is tried again.

The link's detail is a whole sentence (the header has one line for it): the reason is read from
it as refused, timed out, host key, auth or unreachable, and the retry as a countdown. No Textual.
"""

from __future__ import annotations

import re

from console.link.host_connection import LinkState
from console.model.formatting import duration

REASONS = (
    ("host key", ("host key", "known_hosts", "untrusted")),
    (
        "unknown host",
        (
            "name or service not known",
            "nodename nor servname",
            "name resolution",
            "no address associated",
        ),
    ),  # fmt: skip
    ("auth", ("authentication", "permission denied", "identity")),
    ("refused", ("refused", "connect call failed")),
    ("timed out", ("no answer in", "timed out", "timeout", "did not answer")),
    ("unreachable", ("no route", "unreachable", "name or service not known", "cannot reach")),
)
"""The word for a failure, and the phrases of a link's detail that mean it (first match wins)."""


def failure_reason(state: LinkState) -> str:
    """refused, timed out, host key, auth, or the detail's first clause when it is none of them."""
    if state.status == "refused":
        return "host key"
    text = state.detail.lower()
    for reason, phrases in REASONS:
        if any(phrase in text for phrase in phrases):
            return _with_address(reason, state.detail)
    gist = state.detail.split(";", 1)[0].strip()
    return gist.rsplit(": ", 1)[-1] if gist else "no reason given"


def _with_address(reason: str, detail: str) -> str:
    """`unknown host gpu-bx` or `unreachable 10.9.9.9`: the address the link could not reach."""
    if reason not in ("unknown host", "unreachable"):
        return reason
    found = re.search(r"cannot reach (?:[^@\s]+@)?([^\s:]+)", detail)
    return f"{reason} {found.group(1)}" if found else reason


def link_text(state: LinkState, last_failure: LinkState | None, now: float) -> str:
    """The link in a few words: "up", "down (refused) · retry in 12s", "connecting (last: auth)".

    An agent that runs another config than this console's is "up · config differs".
    """
    if state.status == "up":
        up = "up · config differs" if state.config_differences else "up"
        return f"{up} · {state.detail}" if state.detail else up
    if state.status == "refused":
        return "refused (host key not trusted; pin it or fix known_hosts)"
    if state.status == "down":
        return f"down ({failure_reason(state)}) · {retry_text(state, now)}"
    last = f" (last: {failure_reason(last_failure)})" if last_failure is not None else ""
    return f"{state.status}{last}"


def retry_text(state: LinkState, now: float) -> str:
    """When the link is tried again, with the key that tries it now."""
    if state.retry_at is None:
        return "r to retry"
    wait = state.retry_at - now
    return f"retry in {duration(wait)} (r: now)" if wait >= 1 else "retrying"
