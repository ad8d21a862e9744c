"""The bytes of a kept scan on disk: a one-line JSON header, then the ids, one to a line.

The header names the format and the code that counted, so a record from another version of the
agent is refused, never half-read. Ids are written one to a line as they are; if one of them
holds a newline, the whole list is written as one JSON array instead. Decoding checks every
field's type, the ids' digest and that they are as many as the header says: a damaged record raises
KeptScanError with the reason, and the file it stood for is read again from byte 0.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Collection
from typing import Any

from agent.datasets.kept_scan import Count, KeptScan, KeptScanError

FORMAT = "eagle-kept-scan/1"
STEP = 20_000
"""Ids encoded at once (about a millisecond)."""
MAX_RECORD_BYTES = 512 * 1024 * 1024
"""A record at most this long is written or read (about 30 million ids)."""


def encode(kept: KeptScan, code: str) -> bytes:
    """The record's bytes; `code` names the counting code that made it."""
    payload = _id_lines(kept.ids)
    lines = payload is not None
    if payload is None:
        payload = json.dumps(list(kept.ids)).encode()
    header = {
        "format": FORMAT, "code": code, "path": kept.path, "dev": kept.dev, "ino": kept.ino,
        "offset": kept.offset, "check": kept.check, "counts": kept.counts,
        "ids_field": kept.ids_field, "ids_count": len(kept.ids),
        "ids_encoding": "lines" if lines else "json",
    }  # fmt: skip
    header["ids_digest"] = _digest(payload)
    return json.dumps(header).encode() + b"\n" + payload


def _id_lines(ids: Collection[str]) -> bytes | None:
    """The ids one to a line, or None when one of them holds a newline.

    Joined STEP at a time: the daemon's event loop may run between steps.
    """
    parts, items = [], iter(ids)
    for _ in range(0, len(ids), STEP):
        chunk = list(itertools.islice(items, STEP))
        text = "\n".join(chunk)
        if text.count("\n") != len(chunk) - 1:
            return None
        parts.append(text.encode("utf-8", "surrogatepass"))
    return b"\n".join(parts)


def decode(data: bytes, code: str) -> KeptScan:
    """The record in `data`, made by counting code `code`; KeptScanError if it is not usable."""
    head, newline, payload = data.partition(b"\n")
    if not newline:
        raise KeptScanError("it has no header line")
    try:
        header = json.loads(head)
    except (ValueError, RecursionError):
        raise KeptScanError("its header is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise KeptScanError("it is of another format")
    if header.get("code") != code:
        raise KeptScanError("it was kept by another version of the agent's counting code")
    ids_field = header.get("ids_field")
    if ids_field is not None and not isinstance(ids_field, str):
        raise KeptScanError("its ids_field is not a name")
    return KeptScan(
        _text(header, "path"), _count(header, "dev"), _count(header, "ino"),
        _count(header, "offset"), _text(header, "check"), _counts(header.get("counts")),
        ids_field, _ids(payload, header),
    )  # fmt: skip


def _ids(payload: bytes, header: dict[str, Any]) -> set[str]:
    count, encoding = _count(header, "ids_count"), header.get("ids_encoding")
    if header.get("ids_digest") != _digest(payload):
        raise KeptScanError("its ids are damaged (their digest differs)")
    try:
        text = payload.decode("utf-8", "surrogatepass")
        ids = json.loads(text) if encoding == "json" else text.split("\n") if count else []
    except (ValueError, RecursionError):
        raise KeptScanError("its ids cannot be read") from None
    if encoding not in ("lines", "json") or not isinstance(ids, list):
        raise KeptScanError("its ids are in no known form")
    found = set(ids)
    if encoding == "json" and not all(type(i) is str for i in found):
        raise KeptScanError("its ids are not all text")
    if len(ids) != count or len(found) != count:
        raise KeptScanError(f"it holds {len(ids):,} ids where its header says {count:,}")
    return found


def _digest(payload: bytes) -> str:
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def _counts(value: object) -> dict[str, Count]:
    if not isinstance(value, dict):
        raise KeptScanError("its counts are not a mapping")
    for name, count in value.items():
        ints = isinstance(count, list) and all(type(item) is int for item in count)
        if not (type(count) in (int, str) or ints):
            raise KeptScanError(f"its count {name!r} is of no known kind")
    return value


def _count(header: dict[str, Any], name: str) -> int:
    value = header.get(name)
    if type(value) is not int or value < 0:
        raise KeptScanError(f"its {name} is not a count")
    return value


def _text(header: dict[str, Any], name: str) -> str:
    value = header.get(name)
    if not isinstance(value, str):
        raise KeptScanError(f"its {name} is not text")
    return value
