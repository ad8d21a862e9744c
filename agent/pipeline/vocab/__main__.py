"""`python -m agent.pipeline.vocab`: the draft vocabulary from the target model's own answers.

Counts token frequencies in numpy, from the runner's responses (the output ids of every
dataset, `count.py`) or, by choice, from the export's merged records (their loss-masked ids,
the export's drops and weights applied, `export.py`); keeps the K most frequent ids (ties to
the lower id; padded with unseen ids in id order when fewer than K were seen). V, t2d's length,
is the target model's config.json vocab_size (`target.py`), which trainers check, not the
tokenizer's length. The mapping is written as SpecForge, speculators and SGLang load it
(`outputs.py`), each file checked before it is put in place, plus `token_freq.pt` and
`vocab_report.json`. CPU only: it may run while the server holds the GPUs. The .pt files are
written by torch.save in a helper process that imports torch while this one counts
(`torch_saver`): its import alone takes as long as counting 80M tokens.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.datasets.root_listing import DatasetsRootError, list_datasets
from agent.pipeline.exit_codes import exit_with
from agent.pipeline.tokenizer import add_trust_remote_code_flag
from agent.pipeline.torch_saver import TorchSaver
from agent.pipeline.vocab.config import MAX_CONFIG_BYTES
from agent.pipeline.vocab.count import LineTally, count_dataset, keep_freed_memory
from agent.pipeline.vocab.draft_config import draft_config
from agent.pipeline.vocab.errors import VocabError, VocabUsageError
from agent.pipeline.vocab.export import count_export
from agent.pipeline.vocab.json import read_json_object
from agent.pipeline.vocab.outputs import output_names, write_outputs
from agent.pipeline.vocab.target import TargetVocab, VocabAsked, resolve_target_vocab

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
SOURCE_WORDS = {
    "responses": "output tokens of the runner's responses",
    "export": "loss-masked tokens of the export's merged records (its drops and weights applied)",
}


@dataclass(frozen=True, slots=True)
class CountingSource:
    """What is counted: the runner's responses under a datasets root, or an export's records."""

    kind: Literal["responses", "export"]
    path: Path
    names: tuple[str, ...] = ()
    responses_file: str = "raw_responses.jsonl"


def build_parser() -> argparse.ArgumentParser:
    """The command line scripts rely on (its names are fixed), with the export as a second source to count."""
    parser = argparse.ArgumentParser(prog="python -m agent.pipeline.vocab", description=__doc__)
    parser.add_argument("--datasets-root", type=Path, help="count the runner's responses here")
    parser.add_argument(
        "--export-dir", type=Path, help="count instead the loss-masked ids of this export's OUT"
    )
    parser.add_argument("--datasets", help="comma-separated dataset names (default: every one)")
    parser.add_argument(
        "--target-vocab-size", type=int, help="V; else the config.json --model-config names, or "
        "the one beside --tokenizer (a config given or found must agree with it)",
    )  # fmt: skip
    parser.add_argument(
        "--tokenizer", help="the target's local tokenizer folder (checked against V)"
    )
    add_trust_remote_code_flag(parser)
    parser.add_argument("--model-config", type=Path, help="the target model's config.json")
    parser.add_argument("--draft-vocab-size", type=int, default=32000, help="K (default 32000)")
    parser.add_argument("--responses-file", default="raw_responses.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Build and write the mapping; returns the exit code."""
    args = build_parser().parse_args(argv)
    keep_freed_memory()  # this process is the job: its allocator may keep what it frees
    try:
        source = counting_source(args)
        target = resolve_target_vocab(
            VocabAsked(args.target_vocab_size, args.model_config, args.tokenizer,
                       args.trust_remote_code)
        )  # fmt: skip
        progress(target.said())
        if not 0 < args.draft_vocab_size <= target.size:
            raise VocabUsageError(
                f"--draft-vocab-size {args.draft_vocab_size} must be between 1 and the target "
                f"vocab size {target.size}"
            )
        report = build(source, target, args.draft_vocab_size, args.out)
    except VocabError as exc:
        print(f"vocab: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE if isinstance(exc, VocabUsageError) else EXIT_FAILURE
    progress(summary_line(report, args.out))
    return EXIT_OK


def counting_source(args: argparse.Namespace) -> CountingSource:
    """The one source the command line names."""
    names = tuple(name.strip() for name in (args.datasets or "").split(",") if name.strip())
    if (args.datasets_root is None) == (args.export_dir is None):
        raise VocabUsageError(
            "give --datasets-root DIR (count the runner's responses) or --export-dir OUT (count "
            "the export's records, its drops and weights applied), one of the two"
        )
    if args.export_dir is not None:
        return CountingSource("export", args.export_dir, names)
    return CountingSource("responses", args.datasets_root, names, args.responses_file)


def summary_line(report: dict[str, Any], out: Path) -> str:
    """The job's last line: coverage, what was counted, V, where the files are."""
    return (
        f"vocab: top {report['draft_vocab_size']} ids cover {report['coverage']:.2%} of "
        f"{report['tokens']:,} {SOURCE_WORDS[report['counted_from']]}; V "
        f"{report['target_vocab_size']:,}; wrote {out}"
    )


def dataset_folders(root: Path, wanted: tuple[str, ...]) -> list[Path]:
    """The dataset folders to count, in name order (entries the agent would skip, skipped too)."""
    try:
        listing = list_datasets(str(root))
    except DatasetsRootError as exc:
        raise VocabError(str(exc)) from None
    for name, why in listing.skipped.items():
        if name in wanted:
            raise VocabError(f"dataset {root / name} {why}")
        if not wanted:
            progress(f"vocab: {root / name} {why}; skipped")
    missing = sorted(set(wanted) - set(listing.names))
    if missing:
        raise VocabError(f"no dataset {missing[0]!r} under {root}")
    return [root / name for name in listing.names if not wanted or name in wanted]


def build(source: CountingSource, target: TargetVocab, draft: int, out: Path) -> dict[str, Any]:
    """Count, select, and write every output file; returns the report."""
    import numpy as np

    with TorchSaver() as saver:  # imports torch on another core while this one counts
        counts = np.zeros(target.size, dtype=np.int64)
        counted = count(source, counts)
        d2t, t2d, selected = select(counts, draft)
        tokens = int(counts.sum())
        report = counted | {
            "tokens": tokens,
            "distinct_ids_seen": int(np.count_nonzero(counts)),
            "coverage": float(counts[selected].sum()) / max(1, tokens),
            "draft_vocab_size": draft,
            "target_vocab_size": target.size,
            "target_vocab_source": target.source,
            "tokenizer_vocab_size": target.tokenizer_size,
            "padding_ids": target.padding_ids,
            "files": output_names(draft),
            "built_at": time.time(),
        }
        arrays = {"counts": counts, "d2t": d2t, "t2d": t2d}
        write_outputs(out, arrays, report, saver, _draft_config(target, draft))
    return report


def _draft_config(target: TargetVocab, draft: int) -> dict[str, Any] | None:
    """SpecForge's draft config for this K, from the target's config.json when one was read."""
    if target.config_path is None:
        return None
    config = read_json_object(target.config_path, MAX_CONFIG_BYTES, "a model's config.json", "")
    return draft_config(config, target.size, draft)


def count(source: CountingSource, counts: Any) -> dict[str, Any]:
    """Add the source's ids to `counts`; returns what the report says about the counting."""
    if source.kind == "export":
        return _count_export(source, counts)
    return _count_responses(source, counts)


def _count_export(source: CountingSource, counts: Any) -> dict[str, Any]:
    found = count_export(source.path, list(source.names), counts)
    tokens = sum(found.tokens_per_dataset.values())
    progress(f"vocab: {found.path}: {tokens:,} loss-masked tokens counted{found.tally.said()}")
    return {
        "counted_from": "export",
        "counted_path": str(found.path),
        "export_applied": found.applied,
        "tokens_per_dataset": found.tokens_per_dataset,
        "skipped_lines": found.tally.skipped,
        "duplicate_lines": found.tally.duplicates,
    }


def _count_responses(source: CountingSource, counts: Any) -> dict[str, Any]:
    per_dataset: dict[str, int] = {}
    tallies: dict[str, LineTally] = {}
    for folder in dataset_folders(source.path, source.names):
        tally = tallies[folder.name] = LineTally()
        per_dataset[folder.name] = count_dataset(folder, source.responses_file, counts, tally)
        progress(f"vocab: {folder.name}: {per_dataset[folder.name]:,} tokens counted{tally.said()}")
    return {
        "counted_from": "responses",
        "counted_path": str(source.path),
        "tokens_per_dataset": per_dataset,
        "skipped_lines_per_dataset": {name: t.skipped for name, t in tallies.items()},
        "duplicate_lines_per_dataset": {name: t.duplicates for name, t in tallies.items()},
    }


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


if __name__ == "__main__":
    exit_with(main, "vocab")
