"""How a dataset's last run generates, as a person reads it in the dataset's detail.

Pure functions, no Textual: the settings come from the agent's reading of runner.json.
"""

from __future__ import annotations

from agent.protocol import DatasetDetail

ORDER = ("temperature", "top_p", "top_k", "min_p", "seed", "turns", "reasoning", "template_kwargs")
NAMES = {"template_kwargs": "template"}


def generation_line(detail: DatasetDetail) -> str | None:
    """`generation: temperature 0.7 · top_p 0.8 · top_k 20 · turns all · reasoning keep`."""
    settings = detail.generation
    if not settings:
        return None
    known = [name for name in ORDER if name in settings]
    others = sorted(name for name in settings if name not in ORDER)
    said = " · ".join(f"{NAMES.get(name, name)} {settings[name]}" for name in known + others)
    return f"generation: {said}"
