"""A server's reading is bounded whatever its metrics say, so every snapshot still fits a line.

75,000 distinct dp_rank labels in a /metrics under the probe's byte limit made as many parts:
each snapshot became a 10.5 MB line the console dropped, and the whole dashboard stopped.
"""

from __future__ import annotations

from agent.probes.bounded_stats import MAX_PART_NAME_CHARS, MAX_PARTS
from agent.probes.cache import ProbeCache
from agent.protocol import Event, PipelineConfig, ServerStats, Snapshot, encode
from tests.support.hostile_metrics import server
from tests.support.waits import until

RANKS = 5000
MANY_RANKS = (
    "".join(
        f'sglang:num_running_reqs{{dp_rank="{rank}"}} 1\nsglang:num_queue_reqs{{dp_rank="{rank}"}} 2\n'
        for rank in range(RANKS)
    )
    + f'sglang:num_running_reqs{{dp_rank="{"9" * 5000}"}} 1\n'
)  # one absurdly long rank name


async def reading(cache: ProbeCache) -> ServerStats:
    await until(lambda: cache.server, "a reading", 30)
    assert cache.server is not None
    return cache.server


async def test_a_server_with_thousands_of_ranks_shows_the_first_and_says_how_many_more() -> None:
    async with server(MANY_RANKS) as url:
        cache = ProbeCache()
        cache.refresh_if_stale(PipelineConfig(sglang_url=url))
        stats = await reading(cache)
    assert len(stats.parts) == MAX_PARTS
    assert [part.name for part in stats.parts[:3]] == ["DP0", "DP1", "DP2"]
    assert f"{RANKS + 1 - MAX_PARTS:,} more parts not shown" in stats.detail
    assert stats.running_requests == RANKS + 1, "the header still sums every rank"
    line = encode(Event("snapshot", Snapshot(1.0, "h", None, (), server=stats)))
    assert len(line) < 100_000


def test_a_part_name_past_its_length_is_cut_visibly() -> None:
    from agent.probes.bounded_stats import bounded
    from agent.protocol import ServerPart

    stats = ServerStats("http://x", True, parts=(ServerPart("w" * 10_000),))
    [part] = bounded(stats).parts
    assert len(part.name) == MAX_PART_NAME_CHARS
    assert part.name.endswith("…")
