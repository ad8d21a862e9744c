"""Whole blocks read in place (`response_blocks`) say what json.loads says, line for line.

The block reader checks each id list straight from the bytes and searches a block's grammar
faults once for all its lines. Every line it takes must be one the full check takes, with the
same id, tokens and ids; what it leaves, the full check decides. Hostile lines are mixed into
blocks, so that a fault in one line meets the lists of the others.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import agent.datasets.byte_scan as byte_scan
from agent.datasets.id_lists import MAX_TOKEN_ID_DIGITS
from agent.datasets.response_blocks import scan_block
from agent.datasets.response_lines import FastLine, ResponseLine, check_record
from tests.support.response_line_strategies import any_line, dumped, hostile_lines

Read = tuple[str, int, bytes] | None


def reference(line: bytes) -> Read:
    """The definition itself: json.loads of the whole line, then the record checks."""
    try:
        record = json.loads(line.rstrip(b"\r\n").decode())
    except (ValueError, RecursionError):
        return None
    checked = check_record(record)
    if not isinstance(checked, ResponseLine):
        return None
    return checked.id, checked.tokens, ",".join(map(str, record["output_ids"])).encode()


def read_in_place(lines: list[bytes], offset: int = 1000) -> dict[int, Read | bytes]:
    """What scan_block makes of a block of these lines: by file offset, a response or bytes."""
    block = b"".join(line + b"\n" for line in lines)
    found: dict[int, Read | bytes] = {}
    for at, item in scan_block(block, offset):
        if isinstance(item, FastLine):
            found[at] = (item.id, item.tokens, item.ids_text(block))
        else:
            found[at] = item
    return found


def assert_agrees(lines: list[bytes]) -> None:
    found, at = read_in_place(lines), 1000
    for line in lines:
        item = found.pop(at, None)
        if isinstance(item, bytes):
            assert item == line  # handed over whole, for the full check
        elif item is None:
            assert not line.strip(), line  # only a blank line is left out
        else:
            assert item == reference(line), line  # taken: exactly as json.loads reads it
        at += len(line) + 1
    assert not found


@settings(max_examples=400)
@given(st.lists(any_line, max_size=12))
def test_every_line_of_a_block_reads_as_json_reads_it(lines: list[bytes]) -> None:
    assert_agrees(lines)


@settings(max_examples=200)
@given(st.lists(st.one_of(hostile_lines, dumped), min_size=1, max_size=8))
def test_the_bytes_methods_read_blocks_the_same(lines: list[bytes]) -> None:
    """Without ctypes (or the C library), the same answers come from bytes methods and re."""
    with_libc = read_in_place(lines)
    saved = byte_scan._ADDRESS
    byte_scan._ADDRESS = byte_scan._no_address
    try:
        assert read_in_place(lines) == with_libc
    finally:
        byte_scan._ADDRESS = saved


def test_a_fault_outside_any_list_takes_no_line_from_the_fast_reading() -> None:
    lines = [
        b'{"id":"a","output_ids":[1,2],"note":",,01,00"}',  # the needles, in a string
        b'{"id":"b","output_ids":[10,0,3,0],"completion_tokens":4}',
        b'{"id":"c","output_ids":[1,,2]}',  # a real fault: this line only
        b'{"id":"d","output_ids":[0,01]}',
    ]
    found = read_in_place(lines)
    taken = [item for item in found.values() if not isinstance(item, bytes)]
    assert taken == [("a", 2, b"1,2"), ("b", 4, b"10,0,3,0")]
    assert_agrees(lines)


def test_digit_runs_at_json_s_limit_across_windows() -> None:
    """4,300 digits is the longest number JSON reads; runs lie across the block's windows."""
    for pad in (0, 1, 2149, 2150, 2151, 4299):
        for run in (MAX_TOKEN_ID_DIGITS - 1, MAX_TOKEN_ID_DIGITS, MAX_TOKEN_ID_DIGITS + 1):
            ids = b"1," * pad + b"9" * run + b",5"
            lines = [b'{"id":"x","output_ids":[' + b"3," * pad + b"4]}",
                     b'{"id":"y","output_ids":[' + ids + b"]}"]  # fmt: skip
            taken = [item for item in read_in_place(lines).values() if isinstance(item, tuple)]
            expected = [("x", pad + 1), ("y", pad + 2)][: 2 if run <= MAX_TOKEN_ID_DIGITS else 1]
            assert [item[:2] for item in taken] == expected
            assert_agrees(lines)


def test_a_nul_byte_stops_no_search_short() -> None:
    """strstr stops at a NUL: the faults after one, in the same block, are still found."""
    lines = [b"\x00", b'{"id":"a","output_ids":[1,,2]}', b'{"id":"b","output_ids":[1,02]}',
             b'{"id":"c","output_ids":[1,2\x00]}', b'{"id":"d","output_ids":[3]}']  # fmt: skip
    found = read_in_place(lines)
    assert [item for item in found.values() if not isinstance(item, bytes)] == [("d", 1, b"3")]
    assert_agrees(lines)


def test_the_runners_lines_are_all_taken_in_place() -> None:
    body = {"output_ids": [0, 10, 5, 0], "completion_tokens": 4, "finish_reason": "stop",
            "meta_info": {"id": "rid", "completion_tokens": 4}}  # fmt: skip
    lines = [json.dumps({"id": f"p{i}", **body}, separators=(",", ":")).encode() for i in range(50)]
    found = read_in_place(lines)
    assert not [item for item in found.values() if isinstance(item, bytes)]
    assert_agrees(lines)


def test_a_comma_before_the_closing_brace_is_no_object() -> None:
    """`,}` after the ids made `{}` once the comma was cut off: valid, where the line is not."""
    lines = [b'{"id":"a","output_ids":[1],}', b'{"id":"b","output_ids":[1], }',
             b'{"id": "c", "output_ids": [1, 2],}', b'{"id":"d","output_ids":[1],"x":1,}']  # fmt: skip
    assert all(isinstance(item, bytes) for item in read_in_place(lines).values())
    assert_agrees(lines)
