"""`python -m agent.pipeline.vocab`: the draft vocabulary from the target model's own answers.

Counts token frequencies over the output ids of every dataset in numpy (`vocab_count`), keeps
the K most frequent ids (ties to the lower id; padded with unseen ids in id order when fewer than
K were seen), and writes the mapping as SpecForge loads it (`vocab_mapping.pt`: `d2t` int64[K]
with `target_id = i + d2t[i]`, `t2d` bool[V]) and as speculators loads it (`d2t.npy`,
`t2d.npy`), plus `token_freq.pt` and `vocab_report.json`. CPU only: it may run while the server
holds the GPUs. The .pt files are written by torch.save in a helper process that imports torch
while this one counts (`torch_saver`): its import alone takes as long as counting 80M tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from agent.datasets.root_listing import DatasetsRootError, list_datasets
from agent.pipeline.tokenizer import TokenizerError, add_trust_remote_code_flag, load_tokenizer
from agent.pipeline.torch_saver import TorchSaver, TorchSaverError
from agent.pipeline.vocab_count import LineTally as LineTally
from agent.pipeline.vocab_count import VocabError as VocabError
from agent.pipeline.vocab_count import count_dataset, keep_freed_memory
from agent.pipeline.vocab_count import list_batches as list_batches

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


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
    keep_freed_memory()  # this process is the job: its allocator may keep what it frees
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
    with TorchSaver() as saver:  # imports torch on another core while this one counts
        return _count_and_write(folders, responses_file, vocab, draft, out, saver)


def _count_and_write(
    folders: list[Path], responses_file: str, vocab: int, draft: int, out: Path,
    saver: TorchSaver,
) -> dict[str, Any]:  # fmt: skip
    import numpy as np

    counts = np.zeros(vocab, dtype=np.int64)
    per_dataset: dict[str, int] = {}
    tallies: dict[str, LineTally] = {}
    for folder in folders:
        tally = tallies[folder.name] = LineTally()
        per_dataset[folder.name] = count_dataset(folder, responses_file, counts, tally)
        progress(f"vocab: {folder.name}: {per_dataset[folder.name]:,} tokens counted{tally.said()}")
    d2t, t2d, selected = select(counts, draft)
    tokens = int(counts.sum())
    report = {
        "tokens_per_dataset": per_dataset,
        "skipped_lines_per_dataset": {name: t.skipped for name, t in tallies.items()},
        "duplicate_lines_per_dataset": {name: t.duplicates for name, t in tallies.items()},
        "tokens": tokens,
        "distinct_ids_seen": int(np.count_nonzero(counts)),
        "coverage": float(counts[selected].sum()) / max(1, tokens),
        "draft_vocab_size": draft,
        "target_vocab_size": vocab,
        "built_at": time.time(),
    }
    write_outputs(out, counts, d2t, t2d, report, saver)
    return report


def progress(line: str) -> None:
    """One progress line on stderr, where the console's log view shows it."""
    print(line, file=sys.stderr, flush=True)  # noqa: T201


def select(counts: Any, draft: int) -> tuple[Any, Any, Any]:
    """(d2t, t2d, selected ids): the `draft` most frequent ids, ties and padding by lower id."""
    import numpy as np

    order = np.argsort(-counts, kind="stable")  # stable: equal counts keep ascending id order
    selected = np.sort(order[:draft])
    d2t = selected - np.arange(draft, dtype=np.int64)
    t2d = np.zeros(counts.size, dtype=np.bool_)
    t2d[selected] = True
    return d2t, t2d, selected


def write_outputs(
    out: Path, counts: Any, d2t: Any, t2d: Any, report: dict[str, Any], saver: TorchSaver
) -> None:
    """Speculators' .npy files, SpecForge's .pt, the frequencies ({id: count}) and the report."""
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "d2t.npy", d2t)
    np.save(out / "t2d.npy", t2d)
    seen = np.flatnonzero(counts)
    frequencies = out / ".token_freq.npz"
    np.savez(frequencies, ids=seen, counts=counts[seen])
    try:
        saver.save(out, frequencies)  # vocab_mapping.pt and speculators' token_freq.pt
    except TorchSaverError as exc:
        raise VocabError(f"cannot write the .pt files in {out}: {exc}") from None
    finally:
        frequencies.unlink(missing_ok=True)
    (out / "vocab_report.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
