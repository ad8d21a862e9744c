"""`python -m agent.pipeline.vocab`: the draft vocabulary from the target model's own answers.

Counts token frequencies over the output ids of every dataset with `torch.bincount`, keeps the
K most frequent ids (ties to the lower id; padded with unseen ids in id order when fewer than K
were seen), and writes the mapping as SpecForge loads it (`vocab_mapping.pt`: `d2t` int64[K] with
`target_id = i + d2t[i]`, `t2d` bool[V]) and as speculators loads it (`d2t.npy`, `t2d.npy`), plus
`token_freq.pt` and `vocab_report.json`. CPU only: it may run while the server holds the GPUs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.datasets.glued_lines import read_line
from agent.datasets.response_lines import (
    MAX_LINE_BYTES,
    ResponseLine,
    parse_response_line,
    why_not_response,
)
from agent.datasets.root_listing import DatasetsRootError, list_datasets
from agent.host.regular_files import open_regular
from agent.pipeline.tokenizer import TokenizerError, add_trust_remote_code_flag, load_tokenizer

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
BATCH_LINES = 2048


class VocabError(Exception):
    """The mapping cannot be built; the message says which dataset and why."""


class TokenizerRefusedError(VocabError):
    """V was to come from a tokenizer that cannot be loaded as asked (a usage error, exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of DESIGN §9."""
    parser = argparse.ArgumentParser(prog="python -m agent.pipeline.vocab", description=__doc__)
    parser.add_argument("--datasets-root", type=Path, required=True)
    parser.add_argument("--datasets", help="comma-separated dataset names (default: every folder)")
    parser.add_argument(
        "--target-vocab-size", type=int, help="V; else read from --tokenizer or --model-config"
    )
    parser.add_argument("--tokenizer", help="a local tokenizer folder to read V from")
    add_trust_remote_code_flag(parser)
    parser.add_argument("--model-config", type=Path, help="a config.json to read vocab_size from")
    parser.add_argument("--draft-vocab-size", type=int, default=32000, help="K (default 32000)")
    parser.add_argument("--responses-file", default="raw_responses.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Build and write the mapping; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        vocab = target_vocab_size(args)
        if not 0 < args.draft_vocab_size <= vocab:
            raise VocabError(
                f"--draft-vocab-size {args.draft_vocab_size} must be between 1 and the target vocab size {vocab}"
            )
        folders = dataset_folders(args.datasets_root, args.datasets)
        report = build(folders, args.responses_file, vocab, args.draft_vocab_size, args.out)
    except VocabError as exc:
        print(f"vocab: {exc}", file=sys.stderr)  # noqa: T201
        usage = (
            isinstance(exc, TokenizerRefusedError) or "must be" in str(exc) or "give --" in str(exc)
        )
        return EXIT_USAGE if usage else EXIT_FAILURE
    print(f"vocab: top {report['draft_vocab_size']} ids cover {report['coverage']:.2%} of "  # noqa: T201
          f"{report['tokens']:,} output tokens; wrote {args.out}", file=sys.stderr)  # fmt: skip
    return EXIT_OK


def target_vocab_size(args: argparse.Namespace) -> int:
    """V from the flag, the tokenizer or the model config."""
    if args.target_vocab_size is not None:
        return int(args.target_vocab_size)
    if args.model_config is not None:
        try:
            return int(json.loads(args.model_config.read_text())["vocab_size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise VocabError(f"cannot read vocab_size from {args.model_config}: {exc}") from None
    if args.tokenizer is not None:
        try:
            return len(load_tokenizer(args.tokenizer, trust_remote_code=args.trust_remote_code))
        except TokenizerError as exc:
            raise TokenizerRefusedError(str(exc)) from None
    raise VocabError("give --target-vocab-size, --tokenizer or --model-config")


def dataset_folders(root: Path, names: str | None) -> list[Path]:
    """The dataset folders to count, in name order (entries the agent would skip, skipped too)."""
    try:
        listing = list_datasets(str(root))
    except DatasetsRootError as exc:
        raise VocabError(str(exc)) from None
    wanted = [name.strip() for name in (names or "").split(",") if name.strip()]
    for name, why in listing.skipped.items():
        if name in wanted:
            raise VocabError(f"dataset {root / name} {why}")
        if not wanted:
            progress(f"vocab: {root / name} {why}; skipped")
    missing = sorted(set(wanted) - set(listing.names))
    if missing:
        raise VocabError(f"no dataset {missing[0]!r} under {root}")
    return [root / name for name in listing.names if not wanted or name in wanted]


def build(
    folders: list[Path], responses_file: str, vocab: int, draft: int, out: Path
) -> dict[str, Any]:
    """Count, select, and write every output file; returns the report."""
    import torch

    counts = torch.zeros(vocab, dtype=torch.int64)
    per_dataset: dict[str, int] = {}
    tallies: dict[str, LineTally] = {}
    for folder in folders:
        tally = tallies[folder.name] = LineTally()
        per_dataset[folder.name] = count_dataset(folder, responses_file, counts, tally)
        progress(f"vocab: {folder.name}: {per_dataset[folder.name]:,} tokens counted{tally.said()}")
    d2t, t2d, selected = select(counts, draft)
    report = {
        "tokens_per_dataset": per_dataset,
        "skipped_lines_per_dataset": {name: t.skipped for name, t in tallies.items()},
        "duplicate_lines_per_dataset": {name: t.duplicates for name, t in tallies.items()},
        "tokens": int(counts.sum()),
        "distinct_ids_seen": int((counts > 0).sum()),
        "coverage": float(counts[selected].sum()) / max(1, int(counts.sum())),
        "draft_vocab_size": draft,
        "target_vocab_size": vocab,
        "built_at": time.time(),
    }
    write_outputs(out, counts, d2t, t2d, report)
    return report


def progress(line: str) -> None:
    """One progress line on stderr, where the console's log view shows it."""
    print(line, file=sys.stderr, flush=True)  # noqa: T201


@dataclass(slots=True)
class LineTally:
    """Complete lines not counted: corrupt (not a response), or repeating a record id."""

    skipped: int = 0
    duplicates: int = 0
    glued: int = 0
    """Corrupt lines holding a torn record glued to a complete one (the complete one counts)."""
    first_skipped: str = ""

    def skip(self, offset: int, reason: Callable[[], str]) -> None:
        """One corrupt line; the reason is worked out for the first only."""
        if not self.skipped:
            self.first_skipped = f"first at byte {offset:,}: {reason()}"
        self.skipped += 1

    def said(self) -> str:
        """What the progress line adds about them."""
        parts = [f"{self.skipped:,} corrupt line(s) ({self.first_skipped})"] if self.skipped else []
        parts += [f"{self.duplicates:,} repeated record id(s)"] if self.duplicates else []
        parts += [f"{self.glued:,} torn record(s) glued to a complete one"] if self.glued else []
        return f"; skipped {' and '.join(parts)}" if parts else ""


def count_dataset(folder: Path, responses_file: str, counts: Any, tally: LineTally) -> int:
    """Add the dataset's output ids to `counts` (each record id once); returns its tokens."""
    import torch

    vocab = counts.numel()
    total = 0
    path = folder / responses_file
    try:
        batches = list_batches(path, tally)
    except OSError as exc:  # a FIFO or a device in its place, or a file that cannot be read
        raise VocabError(f"{folder.name}: {exc}") from None
    for batch in batches:
        ids = torch.from_numpy(batch)
        if ids.numel() and int(ids.max()) >= vocab:
            raise VocabError(
                f"{folder.name}: token id {int(ids.max())} is not below the target vocab size {vocab}"
            )
        counts += torch.bincount(ids, minlength=vocab)
        total += ids.numel()
    if total == 0:
        raise VocabError(f"{folder.name}: no output ids in {path}")
    return total


def list_batches(path: Path, tally: LineTally) -> Iterator[Any]:
    """The batches of `_id_batches`, with the file opened (and checked) before the first one."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return iter(())
    return _id_batches(handle, tally)


def _id_batches(handle: BinaryIO, tally: LineTally) -> Iterator[Any]:
    """The output ids of the complete lines of a responses file, a few thousand lines at a time.

    A line is read by the one definition of a response line the agent and the runner use: one
    that is not a response (corrupt, too long, another record shape), or that repeats a record
    id already counted (a response written twice), is tallied for the report instead.

    The id lists are cut out of each line and parsed together by numpy (about 60M ids/s, four
    times json.loads plus a tensor built from a Python list).
    """
    import numpy as np

    with handle:
        pieces: list[bytes] = []
        seen: set[str] = set()
        for item in LineBlocks(handle, 0, os.fstat(handle.fileno()).st_size):
            if isinstance(item, OverlongLine):
                tally.skip(item.offset, functools.partial(_overlong, item))
                continue
            for offset, line in item.lines():
                _take_line(line, offset, seen, pieces, tally)
            if len(pieces) >= BATCH_LINES:
                yield np.fromstring(b",".join(pieces), dtype=np.int64, sep=",")
                pieces = []
        if pieces:
            yield np.fromstring(b",".join(pieces), dtype=np.int64, sep=",")


def _take_line(
    line: bytes, offset: int, seen: set[str], pieces: list[bytes], tally: LineTally
) -> None:
    if not line.strip():
        return
    response = parse_response_line(line)
    if response is not None:
        _keep(response, seen, pieces, tally)
        return
    glued = [parse_response_line(r.record) for r in read_line(line).responses]
    if not glued:
        tally.skip(offset, functools.partial(why_not_response, line))
        return
    tally.skip(offset, functools.partial(why_not_response, line))  # corrupt, as everywhere
    tally.glued += 1  # but a torn record glued to a complete one: the complete one counts
    for record in glued:
        if record is not None:
            _keep(record, seen, pieces, tally)


def _keep(response: ResponseLine, seen: set[str], pieces: list[bytes], tally: LineTally) -> None:
    if response.id in seen:
        tally.duplicates += 1
        return
    seen.add(response.id)
    ids = response.ids_text()
    if ids:
        pieces.append(ids)


def _overlong(line: OverlongLine) -> str:
    return f"a line of {line.size_bytes:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"


def select(counts: Any, draft: int) -> tuple[Any, Any, Any]:
    """(d2t, t2d, selected ids): the `draft` most frequent ids, ties and padding by lower id."""
    import torch

    order = torch.argsort(-counts, stable=True)  # stable: equal counts keep ascending id order
    selected = torch.sort(order[:draft]).values
    d2t = selected - torch.arange(draft, dtype=torch.int64)
    t2d = torch.zeros(counts.numel(), dtype=torch.bool)
    t2d[selected] = True
    return d2t, t2d, selected


def write_outputs(out: Path, counts: Any, d2t: Any, t2d: Any, report: dict[str, Any]) -> None:
    """SpecForge's .pt, speculators' .npy files, the frequencies ({id: count}) and the report."""
    import numpy as np
    import torch

    out.mkdir(parents=True, exist_ok=True)
    torch.save({"d2t": d2t, "t2d": t2d}, out / "vocab_mapping.pt")
    np.save(out / "d2t.npy", d2t.numpy())
    np.save(out / "t2d.npy", t2d.numpy())
    seen = torch.nonzero(counts).flatten()
    frequencies = dict(zip(seen.tolist(), counts[seen].tolist(), strict=True))
    torch.save(frequencies, out / "token_freq.pt")  # speculators' {token_id: count}
    (out / "vocab_report.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
