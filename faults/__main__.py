"""`python -m faults`: run the campaign, print one line per scenario, write the report."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from faults.campaign import SCENARIOS, run_scenario
from faults.report import render
from faults.result import Scale, ScenarioResult, spread


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every scenario passes, 1 otherwise."""
    parser = argparse.ArgumentParser(prog="python -m faults", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="SCENARIO",
                        help=f"scenarios to run (default: all of {', '.join(SCENARIOS)})")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="the short campaign of make test")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--report", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(SCENARIOS))
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; the scenarios are {', '.join(SCENARIOS)}")
    scale = Scale(full=not args.quick)
    results = asyncio.run(_run_all(args.names or list(SCENARIOS), scale, args.seed))
    if args.report:
        command = "python -m faults" + (" --quick" if args.quick else "")
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(render(results, command, scale.full))
        print(f"report written to {args.report}")
    return 0 if all(r.passed for r in results) else 1


async def _run_all(names: list[str], scale: Scale, seed: int) -> list[ScenarioResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="eagle-faults-") as folder:
        for index, name in enumerate(names):
            result = await run_scenario(name, scale, Path(folder) / name, seed + index)
            _print_line(result)
            results.append(result)
    return results


def _print_line(result: ScenarioResult) -> None:
    verdict = "pass" if result.passed else "FAIL"
    print(
        f"{verdict} {result.name}: {result.faults} faults, {result.attempted} attempted, "
        f"{result.acknowledged} acked, lost {result.lost}, dup {result.duplicated}, corrupt "
        f"{result.corrupt}, repaired {result.repaired}, detect {spread(result.detection_s)}, "
        f"recover {spread(result.recovery_s)} ({result.wall_s:.0f} s)",
        flush=True,
    )
    for violation in result.violations:
        print(f"    violated: {violation}", file=sys.stderr, flush=True)


raise SystemExit(main())
