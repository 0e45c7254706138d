"""The cyclic garbage collector paused over a block of bulk, short-lived work.

A tick of a batch makes and drops thousands of small objects. CPython's collector counts
the ones alive when a young collection happens to run as "long-lived", and when they add
up to a quarter of every object in the process it walks all of them: 0.1-0.2 s with the
project's libraries loaded, for nothing (a batch of paper episodes leaves no cyclic
garbage at all). With the collector paused for the tick, those objects die by reference
count before any collection sees them. Nothing a run computes depends on the collector,
so results are the same bits either way.

The pause is per block and bounded: what a block leaves in cycles (a planner's forks,
about 50 objects each) is collected at the first collection after it. Blocks nest and may
run in several threads (a dashboard's live run beside a forecast): the collector is
switched back on when the last one ends, and only if it was on before the first.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_on = False


class _Paused:
    """The block of :func:`paused` (a class: a generator's context manager costs three
    times as much, and an RL step enters one)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth, _was_on
        with _lock:
            if _depth == 0:
                _was_on = gc.isenabled()
                gc.disable()
            _depth += 1

    def __exit__(self, *exc: object) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_on:
                gc.enable()


_PAUSED = _Paused()


def paused() -> _Paused:
    """The cyclic collector off inside the block (reference counting still frees)."""
    return _PAUSED
