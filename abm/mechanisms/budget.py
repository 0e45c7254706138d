"""An intervention budget (specs/world-extensions.md §5): advice costs its L1 size in
feature units; a policy that spends more than what is left is an error. Shapes: n rejected."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from abm.mechanisms.base import Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome

#: overspending the budget by more than this is the policy's error (§5)
BUDGET_TOL = 1e-9


@dataclass
class BudgetTick:
    """One tick of the budget: what the advice spent, and each rejected row's cost (n,)."""

    spent: float = 0.0
    cost: np.ndarray = field(default_factory=lambda: np.zeros(0))


class Budget(Mechanism):
    """The budget left (refilled each tick when ``budget_scope`` is "tick")."""

    name = "budget"

    def __init__(self, config, world) -> None:
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
        cost = np.add.reduce(np.abs(advice.X_cf - advice.X), axis=1)
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
    def tick_columns(cls, config) -> tuple[str, ...]:
        return ("budget_spent", "budget_left")

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
