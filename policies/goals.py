"""Goal selectors: what score a rejected candidate is told to reach."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from abm.interfaces import PolicyContext, RecourseObs, RejectedRows

#: The least a goal lies above the candidate's own score (score units): SPEC §2 asks for a
#: goal strictly above it. 1e-6 is far below anything that moves a decision, and above the
#: feasibility tolerance of the exact solvers: with 1e-9, Ustun's MILP (HiGHS, primal
#: tolerance 1e-7 in logit units) accepts the unchanged row as reaching the goal, and that
#: advice is lost (170 demoted in 40 ticks of ``threshold-ustun``, seed 0). ``scripts/
#: goal_gap.py`` measures RR and RF for gaps from one ulp to 1e-4 on paired seeds.
GOAL_GAP = 1e-6


def admissible_goals(
    goals: np.ndarray, scores: np.ndarray, threshold: float, gap: float = GOAL_GAP
) -> np.ndarray:
    """Goals (n,) raised to at least ``threshold`` and to at least ``scores + gap`` (n,).

    ``gap`` = 0 means the next representable score above the candidate's own. A rejected
    candidate is thus never told to stay where they are, even when their score ties the
    threshold exactly (SPEC §2, edge cases). NaN goals (no advice) stay NaN.
    """
    floor = np.nextafter(scores, np.inf) if gap == 0 else scores + gap
    lifted = np.maximum(goals, threshold)  # NaN propagates: no goal stays no goal
    return np.maximum(lifted, floor, out=lifted)


class LastThreshold:
    """The standard practice: aim for this tick's acceptance threshold (plus ``margin``)."""

    deterministic = True  # a function of the observation alone

    def __init__(self, margin: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.0) -> None:
        if not -1.0 < margin < 1.0:
            raise ValueError(f"margin must be in (-1, 1), got {margin!r}")
        self.margin = float(margin)

    def prepare(self, ctx: PolicyContext) -> None:
        pass

    #: a goal for many episodes' rows at once (abm.interfaces.RejectedRows)
    rows_ready = True

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        return float(min(obs.threshold + self.margin, 1.0))

    def select_rows(self, rows: RejectedRows) -> np.ndarray | float:
        """:meth:`select` of every row's episode, (n,) (a scalar for one episode)."""
        return rows.per_row(np.minimum(rows.threshold + self.margin, 1.0))


class TrendThreshold:
    """A practitioner's adaptive goal: this tick's threshold, plus ``margin``, plus the
    threshold's recent trend carried ``horizon`` ticks ahead (to about when the advised
    reapply): g_t = th_t + margin + horizon · s_t, with s_t the least-squares slope of the
    threshold over the last ``window`` ticks (fewer at the start, 0 with one tick). With
    ``up_only`` (default) a falling bar never lowers the goal below th_t + margin.

    The thresholds it keeps are those of the real run: inside a planning fork's rollout
    (``ctx.extra["simulator"].running``) it reads them but records nothing.
    """

    def __init__(
        self,
        margin: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.0,
        window: Annotated[int, Field(ge=2, le=1000)] = 5,
        horizon: Annotated[float, Field(ge=0.0, le=1000.0)] = 1.0,
        up_only: bool = True,
    ) -> None:
        self.margin, self.window, self.horizon = float(margin), int(window), float(horizon)
        self.up_only = bool(up_only)
        self._seen: tuple[tuple[int, float], ...] = ()
        self._sim = None

    def prepare(self, ctx: PolicyContext) -> None:
        self._seen = ()
        self._sim = ctx.extra.get("simulator")

    @staticmethod
    def slope(seen: tuple[tuple[int, float], ...]) -> float:
        """Least-squares slope of the threshold per tick over (tick, threshold) pairs."""
        if len(seen) < 2:
            return 0.0
        t = np.array([s[0] for s in seen], dtype=float)
        th = np.array([s[1] for s in seen])
        dt = t - t.mean()
        return float(np.add.reduce(dt * (th - th.mean())) / np.add.reduce(dt * dt))

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        seen = self._seen
        if obs.threshold == obs.threshold:  # a tick without applicants adds nothing
            kept = tuple(s for s in seen if s[0] != obs.tick)  # a tick counts once
            seen = (kept + ((obs.tick, float(obs.threshold)),))[-self.window :]
            if not (self._sim is not None and self._sim.running):
                self._seen = seen
        trend = self.horizon * self.slope(seen)
        if self.up_only:
            trend = max(trend, 0.0)
        return float(min(obs.threshold + self.margin + trend, 1.0))
