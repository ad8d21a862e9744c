"""Counting for the vocab job from the export's records: the tokens a trainer is given, weighted.

The export's merged file (`OUT/all/ids/ids.jsonl`, `{"id": "NAME/ID", "input_ids", "loss_mask"}`)
already leaves out what `--drop` dropped and repeats each record by its dataset's `--weights`
(`NAME/ID#2`, ...); counting its loss-masked ids counts what SpecForge and speculators count
(`input_ids[loss_mask == 1]`), weights and drops applied. Only a finished export is read: its
`export_report.json` is written last. Each line is read by json.loads and checked (a line that
is not such a row is tallied, not counted; a repeated record id is counted once). numpy is
imported inside the functions.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.datasets.response_lines import MAX_LINE_BYTES
from agent.host.regular_files import open_regular
from agent.pipeline.export.report import REPORT_JSON
from agent.pipeline.export.writers import FORM_FILES, IDS_FILE, MERGED_FOLDER
from agent.pipeline.vocab.count import LineTally
from agent.pipeline.vocab.errors import VocabError, VocabUsageError
from agent.pipeline.vocab.json import read_json_object

MAX_REPORT_BYTES = 64 * 1024 * 1024
"""An export's report is a few KB per dataset."""
RERUN = "run the export to its end first, or count the runner's responses with --datasets-root"


@dataclass(slots=True)
class ExportCount:
    """What counting the export's merged records found."""

    path: Path
    applied: dict[str, Any]
    """The export's own `drop` and `weights`, as its report states them."""
    tokens_per_dataset: dict[str, int] = field(default_factory=dict)
    tally: LineTally = field(default_factory=LineTally)


def count_export(export_dir: Path, names: list[str], counts: Any) -> ExportCount:
    """Add the loss-masked ids of the export's merged records (of `names`, or all) to `counts`."""
    found = ExportCount(merged_ids_file(export_dir), _applied(export_dir))
    counter = _RowCounter(found, names, counts)
    try:
        with open_regular(found.path) as handle:
            for offset, line in _lines(handle, found.tally):
                counter.add(offset, line)
    except OSError as exc:
        raise VocabError(f"cannot read the export's records: {exc}") from None
    missing = [name for name in names if name not in found.tokens_per_dataset]
    if missing:
        raise VocabError(
            f"no records of dataset {missing[0]!r} in {found.path}: was it exported, with a "
            "weight above 0?"
        )
    if not sum(found.tokens_per_dataset.values()):
        raise VocabError(f"no loss-masked tokens in {found.path}")
    return found


def merged_ids_file(export_dir: Path) -> Path:
    """Where the export writes its merged ids rows."""
    return export_dir / MERGED_FOLDER / FORM_FILES["ids"]


def _applied(export_dir: Path) -> dict[str, Any]:
    """The drops and weights of a finished export that wrote the ids form; else a usage error."""
    report = export_dir / REPORT_JSON
    if not report.exists():
        raise VocabUsageError(
            f"no finished export in {export_dir} ({REPORT_JSON} is missing): {RERUN}"
        )
    summary = read_json_object(report, MAX_REPORT_BYTES, "an export's report", RERUN)
    formats, merged = summary.get("formats"), summary.get("merged")
    if not isinstance(formats, list) or "ids" not in formats or not isinstance(merged, dict):
        raise VocabUsageError(
            f"the export in {export_dir} wrote no {IDS_FILE} (formats {repr(formats)[:80]}): "
            "rerun it with the ids form, or count the runner's responses with --datasets-root"
        )
    return {"drop": summary.get("drop"), "weights": merged.get("weights")}


def _lines(handle: BinaryIO, tally: LineTally) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every complete line that is not blank; an overlong one tallied."""
    for item in LineBlocks(handle, 0, os.fstat(handle.fileno()).st_size):
        if isinstance(item, OverlongLine):
            tally.skip(item.offset, functools.partial(_overlong, item))
            continue
        yield from ((offset, line) for offset, line in item.lines() if line.strip())


def _overlong(line: OverlongLine) -> str:
    return f"a line of {line.size_bytes:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"


class _RowCounter:
    """Counts the rows of the datasets wanted, each record id once."""

    def __init__(self, found: ExportCount, names: list[str], counts: Any) -> None:
        self.found, self.names, self.counts = found, names, counts
        self.seen: set[str] = set()

    def add(self, offset: int, line: bytes) -> None:
        """Count one line's loss-masked ids, or tally it."""
        row = masked_ids(line)
        if isinstance(row, str):
            self.found.tally.skip(offset, functools.partial(str, row))
            return
        record_id, ids = row
        dataset = record_id.partition("/")[0]
        if self.names and dataset not in self.names:
            return
        if record_id in self.seen:
            self.found.tally.duplicates += 1
            return
        self.seen.add(record_id)
        self._count(record_id, ids)
        tokens = self.found.tokens_per_dataset
        tokens[dataset] = tokens.get(dataset, 0) + int(ids.size)

    def _count(self, record_id: str, ids: Any) -> None:
        import numpy as np

        if ids.size and int(ids.max()) >= self.counts.size:
            raise VocabError(
                f"{self.found.path}: record {record_id}: token id {int(ids.max())} is not below "
                f"the target vocab size {self.counts.size}"
            )
        np.add.at(self.counts, ids, 1)


def masked_ids(line: bytes) -> tuple[str, Any] | str:
    """(record id, its loss-masked ids as int64) of an export row, or why the line is not one."""
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        return "not an object with a string id"
    if not row["id"].partition("/")[0] or "/" not in row["id"]:
        return f"id {row['id'][:60]!r} is not NAME/ID, as the export's merged file writes it"
    ids, mask = row.get("input_ids"), row.get("loss_mask")
    if not isinstance(ids, list) or not isinstance(mask, list) or len(ids) != len(mask):
        return "input_ids and loss_mask are not two lists of one length"
    if not set(map(type, ids)) <= {int} or not set(map(type, mask)) <= {int}:
        return "input_ids or loss_mask holds something other than integers"
    return _selected(row["id"], ids, mask)


def _selected(record_id: str, ids: list[int], mask: list[int]) -> tuple[str, Any] | str:
    import numpy as np

    if not set(mask) <= {0, 1}:
        return "loss_mask holds a value other than 0 and 1"
    try:
        array = np.array(ids, dtype=np.int64)
    except OverflowError:
        return "input_ids holds an id too large for any vocabulary"
    if array.size and int(array.min()) < 0:
        return "input_ids holds a negative id"
    return record_id, array[np.array(mask, dtype=np.bool_)]
