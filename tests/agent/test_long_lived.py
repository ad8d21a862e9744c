"""A large tracker's objects are frozen out of the cyclic collector's reach once, after its scan."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agent.watch.long_lived import LongLived


class Tracker:
    """Stands for a datasets tracker: only its identity matters."""


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_a_large_trackers_objects_are_frozen_once() -> None:
    long_lived = LongLived(from_datasets=10)
    tracker = Tracker()
    assert long_lived.settle(tracker, 10)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    gc.unfreeze()
    assert not long_lived.settle(tracker, 10)
    assert gc.get_freeze_count() == 0


def test_a_new_tracker_is_frozen_again() -> None:
    long_lived = LongLived(from_datasets=10)
    first = Tracker()
    assert long_lived.settle(first, 10)
    del first
    gc.unfreeze()
    assert long_lived.settle(Tracker(), 10)
    assert gc.get_freeze_count() > 0


def test_a_small_tracker_is_left_to_the_collector() -> None:
    assert not LongLived(from_datasets=10).settle(Tracker(), 9)
    assert gc.get_freeze_count() == 0
