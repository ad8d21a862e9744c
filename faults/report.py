"""The campaign's report in Markdown: the machine, the command, one row per scenario, the notes."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from faults.result import ScenarioResult, spread

COLUMNS = ("scenario", "faults", "attempted", "acked", "lost", "dup", "corrupt", "repaired",
           "detect p50 / max", "recover p50 / max", "pass")  # fmt: skip


def render(results: list[ScenarioResult], command: str, full: bool) -> str:
    """The whole report."""
    passed = sum(r.passed for r in results)
    lines = [
        "# Reliability report",
        "",
        f"Written by `{command}` ({'full' if full else 'short'} campaign) on "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: {passed} of {len(results)} "
        "scenarios pass.",
        "",
        *machine_lines(),
        "",
        "Counts are Jepsen's: faults injected; operations attempted and acknowledged; acknowledged "
        "operations lost, duplicated or corrupt (each must be 0); damage the system found and "
        "repaired itself. Times are p50 / max over the trials.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
        *(_row(result) for result in results),
        "",
    ]
    for result in results:
        lines += _section(result)
    return "\n".join(lines)


def machine_lines() -> list[str]:
    """What the figures were measured on."""
    cores = os.cpu_count() or 0
    return [
        f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, {_cpu_model()}, "
        f"{cores} cores, {_memory_gib()}, Python {platform.python_version()}",
        f"- Commit: {_git_commit()}; asyncssh {_version('asyncssh')}; {_openssh_version()}",
    ]


def _row(result: ScenarioResult) -> str:
    cells = (
        result.title, result.faults, result.attempted, result.acknowledged, result.lost,
        result.duplicated, result.corrupt, result.repaired, spread(result.detection_s),
        spread(result.recovery_s), "yes" if result.passed else "**NO**",
    )  # fmt: skip
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _section(result: ScenarioResult) -> list[str]:
    lines = [
        f"## {result.title}",
        "",
        f"`{result.name}`, seed {result.seed}, {result.wall_s:.0f} s.",
    ]
    lines += [f"- {note}" for note in result.notes]
    lines += [f"- **violated:** {violation}" for violation in result.violations]
    return [*lines, ""]


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "CPU unknown"
    return next(
        (line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
        "CPU unknown",
    )


def _memory_gib() -> str:
    try:
        pages, page_bytes = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return "memory unknown"
    return f"{pages * page_bytes / 2**30:.0f} GiB memory"


def _git_commit() -> str:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return found.stdout.strip()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _openssh_version() -> str:
    try:
        found = subprocess.run(["ssh", "-V"], capture_output=True, text=True, check=False)
    except OSError:
        return "OpenSSH client not installed"
    return (found.stderr or found.stdout).strip().split(",")[0]
