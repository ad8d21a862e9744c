"""The vocab job's .pt files, written by torch.save in a process started before the counting.

torch's import alone takes about as long as counting 80M tokens. Started first, a helper process
imports it on another core while this one counts; once the mapping is chosen it loads the .npy
files this process wrote and saves the .pt files with torch itself, so their format is always
the installed torch's own: SpecForge's `vocab_mapping.pt`, speculators' `token_freq.pt` and
SGLang's `--speculative-token-map` file (a list of the K target ids, which its `load_token_map`
reads with `torch.load(weights_only=True)` and turns into an int64 tensor). It reads each file
back as those loaders do and fails, saying so, if one does not hold what was meant.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import TracebackType

SAVE_TIMEOUT_S = 600.0
"""torch's import on a loaded box plus three saves and their reads: far less; past it, it fails."""
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
folder, names = job["folder"], job["names"]
d2t, t2d = (torch.from_numpy(np.load(f"{folder}/{name}.npy")) for name in ("d2t", "t2d"))
hot = d2t + torch.arange(d2t.numel(), dtype=torch.int64)
torch.save({"d2t": d2t, "t2d": t2d}, f"{folder}/{names['mapping']}")
torch.save(hot.tolist(), f"{folder}/{names['token_map']}")
with np.load(job["frequencies"]) as freq:
    frequencies = dict(zip(freq["ids"].tolist(), freq["counts"].tolist()))
torch.save(frequencies, f"{folder}/{names['freq']}")
mapping = torch.load(f"{folder}/{names['mapping']}", weights_only=True)
hot_ids = torch.load(f"{folder}/{names['token_map']}", weights_only=True)
token_map = torch.tensor(hot_ids, dtype=torch.int64)  # as SGLang's load_token_map reads it
checks = {
    "d2t": mapping["d2t"].dtype == torch.int64 and mapping["d2t"].shape == (job["draft"],),
    "t2d": mapping["t2d"].dtype == torch.bool and mapping["t2d"].shape == (job["vocab"],),
    "equal": torch.equal(mapping["d2t"], d2t) and torch.equal(mapping["t2d"], t2d),
    "token map": torch.equal(token_map, hot),
}
failed = [name for name, good in checks.items() if not good]
if failed:
    sys.exit(f"the .pt files do not read back as written ({', '.join(failed)})")
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

    def save(
        self, folder: Path, frequencies: Path, names: dict[str, str], *, vocab: int, draft: int
    ) -> None:
        """Write and check the .pt files `names` names (mapping, token_map, freq); wait for both.

        They come from folder/d2t.npy, t2d.npy and the frequencies, for V = `vocab`, K = `draft`.
        """
        job = {"folder": str(folder), "frequencies": str(frequencies), "names": names,
               "vocab": vocab, "draft": draft}  # fmt: skip
        try:
            _, err = self._process.communicate(json.dumps(job) + "\n", timeout=SAVE_TIMEOUT_S)
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
