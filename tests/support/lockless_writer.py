"""An old script that appends responses with no writer lock, as a real process, for races.

It writes each record in two halves a millisecond apart (so the file mostly ends mid-line, as
a buffered writer's does) and stops when its stdin closes, saying on stdout how many records it wrote whole: those
are acknowledged. `held` keeps one descriptor open throughout (seen in /proc); otherwise each
half is a fresh open, write and close (seen only by the file growing). `pause_mid_record`
writes the first half of a record, says `half`, and waits for a line on stdin to go on; else
it says `ready` once its first record is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import json, os, sys, threading, time
path, held, pause = sys.argv[1], sys.argv[2] == "held", sys.argv[3] == "pause"
stop = threading.Event()
def line(i):
    record = {"id": f"w{i}", "output_ids": list(range(40)), "completion_tokens": 40}
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()
def write(fd, data):
    if fd is not None:
        return os.write(fd, data)
    own = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(own, data)
    finally:
        os.close(own)
fd = os.open(path, os.O_WRONLY | os.O_APPEND) if held else None
if pause:
    data = line(0)
    write(fd, data[:30])
    print("half", flush=True)
    sys.stdin.readline()
    write(fd, data[30:])
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
i = 1 if pause else 0
while not stop.is_set():
    data = line(i)
    write(fd, data[:30])
    time.sleep(0.001)
    write(fd, data[30:])
    if i == 0:
        print("ready", flush=True)
    i += 1
print(f"acked {i}", flush=True)
"""


def start_lockless_writer(
    path: Path, *, held: bool, pause_mid_record: bool = False
) -> subprocess.Popen[str]:
    """Start the writer appending to `path` (which must exist); returns once it has begun."""
    mode = ["held" if held else "reopen", "pause" if pause_mid_record else "run"]
    writer = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(path), *mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    said = writer.stdout.readline()
    if said not in ("half\n", "ready\n"):
        writer.kill()
        writer.communicate()
        raise RuntimeError(f"the lock-less writer did not start: {said!r}")
    return writer


def stop_lockless_writer(writer: subprocess.Popen[str]) -> set[str]:
    """Close its stdin, wait for it, and return the ids it acknowledged as written whole."""
    out, _ = writer.communicate(timeout=30)
    count = int(out.split("acked ")[-1])
    return {f"w{i}" for i in range(count)}


def complete_ids(path: Path) -> list[str]:
    """The ids of the complete, valid response lines in `path`, in order (repeats kept)."""
    ids = []
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            record = json.loads(raw) if raw.endswith(b"\n") else None
        except ValueError:
            continue
        if isinstance(record, dict) and "id" in record:
            ids.append(str(record["id"]))
    return ids
