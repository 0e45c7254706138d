"""Capacity that changes over time: the places per tick k_t and the entrants per tick m_t.

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

from abm.config import K_MAX, M_MAX, ScenarioConfig

__all__ = ["CAPACITY_FIELDS", "Capacity", "round_half_up"]

CAPACITY_FIELDS = ("k_steps", "m_steps", "k_season", "m_season", "k_shocks", "m_shocks")


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


class Capacity:
    """The k_t and m_t of one episode (:meth:`at`), shared read-only with planning forks.

    ``on`` is False when the scenario has no schedule: then ``at(t)`` is (k, m) always
    and nothing is drawn.
    """

    def __init__(self, config: ScenarioConfig, rng: np.random.Generator | None = None) -> None:
        self.k, self.m = config.k, config.m
        self.k_steps, self.m_steps = config.k_steps, config.m_steps
        self.k_season, self.m_season = config.k_season, config.m_season
        self.on = any(getattr(config, f) for f in CAPACITY_FIELDS)
        self._shock = {}
        if config.k_shocks or config.m_shocks:
            if rng is None:
                raise ValueError("shocks need the episode's 'capacity' stream")
            u = rng.random((2, config.ticks))  # both rows always: k's never move m's
            for row, (name, spec) in enumerate((("k", config.k_shocks), ("m", config.m_shocks))):
                if spec:
                    p, factor, duration = spec
                    self._shock[name] = (_shock_mask(u[row], p, int(duration)), factor)

    @classmethod
    def build(cls, config: ScenarioConfig, streams: Any) -> Capacity:
        """The episode's capacity; the ``capacity`` stream is created only for shocks."""
        shocks = config.k_shocks or config.m_shocks
        return cls(config, streams.get("capacity") if shocks else None)

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
        if not self.on:
            return self.k, self.m
        k_t = min(max(1, round_half_up(self.k * self._factor("k", t))), K_MAX)
        m_t = min(max(0, round_half_up(self.m * self._factor("m", t))), M_MAX)
        return k_t, m_t

    def schedule(self, ticks: int) -> tuple[np.ndarray, np.ndarray]:
        """(k_t, m_t) for t = 0 .. ticks - 1, each (ticks,) int."""
        pairs = np.array([self.at(t) for t in range(ticks)], dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]
