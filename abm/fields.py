"""Field types shared by the scenario's declarations (abm.config) and the world
extensions' settings (abm.mechanisms): strict numbers and bounded [lo, hi] pairs.

Strict leaves: no bool as a number, no "3" as 3, no 2.5 truncated to 2. Floats take ints
(1 -> 1.0, exact) so a field has one type whatever the TOML file wrote.
"""

from __future__ import annotations

import numbers
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, Strict

from abm.validation import not_allowed, number_text

__all__ = ["K_MAX", "M_MAX", "Float", "Int", "integral", "pair_range", "synthetic_only"]


def integral(value: Any) -> Any:
    """numpy integers as int (a sweep may hand them over); bools stay bools (refused)."""
    if type(value) is int:  # the common case, without the slow ABC check below
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(integral), Strict()]
Float = Annotated[float, Strict()]


def pair_range(low: float, high: float, positive_high: bool = False, note: str = "") -> Any:
    """A [lo, hi] pair with low <= lo <= hi <= high (and hi > 0 if ``positive_high``);
    ``note`` says why the bounds are what they are."""
    allowed = f"a pair [lo, hi] with {number_text(low)} <= lo <= hi <= {number_text(high)}"
    allowed += " and hi > 0" if positive_high else ""
    allowed += f" ({note})" if note else ""

    def check(value: tuple[float, float]) -> tuple[float, float]:
        lo, hi = value
        # comparisons with NaN are False, so NaN fails here too
        if not (low <= lo <= hi <= high) or (positive_high and not hi > 0):
            raise not_allowed(allowed)
        return value

    return Annotated[
        tuple[Float, Float], AfterValidator(check), Field(json_schema_extra={"allowed": allowed})
    ]


# places per tick: as many as the largest population a tick can start with (n_initial, m)
K_MAX = 10_000_000
M_MAX = 10_000_000


def synthetic_only(config: Any, used: dict[str, bool]) -> None:
    """Refuse, naming the field, a setting of ``used`` (field -> whether it is set) that
    needs the synthetic world while the scenario has a [data] table."""
    if config.data is None:
        return
    for name, on in used.items():
        if on:
            raise not_allowed(
                "its default with a [data] table (it needs the synthetic world and its rule h*)",
                field=name,
                value=getattr(config, name),
            )
