"""What a trainer or server would refuse in a mapping: checked before a file is put in place.

SpecForge copies `t2d` and `d2t` into buffers of bool[V] and int64[K] (V from the model's
config.json); speculators also wants `t2d.sum() == K`; SGLang maps draft ids back with
`d2t + arange(K)`, which must be target ids below V. A file that fails is never put where a trainer
looks. numpy only, imported inside the function.
"""

from __future__ import annotations

from typing import Any


def refusals(d2t: Any, t2d: Any, vocab: int, draft: int) -> list[str]:
    """Why a trainer would refuse (d2t, t2d) for V = `vocab`, K = `draft`; empty when none."""
    import numpy as np

    shapes = [
        f"{name} is {array.dtype}{list(array.shape)}, not {dtype}[{size}]"
        for name, array, dtype, size in (("t2d", t2d, "bool", vocab), ("d2t", d2t, "int64", draft))
        if array.dtype != np.dtype(dtype) or array.shape != (size,)
    ]
    if shapes:
        return shapes
    targets = d2t + np.arange(draft, dtype=np.int64)
    if draft and (int(targets.min()) < 0 or int(targets.max()) >= vocab):
        return [f"d2t maps draft ids to target ids outside 0..{vocab - 1}"]
    if not np.array_equal(np.flatnonzero(t2d), targets):
        return [f"t2d marks {int(t2d.sum()):,} ids, not the {draft:,} ids d2t maps to, in order"]
    return []
