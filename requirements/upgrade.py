"""`make upgrade`: the newest releases into new locks, kept only if `make test-fast` passes.

The locks move on purpose, never because a release appeared: this compiles pyproject's ranges
again with `--upgrade`, prints each package that moved, reinstalls and runs `make test-fast`.
Green keeps the new locks (commit them); red puts the old ones back and reinstalls them, so the
venv is again what last passed, and says which test to read before raising a bound.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

LOCKS = (
    Path("requirements/lock.txt"),
    Path("requirements/trainers-lock.txt"),
    Path("requirements/vllm-lock.txt"),
)
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)


def pins(lock_text: str) -> dict[str, str]:
    """Each locked package's normalised name and its exact version."""
    return {
        re.sub(r"[-_.]+", "-", name).lower(): version for name, version in PIN.findall(lock_text)
    }


def moves(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per package that moved, came or went, sorted by name."""
    lines = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            lines.append(f"  + {name} {new}")
        elif new is None:
            lines.append(f"  - {name} {old}")
        else:
            lines.append(f"    {name} {old} -> {new}")
    return lines


def make(*targets: str) -> bool:
    """Run make in the repository; True when it succeeded."""
    return (
        subprocess.run(
            [os.environ.get("MAKE", "make"), "--no-print-directory", *targets]
        ).returncode
        == 0
    )


def main() -> int:
    """Upgrade, test, and keep or put back; the exit code says which."""
    saved = {path: path.read_text() for path in LOCKS}
    if not make("lock", "UPGRADE=--upgrade"):
        _put_back(saved)
        print("upgrade: the newest releases did not resolve; the locks are as they were")
        return 1
    moved = moves(_all_pins(saved.values()), _all_pins(path.read_text() for path in LOCKS))
    if not moved:
        print("upgrade: nothing newer within pyproject's ranges; the locks are as they were")
        return 0
    print("upgrade: what moved\n" + "\n".join(moved))
    if make("test-fast"):
        print(
            f"upgrade: make test-fast passed on the new locks; commit {', '.join(map(str, LOCKS))}"
        )
        return 0
    _put_back(saved)
    make("install")
    print(
        "upgrade: make test-fast failed on the new locks, so the old ones are back and installed.\n"
        "  Read the failure above; where a release breaks us, bound it in pyproject.toml with the\n"
        "  upstream reason, and run make upgrade again."
    )
    return 1


def _all_pins(lock_texts: Iterable[str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for text in lock_texts:
        merged.update(pins(text))
    return merged


def _put_back(saved: dict[Path, str]) -> None:
    for path, text in saved.items():
        path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
