"""Capacity that changes over time (a world extension): the places per tick k_t and the
entrants per tick m_t.

The scenario's ``k`` and ``m`` are base values; three optional schedules multiply them
(docs/mechanisms/capacity.md):

* steps ``[[from_tick, factor], ...]``: the factor of the last step begun (1 before the
  first), e.g. ``[[40, 0.5], [60, 1.0]]`` halves k for ticks 40-59;
* season ``[amplitude, period, phase]``: ``1 + amplitude * sin(2 pi (t - phase) / period)``;
* shocks ``[probability, factor, duration]``: each tick a shock starts with the given
  probability and holds ``factor`` for ``duration`` ticks (overlapping shocks do not
  compound). The starts are drawn once, for the whole episode, from the stream
  ``"capacity"`` (two uniforms per tick: k's row, then m's), so switching shocks on
  leaves every other draw as it was, and planning forks see the shocks the real run will.

k_t = max(1, round(k * product of factors)) (a tick always has one place, so a threshold
exists), m_t = max(0, round(m * ...)); round is half up. Tick 0 admits ``n_initial``
entrants whatever m_0 is (as without a schedule).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm.fields import K_MAX, M_MAX, Float, Int
from abm.mechanisms.base import CheckSpec, Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome
from abm.validation import not_allowed

__all__ = ["CAPACITY_FIELDS", "Capacity", "CapacitySettings", "round_half_up"]

# factors on k and m
FACTOR_MAX = 1000.0
_STEPS_TEXT = (
    f"pairs [from_tick, factor], ticks >= 0 strictly increasing, factors in [0, {FACTOR_MAX:g}]"
)
_SEASON_TEXT = (
    "empty, or [amplitude, period, phase] with amplitude in [0, 1], period > 0, phase finite"
)
_SHOCKS_TEXT = (
    f"empty, or [probability, factor, duration] with probability in [0, 1], factor in "
    f"[0, {FACTOR_MAX:g}], duration an integer in [1, 1000000]"
)


class CapacitySettings(BaseModel):
    """Schedules multiplying the scenario's k and m (the module's docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    k_steps: tuple[tuple[Int, Float], ...] = Field((), json_schema_extra={"allowed": _STEPS_TEXT})
    m_steps: tuple[tuple[Int, Float], ...] = Field((), json_schema_extra={"allowed": _STEPS_TEXT})
    k_season: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SEASON_TEXT})
    m_season: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SEASON_TEXT})
    k_shocks: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SHOCKS_TEXT})
    m_shocks: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SHOCKS_TEXT})


CAPACITY_FIELDS = tuple(CapacitySettings.model_fields)


def round_half_up(x: float) -> int:
    """x rounded to the nearest integer, halves up (2.5 -> 3), as k_t and m_t are."""
    return math.floor(x + 0.5)


def _step_factor(steps: tuple[tuple[int, float], ...], t: int) -> float:
    factor = 1.0
    for start, value in steps:  # steps are sorted by start (validated)
        if start > t:
            break
        factor = value
    return factor


def _season_factor(season: tuple[float, ...], t: int) -> float:
    if not season:
        return 1.0
    amplitude, period, phase = season
    return 1.0 + amplitude * math.sin(2.0 * math.pi * (t - phase) / period)


def _shock_mask(u: np.ndarray, probability: float, duration: int) -> np.ndarray:
    """(ticks,) bool: a shock is in force at t when one started in [t - duration + 1, t];
    ``u`` (ticks,) are the uniforms of the starts."""
    starts = (u < probability).astype(np.int64)
    begun = np.cumsum(starts)
    before = np.concatenate([np.zeros(duration, np.int64), begun])[: begun.shape[0]]
    return begun - before > 0


