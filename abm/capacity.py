"""Deprecated since 0.9 (removed in 0.10): capacity is the world extension
:mod:`abm.mechanisms.capacity`."""

from __future__ import annotations

import warnings

from abm.mechanisms.capacity import CAPACITY_FIELDS, Capacity, round_half_up

__all__ = ["CAPACITY_FIELDS", "Capacity", "round_half_up"]

warnings.warn(
    "abm.capacity is deprecated: use abm.mechanisms.capacity",
    DeprecationWarning,
    stacklevel=2,
)
