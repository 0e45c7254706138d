"""Goal selectors: what score a rejected candidate is told to reach."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from abm.interfaces import PolicyContext, RecourseObs

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

    def __init__(self, margin: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.0) -> None:
        if not -1.0 < margin < 1.0:
            raise ValueError(f"margin must be in (-1, 1), got {margin!r}")
        self.margin = float(margin)

    def prepare(self, ctx: PolicyContext) -> None:
        pass

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        return float(min(obs.threshold + self.margin, 1.0))
