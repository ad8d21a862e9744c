"""`python -m agent.pipeline.hidden_states_check`: one JSON report of a capture's output on stdout.

Exit 0 when nothing is wrong, 1 when something is (the report says what), 2 on usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from agent.pipeline.exit_codes import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, exit_with
from agent.pipeline.hidden_states_check.samples import Problem, check_sample, sample_files

DEFAULT_SAMPLES = 16
SHORTFALL_SHARE = 0.01
"""Samples a capture may leave out (SpecForge skips a sample holding NaN) before it is a failure."""
MAX_PROBLEMS = 50


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m agent.pipeline.hidden_states_check")
    parser.add_argument("--hidden-states", type=Path, required=True, help="the capture's output")
    parser.add_argument("--trainer", choices=("specforge", "speculators"), required=True)
    parser.add_argument("--hidden-size", type=int, required=True, help="the target's hidden_size")
    parser.add_argument("--dtype", default="bfloat16", help="the target's dtype")
    parser.add_argument("--expected", type=int, help="samples expected: the records exported")
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="files opened")
    return parser


def check(args: argparse.Namespace) -> dict[str, Any]:
    """The report: counts, the files opened, and every problem found (the first MAX_PROBLEMS)."""
    files = sample_files(args.hidden_states, args.trainer)
    picked = spread(files, args.samples)
    problems: list[Problem] = []
    for path in picked:
        problems += check_sample(path, args.trainer, args.hidden_size, args.dtype)
    count_problem = _count(len(files), args.expected)
    said = [dataclasses.asdict(p) for p in problems[:MAX_PROBLEMS]]
    if count_problem:
        said.insert(
            0, {"file": str(args.hidden_states), "field": "samples", "problem": count_problem}
        )
    return {"files": len(files), "expected": args.expected, "checked": len(picked),
            "problems": said, "ok": not said}  # fmt: skip


def spread(files: list[Path], count: int) -> list[Path]:
    """`count` files evenly over the list, the first and the last among them."""
    if len(files) <= count:
        return files
    if count <= 1:
        return files[:1]
    step = (len(files) - 1) / (count - 1)
    return [files[round(i * step)] for i in range(count)]


def _count(found: int, expected: int | None) -> str:
    if found == 0:
        return "no sample file at all"
    if expected is not None and found < expected * (1 - SHORTFALL_SHARE):
        return f"{found:,} sample files for {expected:,} records exported"
    return ""


def main(argv: list[str] | None = None) -> int:
    """Check, print the report; 0 when nothing is wrong."""
    args = build_parser().parse_args(argv)
    if not args.hidden_states.is_dir():
        print(f"hidden_states_check: {args.hidden_states} is not a folder", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    report = check(args)
    print(json.dumps(report))  # noqa: T201
    return EXIT_OK if report["ok"] else EXIT_FAILURE


if __name__ == "__main__":
    exit_with(main, "hidden_states_check")
