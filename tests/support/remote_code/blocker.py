"""An environment in which one package cannot be imported, without uninstalling it.

`without_package_env` writes a `sitecustomize.py` that puts a meta-path finder in front of every
other: importing the named package raises ModuleNotFoundError, as on a box that lacks it. Python
runs sitecustomize at start-up, so the block holds in the subprocess from its first import.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.simulator_process import REPO

SITECUSTOMIZE = '''
import sys

class _Missing:
    """Finds nothing for {name!r} and says it is not installed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == {name!r} or fullname.startswith({name!r} + "."):
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        return None

sys.meta_path.insert(0, _Missing())
'''


def without_package_env(folder: Path, package: str) -> dict[str, str]:
    """The environment for a subprocess that runs this checkout but cannot import `package`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(name=package))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(REPO)]))
