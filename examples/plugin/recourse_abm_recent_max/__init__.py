"""Recent-max goal: aim for the highest acceptance threshold of the last ``window`` ticks.

Advice that aims for this tick's threshold expires as soon as the threshold rises, and in
the paper scenario it rises most ticks. A decision-maker who wants advice to stay valid
for a while can aim for the highest threshold seen recently instead:

    g_t = min(max(th_{t-window+1}, ..., th_t) + margin, 1)

(ticks where nobody applied have no threshold and are skipped). With ``window=1`` this
is the standard last-threshold goal, so ``recent-max:window=1+exact-linear`` reproduces
the ``threshold`` policy exactly.

The thresholds are remembered from real ticks only: a planner's forks (``abm.planning``)
call the policy for ticks that never happen, and what it learnt from them would change
the real run (rule ``fork-safe`` of ``abm.testing.check_policy``, which the package's
tests run).

Registered through the ``recourse_abm.policies`` entry point (see ``pyproject.toml``):
goal selector ``recent-max`` (``recent-max:window=5,margin=0.01+exact-linear``) and
policy ``recent-max`` (recent-max + exact-linear; its keywords go to exact-linear).
"""

from __future__ import annotations

from collections import deque
from typing import Annotated

import numpy as np
from pydantic import Field

from abm.interfaces import PolicyContext, RecourseObs
from abm.registry import Registry


class RecentMax:
    """Goal = the highest threshold of the last ``window`` ticks (this one included) + ``margin``.

    ``window`` in [1, 1000] ticks; ``margin`` in (-1, 1). The annotations are what the
    registry checks spec texts against (``window=abc`` is an error naming the parameter).
    """

    def __init__(
        self,
        window: Annotated[int, Field(ge=1, le=1000)] = 3,
        margin: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.0,
    ) -> None:
        if not 1 <= window <= 1000:
            raise ValueError(f"recent-max: window must be an integer in [1, 1000], got {window!r}")
        if not -1.0 < margin < 1.0:
            raise ValueError(f"recent-max: margin must be in (-1, 1), got {margin!r}")
        self.window, self.margin = int(window), float(margin)
        self._recent: deque[float] = deque(maxlen=self.window)

    def prepare(self, ctx: PolicyContext) -> None:
        self._recent.clear()  # a new run starts with no history
        # planners (abm.planning) call the policy on forks of the model, for ticks that
        # never happen; while one runs, ``running`` is True (None: a context without one)
        self._simulator = ctx.extra.get("simulator")

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        recent = list(self._recent)
        if not np.isnan(obs.threshold):
            recent.append(float(obs.threshold))
            if not getattr(self._simulator, "running", False):
                self._recent.append(float(obs.threshold))  # remembered from real ticks only
        recent = recent[-self.window :]
        if not recent:
            return float("nan")  # nobody has applied yet: no goal to aim for
        return float(min(max(recent) + self.margin, 1.0))


def register(registry: Registry) -> None:
    """Add the goal selector and the policy ``recent-max`` to recourse-abm's registry."""
    registry.goal(
        "recent-max",
        RecentMax,
        "highest acceptance threshold of the last `window` ticks (+ margin); window, margin",
    )
    registry.policy(
        "recent-max",
        registry.composite("recent-max", "exact-linear"),
        "recent-max goal (window=3) + exact-linear; keywords go to exact-linear (plugin example)",
    )
