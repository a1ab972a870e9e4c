"""Garbage-collector settings for the request phase of a large run.

A 6,000-card evaluation holds the knowledge graph and the cards (millions of long-lived
objects) while every model call allocates a few hundred short-lived ones. With CPython's
defaults the calls' garbage triggers a full collection every few hundred calls, and each
rescans the whole graph: measured on geography ``located_in_country`` at 128 calls in
flight, ~5 s of a ~25 s request phase. Freezing what exists before the calls start (it
lives to the end anyway) and collecting the young generation less often brings that under
1 s, without turning the collector off (litellm's objects do form cycles).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000
"""Allocations between young collections (CPython's default is 700)."""


@contextmanager
def long_lived_heap() -> Iterator[None]:
    """Within the block: everything allocated before it is frozen, young collections are rarer.

    Both are undone on exit (exception or not), so a caller running several jobs in one
    process (tests, ``joblib``) leaves the collector as it found it.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(YOUNG_THRESHOLD, threshold[0]), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
