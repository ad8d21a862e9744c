"""Checking the id list of a response line at memory speed: the C library's strspn and strstr.

A runner line is ~25 KB of digits and commas. Checking that list is JSON's (only digits and
commas, no ",,", no leading zero) with bytes methods costs five times reading the whole line:
`bytes.find` of a two-byte needle crawls when its first byte is every sixth byte of the text.
glibc's strspn and strstr are vectorised and do the same checks about twenty times faster.
They are reached through ctypes (standard library) and only ever given `bytes` objects, whose
buffer always ends in a NUL byte; where ctypes or the C library is missing, the bytes methods
give the same answers, slower.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def only_bytes(data: bytes, allowed: bytes) -> bool:
    """True if every byte of `data` is one of `allowed` (which holds no NUL)."""
    return _SPAN(data, allowed) == len(data)


def contains(data: bytes, needle: bytes) -> bool:
    """`needle in data`, for a `data` and a `needle` without NUL bytes."""
    return _FIND(data, needle)


def _py_span(data: bytes, allowed: bytes) -> int:
    return len(data) if not data.translate(None, allowed) else -1


def _py_find(data: bytes, needle: bytes) -> bool:
    return needle in data


def _libc() -> tuple[Callable[[bytes, bytes], int], Callable[[bytes, bytes], bool]]:
    try:
        import ctypes

        libc: Any = ctypes.CDLL(None)
        strspn, strstr = libc.strspn, libc.strstr
    except (ImportError, OSError, AttributeError):
        return _py_span, _py_find
    strspn.restype, strspn.argtypes = ctypes.c_size_t, (ctypes.c_char_p, ctypes.c_char_p)
    strstr.restype, strstr.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_char_p)

    def find(data: bytes, needle: bytes) -> bool:
        if b"\0" in data:  # strstr would stop at it
            return needle in data
        return strstr(data, needle) is not None

    return strspn, find


_SPAN, _FIND = _libc()
