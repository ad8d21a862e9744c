"""Keeping the cyclic garbage collector off the objects a datasets tracker keeps for its life.

A tracker of 5,000 datasets holds some 200,000 objects (each dataset's paths, offsets, counters
and rate history), made by its first scan and kept until the pipeline changes. Every full
collection walked them all, holding the GIL for 0.15 s of CPU while collecting nothing, and a
ping waited that long (bench_daemon). They are moved out of the collector's reach once, after
the tracker's first scan: a full collection then walks only what was made since.
"""

from __future__ import annotations

import gc
import weakref

FREEZE_FROM_DATASETS = 1000
"""Below this many datasets a full collection is short enough: nothing is frozen."""


class LongLived:
    """Freezes what is alive once per large tracker (`gc.freeze`), after a full collection.

    A frozen object is still freed as soon as nothing refers to it; only a reference cycle that
    was alive at the freeze and dies later is never collected. The freeze happens once per
    tracker (a new pipeline from a console), so that costs at most what was alive then.
    """

    def __init__(self, from_datasets: int = FREEZE_FROM_DATASETS) -> None:
        self.from_datasets = from_datasets
        self._frozen_for: weakref.ref[object] | None = None

    def settle(self, tracker: object, datasets: int) -> bool:
        """Freeze what is alive after `tracker` scanned `datasets`; whether it froze.

        Not for a tracker too small to need it, nor twice for one tracker.
        """
        if datasets < self.from_datasets:
            return False
        if self._frozen_for is not None and self._frozen_for() is tracker:
            return False
        gc.collect()
        gc.freeze()
        self._frozen_for = weakref.ref(tracker)
        return True
