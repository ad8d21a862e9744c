"""The vocab job's .pt files, written by torch.save in a process started before the counting.

torch's import alone takes about as long as counting 80M tokens. Started first, a helper process
imports it on another core while this one counts; once the mapping is chosen it loads the .npy
files this process wrote and saves the .pt files with torch itself, so their format is always
the installed torch's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import TracebackType

SAVE_TIMEOUT_S = 600.0
"""torch's import on a loaded box plus two saves: far less; past it the job fails, saying so."""
SAVER = """
import json, sys
import numpy as np
try:
    import torch
except Exception as exc:
    sys.exit(f"torch cannot be imported ({exc}): the .pt files need it (pip install torch)")
line = sys.stdin.readline()
if not line:
    sys.exit(0)
job = json.loads(line)
out = job["out"]
d2t, t2d = (torch.from_numpy(np.load(f"{out}/{name}.npy")) for name in ("d2t", "t2d"))
torch.save({"d2t": d2t, "t2d": t2d}, f"{out}/vocab_mapping.pt")
with np.load(job["frequencies"]) as freq:
    torch.save(dict(zip(freq["ids"].tolist(), freq["counts"].tolist())), f"{out}/token_freq.pt")
"""


class TorchSaverError(Exception):
    """The helper could not write the .pt files; the message says why."""


class TorchSaver:
    """A helper process importing torch from the start; `save` hands it the files to write."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", SAVER], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    def save(self, out: Path, frequencies: Path) -> None:
        """Write vocab_mapping.pt (from out/d2t.npy, t2d.npy) and token_freq.pt; wait for both."""
        job = json.dumps({"out": str(out), "frequencies": str(frequencies)}) + "\n"
        try:
            _, err = self._process.communicate(job, timeout=SAVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise TorchSaverError(
                f"torch.save did not finish within {SAVE_TIMEOUT_S:g} s"
            ) from None
        if self._process.returncode != 0:
            said = (err or "").strip().splitlines()
            raise TorchSaverError(said[-1] if said else f"exit {self._process.returncode}")

    def __enter__(self) -> TorchSaver:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process.poll() is None:  # not asked to save: the job failed before
            self._process.kill()
            self._process.wait()
        for stream in (self._process.stdin, self._process.stderr):
            if stream is not None:
                stream.close()
