"""What a scan of one followed file has counted, kept so that a restarted agent resumes it.

A `KeptScan` is one consistent picture of a `LineFollower` taken between two updates: the file's
identity (device, inode), the offset read to (always just past a newline), a check of the bytes
before that offset, and the follower's own counts, its set of ids included (a duplicated id is
counted once across a restart only if the ids seen before it are known). It is trusted only while
the file still matches it: the same device and inode, at least `offset` bytes long, the same
first and last CHECK_BYTES before the offset. Anything else, and the file is read from byte 0 as
if nothing had been kept. This module reads the followed files and never writes them; keeping
records on disk is `agent.watch.scan_store`'s.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import BinaryIO

from agent.bundle import AGENT_PACKAGE
from agent.datasets.code_digest import code_digest
from agent.datasets.line_follower import LineFollower
from agent.host.regular_files import open_regular
from agent.protocol import AGENT_VERSION

CHECK_BYTES = 4096
"""Bytes hashed at each end of the scanned part: a file rewritten in place shows there."""
BASE_FIELDS = frozenset(f.name for f in fields(LineFollower))
"""Where a follower stands in its file; every other field of a follower is a count it keeps."""

COPY_STEP = 20_000
"""Ids copied at once (about a millisecond): the event loop's thread may run between steps."""

Count = int | str | list[int]


class KeptScanError(ValueError):
    """A kept record that cannot be used: the reason, in words."""


@dataclass(frozen=True, slots=True)
class KeptScan:
    """One followed file's scan: where it stood in which file, and what it had counted there."""

    path: str
    dev: int
    ino: int
    offset: int
    check: str
    """A digest of the first and last CHECK_BYTES before `offset` (`scanned_check`)."""
    counts: dict[str, Count]
    """The follower's count fields by name, its ids excepted."""
    ids_field: str | None
    ids: Collection[str]
    """A copy of the follower's ids (its one set field) owned by this record: a list when taken
    from a follower, a set when read back."""


def capture(follower: LineFollower) -> KeptScan | None:
    """The follower's scan now, or None when there is nothing to keep or it cannot be kept.

    Called between updates, on the thread that updates it: the copy is consistent. Reads the
    check bytes (two small reads) from the file the follower last read, or keeps nothing.
    """
    if follower.inode is None or follower.offset == 0:
        return None
    kept = _counts_of(follower)
    if kept is None:
        return None
    counts, ids_field, live_ids = kept
    try:
        with open_regular(follower.path) as handle:
            info = os.fstat(handle.fileno())
            if info.st_ino != follower.inode or info.st_size < follower.offset:
                return None  # replaced or cut since the update: the next update rescans it
            check = scanned_check(handle, follower.offset)
    except OSError:
        return None
    return KeptScan(
        str(follower.path), info.st_dev, info.st_ino, follower.offset, check, counts, ids_field,
        _copied(live_ids),
    )  # fmt: skip


def restore(follower: LineFollower, kept: KeptScan) -> str | None:
    """Put `kept` into a follower that has read nothing yet, if the file still matches it.

    Returns None when it did, else why not (the follower is left as it was: it reads from 0).
    """
    why = _fits(follower, kept) or _file_differs(follower, kept)
    if why is not None:
        return why
    for name, value in kept.counts.items():
        setattr(follower, name, list(value) if isinstance(value, list) else value)
    if kept.ids_field is not None:
        ids = kept.ids if isinstance(kept.ids, set) else set(kept.ids)
        setattr(follower, kept.ids_field, ids)
    follower.inode, follower.offset, follower.searched_to = kept.ino, kept.offset, 0
    return None


def scanned_check(handle: BinaryIO, offset: int) -> str:
    """The digest of the first and the last CHECK_BYTES before `offset` of an open file."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(offset.to_bytes(8, "big"))
    digest.update(os.pread(handle.fileno(), min(CHECK_BYTES, offset), 0))
    tail_start = max(0, offset - CHECK_BYTES)
    digest.update(os.pread(handle.fileno(), offset - tail_start, tail_start))
    return digest.hexdigest()


def _counts_of(follower: LineFollower) -> tuple[dict[str, Count], str | None, set[str]] | None:
    """The follower's counts, its ids field and its ids (not a copy), or None.

    None for a field of a kind this module cannot keep: then nothing is kept, and a restart reads
    the file again.
    """
    counts: dict[str, Count] = {}
    ids_field, ids = None, set[str]()
    for field in fields(follower):
        if field.name in BASE_FIELDS:
            continue
        value = getattr(follower, field.name)
        if isinstance(value, set) and ids_field is None:
            ids_field, ids = field.name, value
        elif isinstance(value, (int, str)) and not isinstance(value, bool):
            counts[field.name] = value
        elif isinstance(value, list) and all(type(item) is int for item in value):
            counts[field.name] = list(value)
        else:
            return None
    return counts, ids_field, ids


def _copied(ids: set[str]) -> list[str]:
    """A copy made COPY_STEP ids at a time.

    Copying a big set at once would hold the interpreter, and so the daemon's event loop, for as
    long as it takes.
    """
    copy: list[str] = []
    items = iter(ids)
    for _ in range(0, len(ids), COPY_STEP):
        copy.extend(itertools.islice(items, COPY_STEP))
    return copy


def _fits(follower: LineFollower, kept: KeptScan) -> str | None:
    """Why `kept` was not made by a follower like this one (other fields, other kinds), if so."""
    if str(follower.path) != kept.path:
        return "it was kept for another file"
    if follower.offset or follower.inode is not None:
        return "the follower has read the file already"
    own = _counts_of(follower)
    if own is None:
        return "the follower holds a count that cannot be kept"
    counts, ids_field, _ = own
    if ids_field != kept.ids_field or counts.keys() != kept.counts.keys():
        return "it was kept by another version of the agent"
    for name, value in counts.items():
        if type(value) is not type(kept.counts[name]):
            return "it was kept by another version of the agent"
    return None


def _file_differs(follower: LineFollower, kept: KeptScan) -> str | None:
    """Why the file on disk is not the one `kept` was taken from, if it is not."""
    try:
        with open_regular(follower.path) as handle:
            info = os.fstat(handle.fileno())
            if (info.st_dev, info.st_ino) != (kept.dev, kept.ino):
                return "the file was replaced (another inode)"
            if info.st_size < kept.offset:
                return f"the file was cut to {info.st_size:,} bytes, before the kept offset"
            if scanned_check(handle, kept.offset) != kept.check:
                return "the file was rewritten (its bytes before the kept offset changed)"
    except OSError as exc:
        return f"the file cannot be read ({exc.strerror or exc})"
    return None


@functools.cache
def counting_code() -> str:
    """What names the code that counts: this package's digest, taken once per process.

    A record kept by other code is not trusted, since the same bytes may now be counted otherwise.
    """
    return code_digest(str(AGENT_PACKAGE / "datasets")) or AGENT_VERSION
