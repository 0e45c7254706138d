"""The compiled loops of :mod:`abm.kernels`, imported when first asked for.

Importing Numba costs about 0.4 s, which a run alone (a batch of one) never needs; an
``import`` statement inside a function costs about a microsecond a call, which a batch's
tick pays several times. :func:`compiled` looks a loop up once and keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_LOOPS: dict[str, Callable[..., Any]] = {}


def compiled(name: str) -> Callable[..., Any]:
    """The compiled loop ``name`` of :mod:`abm.kernels` (imported on first use)."""
    loop = _LOOPS.get(name)
    if loop is None:
        from abm import kernels

        loop = _LOOPS[name] = getattr(kernels, name)
    return loop
