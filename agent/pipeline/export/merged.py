"""`OUT/all/`: every dataset's records in one file per form, each repeated by its dataset's weight.

A weight of 2 writes each record twice, 0.5 about half of them (the same half on every rerun),
0 none; ids become `NAME/ID` (copies `NAME/ID#2`, ...) so they stay unique across datasets.
Trainers shuffle, so datasets simply follow one another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.pipeline.export.writers import (
    MERGED_FOLDER,
    OutputFile,
    copies,
    merged_ids,
    open_outputs,
    with_id,
)


class MergedOutputs:
    """The merged files, written as the datasets are exported."""

    def __init__(self, out: Path, formats: frozenset[str], weights: dict[str, float]) -> None:
        self.files: dict[str, OutputFile] = open_outputs(out / MERGED_FOLDER, formats)
        self.weights = weights
        self.records: dict[str, int] = {}

    def add(self, dataset: str, record_id: str, bodies: dict[str, bytes]) -> None:
        """A record's lines (body per form), repeated by its dataset's weight."""
        count = copies(self.weights.get(dataset, 1.0), f"{dataset}/{record_id}")
        self.records[dataset] = self.records.get(dataset, 0) + count
        for merged_id in merged_ids(dataset, record_id, count):
            for form, body in bodies.items():
                self.files[form].write(with_id(merged_id, body))

    def commit(self) -> None:
        """Put the complete files in place."""
        for output in self.files.values():
            output.commit()

    def abort(self) -> None:
        """Remove the partial files."""
        for output in self.files.values():
            output.abort()

    def summary(self) -> dict[str, Any]:
        """What quality reports say about the merged files."""
        return {
            "weights": self.weights,
            "records_per_dataset": self.records,
            "lines": {form: output.lines for form, output in self.files.items()},
        }
