"""`python -m agent.pipeline.drafter_check`: one JSON report of a drafter checkpoint on stdout.

Exit 0 when no field failed, 1 when one did (the report says which), 2 on usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agent.pipeline.drafter_check.checkpoint import read_checkpoint
from agent.pipeline.drafter_check.fields import Expected, Layers, Sources, as_report, check_fields
from agent.pipeline.drafter_check.registries import SERVERS
from agent.pipeline.drafter_check.sources import read_target, read_vocab
from agent.pipeline.exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, exit_with


def build_parser() -> argparse.ArgumentParser:
    """The command line: the checkpoint, and what it is compared with."""
    parser = argparse.ArgumentParser(prog="python -m agent.pipeline.drafter_check")
    parser.add_argument("--checkpoint", type=Path, required=True, help="the drafter's folder")
    parser.add_argument(
        "--target-config", type=Path, required=True, help="the target's config.json"
    )
    parser.add_argument("--vocab-dir", type=Path, help="the vocab job's --out folder")
    parser.add_argument("--server", choices=SERVERS, help="what will serve it")
    parser.add_argument("--trained-layers", type=_indices, help="hidden-state indices, 2,16,29")
    parser.add_argument("--trained-layers-from", default="the train job's config")
    parser.add_argument("--captured-layers", type=_indices, help="hidden-state indices")
    parser.add_argument("--captured-layers-from", default="the hidden-states job")
    parser.add_argument("--longest-record", type=int, help="the export's longest record")
    parser.add_argument("--trained-length", type=int, help="the export's max_length")
    parser.add_argument("--served-length", type=int, help="the server's context length")
    parser.add_argument("--served-length-from", default="the drafter server's command")
    return parser


def _indices(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not comma-separated layer indices") from None


def main(argv: list[str] | None = None) -> int:
    """Check, print the report; 0 when no field failed."""
    args = build_parser().parse_args(argv)
    if not args.checkpoint.exists():
        print(f"drafter_check: {args.checkpoint} does not exist", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    expected = Expected(
        args.server or "",
        Layers(args.trained_layers, args.trained_layers_from) if args.trained_layers else None,
        Layers(args.captured_layers, args.captured_layers_from) if args.captured_layers else None,
        args.longest_record, args.trained_length, args.served_length, args.served_length_from,
    )  # fmt: skip
    vocab = read_vocab(args.vocab_dir) if args.vocab_dir else None
    sources = Sources(read_target(args.target_config), vocab, expected)
    draft = read_checkpoint(args.checkpoint)
    report = as_report(draft, sources, check_fields(draft, sources))
    print(json.dumps(report))  # noqa: T201
    return EXIT_OK if report["ok"] else EXIT_FAILURE


if __name__ == "__main__":
    exit_with(main, "drafter_check")
