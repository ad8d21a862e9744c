"""The checkout the tests run from, and copies of its agent as an older deploy would have left it."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def old_runner_copy(root: Path) -> Path:
    """The agent package as deployed earlier: same code but an older runner."""
    app = root / "app"
    shutil.copytree(REPO / "agent", app / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    with (app / "agent" / "pipeline" / "inference" / "status.py").open("a") as handle:
        handle.write("\n# the old runner, before the fix\n")
    return app
