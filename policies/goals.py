"""Goal selectors: what score a rejected candidate is told to reach."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from abm.interfaces import PolicyContext, RecourseObs


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
