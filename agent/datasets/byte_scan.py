"""Searching a block of bytes from any offset at memory speed: the C library's strspn and strstr.

A runner line is ~25 KB of digits and commas. Checking that list as JSON's grammar asks (only
digits and commas, no ",,", no leading zero) with bytes methods costs five times reading the whole
line: `bytes.find` of a two-byte needle crawls when its first byte is every sixth byte of the
text. glibc's strspn and strstr are vectorised and do the same checks about twenty times faster.
They are reached through ctypes (standard library) and only ever given the buffer of a `bytes`
object, which always ends in a NUL byte, so neither can read past it; a NUL inside the data
stops them early, which `CBytes` makes up for. Where ctypes or the C library is missing, the
bytes methods and `re` give the same answers, slower.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any


class CBytes:
    """A bytes object that strspn and strstr read from any offset, without a copy of it."""

    __slots__ = ("_address", "_nul", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._address = _ADDRESS(data)
        """Where its buffer is (0 without ctypes); `data` keeps the buffer alive."""
        self._nul: int | None = None

    def span(self, start: int, allowed: bytes) -> int:
        """How many bytes from `start` on are each one of `allowed` (which holds no NUL)."""
        if not 0 <= start <= len(self.data):  # the C library would read outside the buffer
            raise IndexError(f"offset {start} outside {len(self.data)} bytes")
        if self._address:
            return _STRSPN(self._address + start, allowed)  # type: ignore[no-any-return]
        return _py_span_at(self.data, start, allowed)

    def find(self, needle: bytes, start: int = 0) -> int:
        """Where the first `needle` (which holds no NUL) at or after `start` is, else -1."""
        if not 0 <= start <= len(self.data):  # the C library would read outside the buffer
            raise IndexError(f"offset {start} outside {len(self.data)} bytes")
        if not self._address:
            return self.data.find(needle, start)
        while True:
            hit = _STRSTR(self._address + start, needle)
            if hit is not None:
                return int(hit) - self._address
            start = self._nul_after(start)  # strstr stops at a NUL: search on after it
            if start < 0:
                return -1

    def _nul_after(self, start: int) -> int:
        """Just past the first NUL byte at or after `start` (not the terminator), else -1."""
        if self._nul is None:
            self._nul = self.data.find(b"\0")
        if self._nul < 0:
            return -1
        nul = self.data.find(b"\0", start)
        return -1 if nul < 0 else nul + 1


def _py_span_at(data: bytes, start: int, allowed: bytes) -> int:
    found = _run_of(allowed).match(data, start)
    return found.end() - start if found is not None else 0


@lru_cache(maxsize=16)
def _run_of(allowed: bytes) -> re.Pattern[bytes]:
    return re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in allowed) + b"]*")


def _no_address(data: bytes) -> int:
    return 0


def _libc() -> tuple[Any, Any]:
    """The C library's strspn and strstr, each given an address in a `bytes` object's buffer."""
    try:
        import ctypes

        libc: Any = ctypes.CDLL(None)  # its own handle: argtypes set here change no other module's
        strspn, strstr = libc.strspn, libc.strstr
    except (ImportError, OSError, AttributeError):
        return None, None
    strspn.restype, strspn.argtypes = ctypes.c_size_t, (ctypes.c_void_p, ctypes.c_char_p)
    strstr.restype, strstr.argtypes = ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_char_p)
    return strspn, strstr


def _address_of(data: bytes) -> int:
    """The address of a bytes object's buffer (which `data` keeps alive), or 0 without ctypes.

    A c_char_p made from a bytes object points into it; its value is read as a c_void_p.
    """
    import ctypes

    return ctypes.c_void_p.from_buffer(ctypes.c_char_p(data)).value or 0


_STRSPN, _STRSTR = _libc()
_ADDRESS: Callable[[bytes], int] = _address_of if _STRSPN is not None else _no_address
