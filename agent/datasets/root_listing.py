"""The dataset folders under a datasets root, and the entries that cannot be used, with why.

Anyone can put anything under the root: a symlink loop, a folder the agent may not enter, a
dangling link. One bad entry is skipped and named; it never hides the others or fails the
listing. Only a root that cannot be listed at all is an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


class DatasetsRootError(Exception):
    """The datasets root cannot be listed."""


@dataclass(frozen=True, slots=True)
class RootListing:
    """The usable dataset folders by name, and each skipped entry with the reason."""

    names: list[str]
    skipped: dict[str, str] = field(default_factory=dict)


def list_datasets(root: str) -> RootListing:
    """Every folder under `root` that can be entered (hidden ones left out), sorted by name."""
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        raise DatasetsRootError(f"datasets root {root} does not exist") from None
    except NotADirectoryError:
        raise DatasetsRootError(f"datasets root {root} is not a directory") from None
    except OSError as exc:
        raise DatasetsRootError(f"datasets root {root} is not readable: {exc.strerror}") from None
    names, skipped = [], {}
    for entry in entries:
        if entry.name.startswith("."):
            continue
        problem = _unusable(entry)
        if problem is None:
            names.append(entry.name)
        elif problem:
            skipped[entry.name] = problem
    return RootListing(sorted(names), dict(sorted(skipped.items())))


def _unusable(entry: os.DirEntry[str]) -> str | None:
    """None for a dataset folder, "" for an entry that is simply not one, else why it is skipped."""
    try:
        if not entry.is_dir():
            return ""  # a file, or a dangling link: not a dataset
    except OSError as exc:  # a symlink loop (ELOOP), a name too long...
        return f"cannot be followed ({exc.strerror or exc})"
    if not os.access(entry.path, os.X_OK):
        return "cannot be entered (permission denied)"
    return None
