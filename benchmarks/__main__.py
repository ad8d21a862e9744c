"""Run every `bench_*` module in this folder and print its figures."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from faults.report import machine_lines


def main() -> int:
    print("# eagle-console benchmarks")
    print("\n".join(machine_lines()))
    names = sys.argv[1:] or sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"\n## {name}: {module.__doc__.strip().splitlines()[0] if module.__doc__ else ''}")
        module.run()
    return 0


raise SystemExit(main())
