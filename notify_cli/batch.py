"""Garbage-collector settings for long batch runs (``notify replay``).

A replay holds the world's state (people, threads, rows: millions of long-lived objects) and
churns medium-lived ones (windows, due work, hints). With CPython's default thresholds
(700, 10, 10) that churn promotes objects into the oldest generation fast enough to start a
full collection again and again, and each one walks the whole state: measured at 17 % of a
1,000,000-event replay, growing with the log (bench/bench_replay.py, docs/replay.md).
Reference counting still frees every acyclic object at once; only cycles wait longer.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BATCH_THRESHOLDS", "batch_gc"]

#: Young generation every 100,000 allocations, the middle one every 50 young collections, a
#: full collection considered every 100 middle ones (and, as always, only when the objects
#: promoted since the last one exceed a quarter of the old ones).
BATCH_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def batch_gc() -> Iterator[None]:
    """Run the block with `BATCH_THRESHOLDS`; restore the previous thresholds after it.

    Example:
        >>> with batch_gc():
        ...     gc.get_threshold()
        (100000, 50, 100)
    """
    before = gc.get_threshold()
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
