"""An intervention budget (specs/world-extensions.md §5): advice costs its L1 size in
feature units; a policy that spends more than what is left is an error. Shapes: n rejected."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict

from abm.card import Figure, Sheet
from abm.fields import Int
from abm.mechanisms.base import CheckSpec, EpisodeFigure, Mechanism, RecordView
from abm.onehot import OneHot
from abm.tick import Advice, Decision, Outcome

#: overspending the budget by more than this is the policy's error (§5)
BUDGET_TOL = 1e-9
# the ticks an episode budget lasts unless a scenario says otherwise: the default episode,
# the length of every preset with a budget
BUDGET_HORIZON = 100


class BudgetSettings(BaseModel):
    """§5: an intervention budget (L1 feature units), per tick or per episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: Annotated[float, Strict(), Field(ge=0.0)] | None = Field(
        None, json_schema_extra={"allowed": "none (unlimited) or a number >= 0"}
    )
    budget_scope: Literal["tick", "episode"] = "episode"
    # the ticks an episode budget is paced over: the standard episode, whatever this run's
    # ticks, so a shorter run spends per tick what a full one does (policies.budget)
    budget_horizon: Int = Field(BUDGET_HORIZON, ge=1, le=1_000_000)


@dataclass
class BudgetTick:
    """One tick of the budget: what the advice spent, and each rejected row's cost (n,)."""

    spent: float = 0.0
    cost: np.ndarray = field(default_factory=lambda: np.zeros(0))


class Budget(Mechanism):
    """The budget left (refilled each tick when ``budget_scope`` is "tick")."""

    name = "budget"
    Settings = BudgetSettings
    preset = "budget"
    check_world = CheckSpec(
        "budget",
        "budget",
        {"immutable": (7,)},
        "an intervention budget of 1.0 (L1) a tick: advice beyond it must be withheld",
    )
    figures: ClassVar[tuple[Figure, ...]] = (
        Figure("budget_spent", "intervention budget spent", "budget"),
        Figure(
            "paid_per_budget", "acceptances of advised reapplicants per unit of budget", "budget"
        ),
    )
    episode = (
        EpisodeFigure("budget_spent", "sum", "intervention budget spent (L1, total)"),
        EpisodeFigure("budget_left", "last", "budget left at the end"),
    )

    @classmethod
    def is_on(cls, config) -> bool:
        return config.budget is not None

    @classmethod
    def context(cls, config) -> dict[str, Any]:
        return {"budget": config.budget, "budget_scope": config.budget_scope}

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        spent = sheet.total("budget_spent")
        sheet.put("budget_spent", spent, "")
        sheet.put("paid_per_budget", sheet.share(sheet.n_paid, spent), "no budget was spent")

    def __init__(self, config, world, streams=None) -> None:
        super().__init__(config, world)
        self.left = math.inf if config.budget is None else float(config.budget)

    def start_tick(self, t, waiting, streams, others) -> BudgetTick:
        if self.config.budget_scope == "tick":
            self.left = float(self.config.budget)
        return BudgetTick()

    def observation(self, d: Decision) -> dict:
        return {"budget_left": self.left}

    def on_advice(self, state: BudgetTick, advice: Advice, policy_name: str) -> None:
        """Charge the advised rows' costs; an overspend is the policy's error."""
        # L1 of the change; a one-hot switch a -> b costs c(a, b), not 2 (abm.onehot)
        sizes = OneHot.sizes(self.world.structure.onehot, advice.X, advice.X_cf)
        cost = np.add.reduce(sizes, axis=1)
        spent = float(np.add.reduce(cost[advice.advised]))
        if spent > self.left + BUDGET_TOL:
            raise RuntimeError(
                f"policy {policy_name!r} spent {spent:.6g} of an intervention budget with "
                f"{self.left:.6g} left (budget = {self.config.budget}, scope = "
                f"{self.config.budget_scope}); withhold advice with advised=False"
            )
        self.left = max(self.left - spent, 0.0)
        state.spent, state.cost = spent, np.where(advice.advised, cost, 0.0)

    @classmethod
    def tick_columns(cls, config) -> dict[str, type]:
        return {"budget_spent": float, "budget_left": float}

    def row(
        self,
        state: BudgetTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        row: dict,
        view: RecordView,
    ) -> None:
        row["budget_spent"] = state.spent
        row["budget_left"] = self.left

    def events(
        self,
        state: BudgetTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        dropped,
        chunk,
        view: RecordView,
    ) -> None:
        chunk["budget_cost"] = view.per_applicant(state.cost, np.nan)
