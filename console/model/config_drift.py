"""A console's config beside the one its agent runs: said once, in the user's words. No Textual.

The agent keeps the config it runs; a console with another one is shown the differences (from
hello) and told how to apply its own on purpose. The lines come from the agent
(agent/protocol/config_diff.py): whoever prints them sanitises them, as all host text.
"""

from __future__ import annotations

from collections.abc import Sequence


def drift_text(host: str, differences: Sequence[str]) -> str:
    """`config differs from what kimi runs: datasets.root: /a → /b; apply with …`."""
    return (
        f"config differs from what {host} runs: {'; '.join(differences)}; "
        f"{host} keeps its own: apply yours with `eagle-console apply {host}`"
    )


def not_started_text(host: str, differences: Sequence[str]) -> str:
    """Why a verb that starts jobs refused before asking: they would run the box's config."""
    return f"{host}: nothing started: {drift_text(host, differences)}"


def apply_plan_lines(host: str, differences: Sequence[str]) -> list[str]:
    """What `eagle-console apply` is about to change on `host`: a heading, then one line each."""
    return [f"applying your config to {host} changes:"] + [f"  {line}" for line in differences]
