"""Wire codec: encode and decode of a snapshot with eight datasets, messages per second."""

from __future__ import annotations

import time

from agent.protocol import (
    SNAPSHOT,
    DatasetProgress,
    Response,
    Snapshot,
    decode,
    encode,
    parse_result,
    to_wire,
)

ROUNDS = 5_000


def run() -> None:
    datasets = tuple(
        DatasetProgress(
            f"B{i}_set", 60_000, 2_912 * i, 10_700_000 * i, 10_000_000, tokens_per_s=2_500.0
        )
        for i in range(1, 9)
    )
    snapshot = Snapshot(1.0, "gpu-0", "/data", datasets)
    line = encode(Response(1, to_wire(snapshot)))
    start = time.perf_counter()
    for _ in range(ROUNDS):
        encode(Response(1, to_wire(snapshot)))
    encode_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(ROUNDS):
        message = decode(line)
        assert isinstance(message, Response)
        parse_result(SNAPSHOT, message)
    decode_s = time.perf_counter() - start
    print(f"snapshot line: {len(line)} bytes")
    print(f"encode: {ROUNDS / encode_s:,.0f} snapshots/s")
    print(f"decode + typed parse: {ROUNDS / decode_s:,.0f} snapshots/s")
