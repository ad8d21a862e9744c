"""Kept scans in the agent's state folder (`scans/`, beside the history), written by a thread.

The tracker hands a record over and goes on: `save` does no I/O and never waits, and only the
newest record of each followed file waits here, so what waits is bounded by the files followed.
A record is written whole to a temporary file and renamed over the old one: a reader finds the
old record or the new, never half of one. A record that cannot be used (damaged, from another
version, a link, too big) costs one log line and a rescan of its file, never a traceback; one
that cannot be written (a full disk) is told to the state folder's health (a `state_full`
alert), and the watch goes on.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from agent.datasets.kept_scan import KeptScan, KeptScanError, counting_code
from agent.state.health import StateHealth
from agent.state.private_files import open_private, unsafe
from agent.watch.scan_record import MAX_RECORD_BYTES, decode, encode

log = logging.getLogger(__name__)

SUFFIX = ".scan"
CLOSE_WITHIN_S = 3.0
"""At the daemon's stop, what waits is written within this, or left (its files are read again)."""
STALE_AFTER_S = 30 * 86400.0
"""A record neither written nor read for this long (its dataset gone) is removed when the
writer starts."""
LEFTOVER_AFTER_S = 60.0


class ScanStore:
    """The kept scans of the followed files: read by the tracker, written by one thread."""

    def __init__(self, folder: Path, health: StateHealth | None = None) -> None:
        self.folder = folder
        self._health = health
        """Told of each write that failed and of the next that did not (the state_full alert)."""
        self._pending: dict[str, KeptScan] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._failing = False
        self._busy = False
        self._on_disk: set[str] | None = None
        """The names of the records in the folder, listed once: most files have none to open."""

    def load(self, path: str) -> KeptScan | None:
        """The newest record kept for the followed file `path`, or None (then it is read from 0)."""
        with self._wake:
            waiting = self._pending.get(path)
        if waiting is not None:
            return replace(waiting, ids=set(waiting.ids))  # the caller takes ownership of its ids
        file = self.file_of(path)
        if file.name not in self._records():
            return None
        try:
            kept = decode(self._read(file), counting_code())
        except FileNotFoundError:
            return None
        except (OSError, KeptScanError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            log.warning("the kept scan of %s cannot be used (%s); it is read from byte 0", path,
                        reason)  # fmt: skip
            return None
        if kept.path != path:
            log.warning("the kept scan of %s was kept for %s; it is read from byte 0", path,
                        kept.path)  # fmt: skip
            return None
        return kept

    def save(self, kept: KeptScan) -> None:
        """Hand a record to the writer; returns at once (a newer record of the file replaces it)."""
        with self._wake:
            if self._closed:
                return
            self._pending[kept.path] = kept
            self._wake.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="scan-store", daemon=True)
                self._thread.start()

    def written(self, timeout_s: float) -> bool:
        """Wait until nothing waits to be written, `timeout_s` at most (for tests and benchmarks)."""
        deadline = time.monotonic() + timeout_s
        with self._wake:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.wait(left)
        return True

    def close(self, within_s: float = CLOSE_WITHIN_S) -> None:
        """Write what waits, within `within_s`; later records are not taken."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(within_s)

    def _records(self) -> set[str]:
        if self._on_disk is None:
            try:
                self._on_disk = {name for name in os.listdir(self.folder) if name.endswith(SUFFIX)}
            except OSError:
                self._on_disk = set()
        return self._on_disk

    def file_of(self, path: str) -> Path:
        """Where the record of the followed file `path` is kept."""
        name = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
        return self.folder / f"{name}{SUFFIX}"

    def _run(self) -> None:
        self._forget_stale()
        while True:
            with self._wake:
                self._busy = False
                self._wake.notify_all()
                while not self._pending and not self._closed:
                    self._wake.wait()
                if not self._pending:
                    return
                _, kept = self._pending.popitem()
                self._busy = True
            self._write(kept)

    def _write(self, kept: KeptScan) -> None:
        try:
            data = encode(kept, counting_code())
        except (TypeError, ValueError) as exc:  # a count this format cannot hold: not kept
            log.warning("the scan of %s cannot be kept: %s", kept.path, exc)
            return
        if len(data) > MAX_RECORD_BYTES:
            log.warning("the scan of %s is not kept: %s bytes, more than %s", kept.path,
                        f"{len(data):,}", f"{MAX_RECORD_BYTES:,}")  # fmt: skip
            return
        try:
            self._replace(self.file_of(kept.path), data)
        except OSError as exc:
            if not self._failing:
                log.warning("keeping the scan of %s failed: %s", kept.path, exc)
            self._failing = True
            if self._health is not None:
                self._health.failed(exc)
        else:
            self._failing = False
            self._records().add(self.file_of(kept.path).name)
            if self._health is not None:
                self._health.wrote(self.folder)

    def _replace(self, target: Path, data: bytes) -> None:
        """Write `data` to a temporary file and rename it over `target` (OSError names target)."""
        try:
            self._make_folder()
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(target)) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)  # no fsync: a record a crash damaged is refused by its digest
            os.replace(tmp, target)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise OSError(exc.errno, exc.strerror, str(target)) from None

    def _make_folder(self) -> None:
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.folder, 0o700)
        mode = os.lstat(self.folder).st_mode
        if not stat.S_ISDIR(mode):
            raise unsafe(self.folder, "is not a folder")

    def _read(self, file: Path) -> bytes:
        fd = open_private(file, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
            with contextlib.suppress(OSError):
                os.utime(handle.fileno())  # used: not stale, however long its file has been still
        if len(data) > MAX_RECORD_BYTES:
            raise KeptScanError(f"it is longer than {MAX_RECORD_BYTES:,} bytes")
        return data

    def _forget_stale(self) -> None:
        """Remove records not written for STALE_AFTER_S, and temporary files a crash left."""
        now = time.time()
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return
        for entry in entries:
            stale = entry.name.endswith(SUFFIX) and now - _mtime(entry) > STALE_AFTER_S
            leftover = entry.name.endswith(".tmp") and now - _mtime(entry) > LEFTOVER_AFTER_S
            if stale or leftover:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return time.time()
