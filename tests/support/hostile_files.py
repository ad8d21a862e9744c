"""Things anyone can put under a datasets root, made for real: FIFOs, sockets, devices, loops.

Shared by the tests and by the hostile-files fault scenario.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

GOOD = json.dumps({"id": "ok-1", "output_ids": [1, 2, 3], "completion_tokens": 3}) + "\n"
GOOD_AFTER = json.dumps({"id": "ok-2", "output_ids": [4, 5], "completion_tokens": 2}) + "\n"

HOSTILE_LINES: tuple[tuple[str, bytes], ...] = (
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000),
    ("a deep field after good ones",
     b'{"id":"d","output_ids":[1],"completion_tokens":1,"x":' + b"[" * 50_000 + b"]" * 50_000 + b"}"),
    ("negative completion_tokens", b'{"id":"n","output_ids":[1,2],"completion_tokens":-5}'),
    ("absurd completion_tokens", b'{"id":"a","output_ids":[1],"completion_tokens":10000000000000}'),
    ("a float count", b'{"id":"f","output_ids":[1],"completion_tokens":1.5}'),
    ("a negative token id", b'{"id":"m","output_ids":[1,-2,3],"completion_tokens":3}'),
    ("output_ids a string", b'{"id":"s","output_ids":"1,2,3"}'),
    ("output_ids of strings", b'{"id":"t","output_ids":["1","2"]}'),
    ("output_ids nested", b'{"id":"u","output_ids":[[1,2]]}'),
    ("an empty element", b'{"id":"e","output_ids":[1,,2],"completion_tokens":2}'),
    ("a leading zero", b'{"id":"z","output_ids":[1,02],"completion_tokens":2}'),
    ("a 5,000-digit id", b'{"id":1' + b"0" * 5000 + b',"output_ids":[1],"completion_tokens":1}'),
    ("a 5,000-digit token id", b'{"id":"g","output_ids":[1,' + b"9" * 5000 + b"]}"),
    ("an id of 5,000 characters", b'{"id":"' + b"x" * 5000 + b'","output_ids":[1]}'),
    ("a torn line glued to the next",
     b'{"id":"p","output_ids":[1,2],"completion_tokens":2,"fin' + GOOD.strip().encode()),
    ("NUL bytes", b"\x00" * 100),
    ("not UTF-8", b'{"id":"\xff","output_ids":[1]}'),
)  # fmt: skip
"""Complete lines that are not responses, each with a word on what is wrong with it."""


def hostile_file(path: Path) -> list[int]:
    """Good lines around every hostile line; returns the byte offset of each hostile one."""
    offsets, data = [], GOOD.encode()
    for _, line in HOSTILE_LINES:
        offsets.append(len(data))
        data += (
            line
            + b"\n"
            + json.dumps({"id": f"after-{len(offsets)}", "output_ids": [7]}).encode()
            + b"\n"
        )
    path.write_bytes(data + GOOD_AFTER.encode())
    return offsets


def make_fifo(path: Path) -> Path:
    """A named pipe nobody writes: a plain open() for reading blocks on it forever."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def make_socket(path: Path) -> Path:
    """A unix socket file (the socket closed: the file stays).

    Bound under a short temp path (socket addresses hold ~107 bytes) and moved into place.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir="/tmp") as short:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(f"{short}/s")
        shutil.move(f"{short}/s", path)
    return path


def link_to_device(path: Path, device: str = "/dev/zero") -> Path:
    """A symlink to a character device that never ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(device, path)
    return path


def make_symlink_loop(root: Path, name: str = "loop") -> Path:
    """An entry that points at itself: stat() fails with ELOOP."""
    root.mkdir(parents=True, exist_ok=True)
    os.symlink(name, root / name)
    return root / name


def overlong_line(size_bytes: int) -> bytes:
    """A response-looking line of about `size_bytes` (newline not included), all token ids."""
    head, tail = b'{"id":"huge","output_ids":[', b"]}"
    return head + b"1," * max(0, (size_bytes - len(head) - len(tail)) // 2) + b"1" + tail


def no_dac_prefix() -> list[str] | None:
    """A command prefix under which root cannot read a chmod 000 folder, or None if none works.

    Non-root needs none; root drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH through setpriv.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
