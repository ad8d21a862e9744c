"""The datasets root of the hostile_files scenario: one live dataset and one of each hostile thing.

Nothing here checks anything: it builds the root, writes the live dataset from a thread, swaps
files for FIFOs and locks folders on request, and says what the agent must report for each.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from agent.datasets.file_lines import WINDOW_BYTES
from tests.support.datasets import response_line, write_prompts
from tests.support.hostile_files import (
    HOSTILE_LINES,
    hostile_file,
    link_to_device,
    make_fifo,
    make_socket,
    make_symlink_loop,
    overlong_line,
)
from tests.support.runner_files import write_id_prompts

LIVE, FIFO, LINES, SWAPPED, LOCKED = (
    "B00_live",
    "B01_fifo_responses",
    "B10_lines",
    "B11_swapped",
    "B06_locked",
)
WRITE_EVERY_S = 0.005


def expected_lines() -> tuple[int, int]:
    """(good, corrupt) lines of the B10_lines responses file."""
    return 2 + len(HOSTILE_LINES) + 1, len(HOSTILE_LINES) + 1


@dataclass
class LiveWriter:
    """Appends one response at a time to the live dataset, until stopped."""

    path: Path
    written: int = 0
    halt: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> LiveWriter:
        """Begin writing in a thread."""
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop, and wait for the last line to be written."""
        self.halt.set()
        if self.thread is not None:
            self.thread.join()

    def _write(self) -> None:
        with self.path.open("a") as handle:
            while not self.halt.wait(WRITE_EVERY_S):
                handle.write(response_line(f"p{self.written}", 1 + self.written % 50))
                handle.flush()
                self.written += 1


@dataclass
class HostileRoot:
    """The root, and what the agent must say about each entry."""

    path: Path
    expected_alerts: dict[str, tuple[str, str]] = field(default_factory=dict)
    expected_errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    writer: LiveWriter | None = None
    locked: bool = False
    live_name: str = LIVE
    fifo_name: str = FIFO
    lines_name: str = LINES

    @property
    def hostile_entries(self) -> int:
        """How many hostile entries the root holds."""
        return len(self.expected_alerts) + 3  # and the three hostile runner.json files

    @classmethod
    def build(cls, path: Path, *, locked: bool) -> HostileRoot:
        """Write every dataset; `locked` adds a folder the agent may not enter."""
        root = cls(path, locked=locked)
        write_prompts(path / LIVE, 100_000)
        (path / LIVE / "raw_responses.jsonl").touch()
        write_id_prompts(path / FIFO, 2)
        root._error(FIFO, make_fifo(path / FIFO / "raw_responses.jsonl"), "is a FIFO (named pipe)")
        root._error(
            "B02_fifo_prompts", make_fifo(path / "B02_fifo_prompts" / "prompts.jsonl"), "is a FIFO"
        )
        write_prompts(path / "B03_device", 2)
        root._error(
            "B03_device",
            link_to_device(path / "B03_device" / "raw_responses.jsonl"),
            "is a character device",
        )
        root._error("B04_socket", make_socket(path / "B04_socket" / "prompts.jsonl"), "is a socket")
        make_symlink_loop(path, "B05_loop")
        root._skip("B05_loop", "cannot be followed")
        if locked:
            write_prompts(path / LOCKED, 2)
            os.chmod(path / LOCKED, 0)
            root._skip(LOCKED, "cannot be entered")
        root._runner_jsons()
        _lines(path / LINES)
        write_prompts(path / SWAPPED, 3)
        (path / SWAPPED / "raw_responses.jsonl").write_text(response_line("p0", 4))
        return root  # fmt: skip

    def _error(self, name: str, _: Path, words: str) -> None:
        self.expected_alerts[name] = ("dataset_error", words)
        self.expected_errors.append(name)

    def _skip(self, name: str, words: str) -> None:
        self.expected_alerts[name] = ("dataset_skipped", words)
        self.skipped.append(name)

    def _runner_jsons(self) -> None:
        for name in ("B07_runner_fifo", "B08_runner_deep", "B09_runner_types"):
            write_prompts(self.path / name, 2)
        make_fifo(self.path / "B07_runner_fifo" / "runner.json")
        (self.path / "B08_runner_deep" / "runner.json").write_text("[" * 100_000 + "]" * 100_000)
        (self.path / "B09_runner_types" / "runner.json").write_text(json.dumps(
            {"state": ["running"], "pid": 10**30, "updated_at": "soon", "runner_sha256": {}}
        ))  # fmt: skip

    def start_live_writer(self) -> LiveWriter:
        """Start appending to the live dataset."""
        self.writer = LiveWriter(self.path / LIVE / "raw_responses.jsonl").start()
        return self.writer

    def stop_writing(self) -> None:
        """Stop the live writer (its count is then final)."""
        if self.writer is not None:
            self.writer.stop()

    def live_responses(self) -> int:
        """Complete lines in the live dataset's file now."""
        return (self.path / LIVE / "raw_responses.jsonl").read_bytes().count(b"\n")

    def swap_live_for_fifo(self) -> None:
        """A dataset that read fine has its file replaced by a FIFO; a folder gets locked."""
        responses = self.path / SWAPPED / "raw_responses.jsonl"
        responses.rename(responses.with_suffix(".kept"))
        make_fifo(responses)
        if self.locked:
            os.chmod(self.path / SWAPPED, 0o100)  # can be entered, not listed: still readable

    def restore_live(self) -> None:
        """Undo swap_live_for_fifo (nothing when nothing was swapped)."""
        responses = self.path / SWAPPED / "raw_responses.jsonl"
        os.chmod(self.path / SWAPPED, 0o755)
        if responses.with_suffix(".kept").exists():
            responses.unlink()
            responses.with_suffix(".kept").rename(responses)

    def unlock(self) -> None:
        """Let the cleanup remove everything."""
        if self.locked:
            os.chmod(self.path / LOCKED, 0o755)


def _lines(folder: Path) -> None:
    """Every kind of line that is not a response, and one longer than the read window."""
    folder.mkdir(parents=True)
    write_prompts(folder, 10)
    path = folder / "raw_responses.jsonl"
    hostile_file(path)
    with path.open("ab") as handle:
        handle.write(overlong_line(WINDOW_BYTES + 100) + b"\n")
        handle.write(response_line("after-huge", 3).encode())
