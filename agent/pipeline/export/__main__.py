"""`python -m agent.pipeline.export --datasets-root DIR --tokenizer PATH --out DIR [...]`."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from agent.pipeline.exit_codes import exit_with
from agent.pipeline.export.dataset import ExportError
from agent.pipeline.export.exclusions import DEFAULT_NGRAM, NGRAM_RANGE
from agent.pipeline.export.held_out import HELD_OUT_SHARE
from agent.pipeline.export.quality import DROP_POLICIES
from agent.pipeline.export.run import ExportOptions, UsageError, export, progress
from agent.pipeline.export.turn_records import LOSS_TURNS
from agent.pipeline.tokenizer import add_trust_remote_code_flag

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
FORMATS = ("ids", "conversations")


def build_parser() -> argparse.ArgumentParser:
    """The command line scripts rely on (its names are fixed), and the export's own options."""
    parser = argparse.ArgumentParser(
        prog="python -m agent.pipeline.export",
        description="SpecForge conversations and pre-tokenized ids from prompts + responses, "
        "with a round-trip check of the chat template and a quality report.",
    )
    add = parser.add_argument
    add("--datasets-root", type=Path, required=True)
    add("--datasets", nargs="+", default=[], metavar="NAME", help="default: every dataset")
    add("--tokenizer", required=True, help="the target's tokenizer folder (as the runner used)")
    add_trust_remote_code_flag(parser)
    add("--out", type=Path, required=True, help="OUT/NAME/ per dataset, OUT/all/ merged")
    add("--drop", default="", help=f"leave out answers that are any of: {','.join(DROP_POLICIES)}")
    add("--weights", default="", help="NAME=W,... : each record W times in OUT/all (default 1)")
    add(
        "--formats", default=None,
        help="ids, conversations or both (default: both with --chat-template, else ids)",
    )  # fmt: skip
    add(
        "--chat-template", default=None, metavar="NAME",
        help="SpecForge's chat template the conversation form is rendered and checked with "
        "(e.g. qwen, lfm, llama3, qwen3-thinking); without it only ids.jsonl is written",
    )  # fmt: skip
    add(
        "--max-length", type=int, default=2048,
        help="the trainer's max_length (SpecForge's default 2,048): longer records are reported",
    )  # fmt: skip
    add("--model", default=None, help="the target model's folder, for the trainer configs "
        "(default: --tokenizer)")  # fmt: skip
    add(
        "--min-roundtrip-share",
        type=float,
        default=0.99,
        help="below this share of conversations that reproduce the tokens, the export fails loudly",
    )
    add("--held-out-share", type=float, default=HELD_OUT_SHARE, metavar="S",
        help="the share of each dataset's prompts kept out of training for the evaluation, in "
             "OUT/held_out/NAME.jsonl, by the hash of their ids (default 0.01; 0: none; none "
             "under 100 prompts)")  # fmt: skip
    add("--exclude", type=Path, nargs="+", action="extend", default=[], metavar="FILE",
        help="evaluation prompts files (the evaluation job's --prompts): a training record whose "
             "prompt shares --ngram words in a row with one of their prompts is left out, counted "
             "under the file's name in quality.json")  # fmt: skip
    add("--ngram", type=int, default=DEFAULT_NGRAM, metavar="N",
        help=f"words in a row that make a prompt contaminated (default {DEFAULT_NGRAM}; an "
             f"evaluation prompt of fewer words matches only the same words whole)")  # fmt: skip
    add("--loss-turns", choices=LOSS_TURNS, default="all",
        help="a conversation regenerated turn by turn trains on every answer (all) or on the last "
             "only (last: SpecForge's train_only_last_turn)")  # fmt: skip
    add("--prompts-file", default="prompts.jsonl")
    add("--responses-file", default="raw_responses.jsonl")
    return parser


def options_from(args: argparse.Namespace) -> ExportOptions:
    """The options the flags describe; UsageError naming the flag when one is wrong."""
    return ExportOptions(
        datasets_root=args.datasets_root, tokenizer=args.tokenizer, out=args.out,
        datasets=tuple(n.strip() for item in args.datasets for n in item.split(",") if n.strip()),
        trust_remote_code=args.trust_remote_code,
        formats=_formats(args.formats, args.chat_template),
        chat_template=args.chat_template, max_length=_max_length(args.max_length),
        model=args.model,
        drop=_names("--drop", args.drop, DROP_POLICIES), weights=_weights(args.weights),
        min_roundtrip_share=_share(args.min_roundtrip_share),
        prompts_file=args.prompts_file, responses_file=args.responses_file,
        held_out_share=_held_out(args.held_out_share),
        exclude=tuple(args.exclude), ngram=_ngram(args.ngram), loss_turns=args.loss_turns,
    )  # fmt: skip


def _ngram(value: int) -> int:
    low, high = NGRAM_RANGE
    if not low <= value <= high:
        raise UsageError(f"--ngram {value} must be from {low} to {high} words")
    return value


def _held_out(value: float) -> float:
    if not 0.0 <= value <= 0.5:
        raise UsageError(f"--held-out-share {value:g} must be between 0 and 0.5")
    return value


def _names(flag: str, text: str, known: tuple[str, ...]) -> frozenset[str]:
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(names - set(known))
    if unknown:
        raise UsageError(f"{flag} {unknown[0]!r} is not one of {', '.join(known)}")
    return names


def _formats(text: str | None, chat_template: str | None) -> frozenset[str]:
    if text is None:
        return frozenset(FORMATS) if chat_template else frozenset({"ids"})
    formats = _names("--formats", text, FORMATS) or frozenset(FORMATS)
    if "conversations" in formats and not chat_template:
        raise UsageError(
            "--formats conversations needs --chat-template NAME: the trainer's template decides "
            "what it trains on, and the round trip checks the rows with it"
        )
    return formats


def _max_length(value: int) -> int:
    if not 1 <= value <= 10_000_000:
        raise UsageError(f"--max-length {value} must be from 1 to 10,000,000 tokens")
    return value


def _weights(text: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not name.strip() or not math.isfinite(weight) or weight < 0:
            raise UsageError(f"--weights {item!r}: give NAME=W with W a number from 0 (1 keeps it)")
        weights[name.strip()] = weight
    return weights


def _share(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"--min-roundtrip-share {value:g} must be between 0 and 1")
    return value


def main(argv: list[str] | None = None) -> int:
    """Export: 0 when clean, 1 on a failed round trip or another tokenizer's answers, 2 on usage."""
    try:
        options = options_from(build_parser().parse_args(argv))
        summary = export(options)
    except UsageError as exc:
        print(f"export: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    except (ExportError, OSError) as exc:
        print(f"export: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_FAILURE
    progress(
        f"export: {summary['tokens']:,} output tokens at {summary['tokens_per_s'] / 1e6:.2f}M "
        f"tokens/s; wrote {options.out}"
    )
    failed = False
    if summary["roundtrip"]["flagged"]:
        progress("export: ROUND TRIP FAILED for at least one dataset: see above and quality.md")
        failed = True
    if others := summary["other_tokenizer"]:
        named = ", ".join(f"{name} {count:,}" for name, count in others.items())
        progress(
            f"export: ANSWERS FROM ANOTHER TOKENIZER left out ({named}): a run with another "
            "--tokenizer or model wrote into these datasets; move its answers out, or export "
            "with its tokenizer (quality.md names the first)"
        )
        failed = True
    return EXIT_FAILURE if failed else EXIT_OK


if __name__ == "__main__":
    exit_with(main, "export")
