"""`python -m agent.simulator.prepare_hidden_states`: SpecForge's capture, without a GPU.

For the demo and the tests: it reads the exported records as SpecForge 0.2.0's
`scripts/prepare_hidden_states.py` reads a preformatted dataset (`input_ids`, `loss_mask` per
line, cut at `--max-length`), and writes one file per record in that script's layout,
`{output}/rows_{g}-{g+2000}/data_{idx}.ckpt`, a torch.save'd dict of `input_ids [seq]`,
`loss_mask [seq]`, `hidden_state [1, seq, H]` and `aux_hidden_state [1, seq, 3H]` in the target's
dtype (H and the dtype from the target's config.json): the files SpecForge's offline reader and
our check open. The hidden states are random, never NaN or all zero. As SpecForge does, it skips
a record whose file exists (a run again resumes), and writes at most `--tokens-per-s` (the GPU it
does not have). SIGINT or SIGTERM ends it after the file being written: exit 130 / 143.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import torch

GROUP = 2000
"""Files per `rows_` folder (SpecForge's --file-group-size default)."""
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def main(argv: list[str] | None = None) -> int:
    """Write every record's sample; 0 when all are there, 2 on a bad argument or input."""
    args = _parser().parse_args(argv)
    try:
        hidden, dtype = _target(Path(args.target_model_path))
        records = list(_records(Path(args.data_path), args.max_length))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"prepare_hidden_states: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    written = skipped = 0
    started = time.monotonic()
    tokens = 0
    for index, (ids, mask) in enumerate(records):
        if stopping:
            _say(f"stopped by signal {stopping[0]} after {written} samples")
            return 128 + stopping[0]
        path = sample_path(Path(args.output_path), index)
        if path.exists():
            skipped += 1
            continue
        _write(path, ids, mask, hidden, dtype, index)
        written, tokens = written + 1, tokens + len(ids)
        _pace(started, tokens, args.tokens_per_s)
        if (written + skipped) % args.log_every == 0:
            _say(f"{written + skipped}/{len(records)} processed={written} skipped={skipped}")
    _say(f"done: {written} samples written, {skipped} skipped, in {args.output_path}")
    return 0


def sample_path(output: Path, index: int) -> Path:
    """`{output}/rows_{g}-{g+2000}/data_{index}.ckpt`, as SpecForge groups its files."""
    group = index // GROUP * GROUP
    return output / f"rows_{group}-{group + GROUP}" / f"data_{index}.ckpt"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent.simulator.prepare_hidden_states", description=__doc__
    )
    parser.add_argument("--target-model-path", required=True, help="a folder with config.json")
    parser.add_argument("--data-path", required=True, help="a JSONL file or a folder of them")
    parser.add_argument("--output-path", required=True)
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--tokens-per-s", type=float, default=0.0, help="0: as fast as it can")
    parser.add_argument("--log-every", type=int, default=500)
    return parser


def _target(folder: Path) -> tuple[int, torch.dtype]:
    config: dict[str, Any] = json.loads((folder / "config.json").read_text())
    text = config.get("text_config", config)
    hidden = int(text["hidden_size"])
    name = str(text.get("torch_dtype") or text.get("dtype") or "bfloat16")
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return hidden, DTYPES[name]


def _records(data: Path, max_length: int) -> Iterator[tuple[list[int], list[int]]]:
    files = sorted(data.rglob("*.jsonl")) if data.is_dir() else [data]
    for file in files:
        with file.open() as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    yield row["input_ids"][:max_length], row["loss_mask"][:max_length]


def _write(
    path: Path, ids: list[int], mask: list[int], hidden: int, dtype: torch.dtype, seed: int
) -> None:
    """One sample, written whole: to a temporary name, then renamed."""
    generator = torch.Generator().manual_seed(seed)
    seq = len(ids)
    sample = {
        "input_ids": torch.tensor(ids, dtype=torch.long),
        "loss_mask": torch.tensor(mask, dtype=torch.long),
        "hidden_state": torch.randn(1, seq, hidden, generator=generator).to(dtype),
        "aux_hidden_state": torch.randn(1, seq, 3 * hidden, generator=generator).to(dtype),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    torch.save(sample, partial)
    os.replace(partial, path)


def _pace(started: float, tokens: int, tokens_per_s: float) -> None:
    if tokens_per_s > 0:
        time.sleep(max(0.0, started + tokens / tokens_per_s - time.monotonic()))


def _say(line: str) -> None:
    print(line, flush=True)  # noqa: T201


if __name__ == "__main__":
    raise SystemExit(main())