class Capacity(Mechanism):
    """The k_t and m_t of one episode (:meth:`at`), shared read-only with planning forks.

    Shocks are drawn once, when the episode starts, from the stream ``capacity``; every
    other draw of the episode is as without them.
    """

    name = "capacity"
    Settings = CapacitySettings
    preset = "recession"
    check_world = CheckSpec(
        "recession",
        "recession",
        {"immutable": (7,), "k_steps": ((3, 0.5), (6, 1.0))},
        "k halved for ticks 3-5: the threshold moves while advice is outstanding",
        default=False,
    )

    def __init__(self, config: Any, world: Any = None, streams: Any = None) -> None:
        super().__init__(config, world)
        self.k, self.m = config.k, config.m
        self.k_steps, self.m_steps = config.k_steps, config.m_steps
        self.k_season, self.m_season = config.k_season, config.m_season
        self._shock = {}
        if config.k_shocks or config.m_shocks:
            if streams is None:
                raise ValueError("shocks need the episode's streams (stream 'capacity')")
            u = streams.get("capacity").random((2, config.ticks))  # k's row never moves m's
            for row, (name, spec) in enumerate((("k", config.k_shocks), ("m", config.m_shocks))):
                if spec:
                    p, factor, duration = spec
                    self._shock[name] = (_shock_mask(u[row], p, int(duration)), factor)

    @classmethod
    def is_on(cls, config: Any) -> bool:
        return any(getattr(config, f) for f in CAPACITY_FIELDS)

    @classmethod
    def check(cls, config: Any) -> None:
        """The schedules' shapes and ranges."""
        for name in ("k", "m"):
            steps = getattr(config, f"{name}_steps")
            starts = [s for s, _ in steps]
            if (
                any(s < 0 for s in starts)
                or any(b <= a for a, b in zip(starts, starts[1:], strict=False))
                or not all(0.0 <= f <= FACTOR_MAX for _, f in steps)
            ):
                raise not_allowed(_STEPS_TEXT, field=f"{name}_steps", value=steps)
            season = getattr(config, f"{name}_season")
            if season and (
                len(season) != 3
                or not 0.0 <= season[0] <= 1.0
                or not 0.0 < season[1] < math.inf
                or not math.isfinite(season[2])
            ):
                raise not_allowed(_SEASON_TEXT, field=f"{name}_season", value=season)
            shocks = getattr(config, f"{name}_shocks")
            if shocks and (
                len(shocks) != 3
                or not 0.0 <= shocks[0] <= 1.0
                or not 0.0 <= shocks[1] <= FACTOR_MAX
                or not (1.0 <= shocks[2] <= 1_000_000 and float(shocks[2]).is_integer())
            ):
                raise not_allowed(_SHOCKS_TEXT, field=f"{name}_shocks", value=shocks)

    @classmethod
    def tick_columns(cls, config: Any) -> dict[str, type]:
        return {"k": np.int64, "m": np.int64}  # k_t and m_t in force that tick

    def capacity(self, t: int) -> tuple[int, int]:
        return self.at(t)

    def row(
        self, state: Any, d: Decision, advice: Advice, outcome: Outcome, row: dict, view: RecordView
    ) -> None:
        row["k"], row["m"] = self.at(d.t)

    def _factor(self, name: str, t: int) -> float:
        steps, season = (
            (self.k_steps, self.k_season) if name == "k" else (self.m_steps, self.m_season)
        )
        factor = _step_factor(steps, t) * _season_factor(season, t)
        shock = self._shock.get(name)
        # past the episode (a fork rolling on) no shock starts: the draws end with it
        if shock is not None and t < shock[0].shape[0] and shock[0][t]:
            factor *= shock[1]
        return factor

    def at(self, t: int) -> tuple[int, int]:
        """(k_t, m_t) in force at tick ``t``."""
        k_t = min(max(1, round_half_up(self.k * self._factor("k", t))), K_MAX)
        m_t = min(max(0, round_half_up(self.m * self._factor("m", t))), M_MAX)
        return k_t, m_t

    def schedule(self, ticks: int) -> tuple[np.ndarray, np.ndarray]:
        """(k_t, m_t) for t = 0 .. ticks - 1, each (ticks,) int."""
        pairs = np.array([self.at(t) for t in range(ticks)], dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]
