"""The world extensions as stages of the tick (specs/world-extensions.md).

:class:`Mechanisms` holds what the extensions add to a running model: the decision model
in force and its version (§2), outcomes waiting to be revealed and the labelled store
(§1), and the budget left (§5). The model builds one only when a scenario switches an
extension on (``ScenarioConfig.extensions``); without one every stage is skipped and the
tick is exactly the original. Stage order (§6)::

    decide:  reveals -> refit -> budget refill -> validity -> reapplications -> arrivals
             -> scores -> top-k -> outcome draws -> Feedback
    respond: advice, budget check -> dropout -> implementation -> propagation -> record

Arrays stored here are never written in place, so :meth:`Mechanisms.fork` copies the
containers only and a planning rollout never changes the real run (§0, "State").
Shapes: a applicants, n rejected, o outcomes, z features.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from abm import metrics, metrics_ext
from abm.config import ScenarioConfig
from abm.population import Population
from abm.world import DecisionModel, World

#: validity of outstanding advice: M_v(x_cf) >= goal - VALID_TOL (§2)
VALID_TOL = 1e-6
#: overspending the budget by more than this is the policy's error (§5)
BUDGET_TOL = 1e-9


@dataclass(frozen=True)
class Revealed:
    """Outcomes revealed at one tick: ids (o,), X (o, z) as accepted, tick (o,) of
    acceptance, y (o,) int8."""

    ids: np.ndarray
    X: np.ndarray
    tick: np.ndarray
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.ids.shape[0]


def _no_outcomes(z: int) -> Revealed:
    return Revealed(
        np.zeros(0, np.int64), np.zeros((0, z)), np.zeros(0, np.int64), np.zeros(0, np.int8)
    )


class Mechanisms:
    """The extensions' state and stages for one episode (or one planning fork)."""

    def __init__(self, config: ScenarioConfig, world: World) -> None:
        self.config = config
        self.world = world
        on = config.extensions
        self.outcomes = "outcomes" in on
        self.retraining = "retraining" in on
        self.groups = "groups" in on
        self.causal = "causal" in on
        self.budgeted = "budget" in on
        self.n_groups = config.n_groups
        self.graph = world.ext.graph
        self.sigma_star = (
            config.label_noise if config.outcome_noise is None else config.outcome_noise
        )
        # the mutable state: copied by fork()
        self.scorer: DecisionModel = world.decision_model
        self.version = 0
        self.pending: tuple[tuple[np.ndarray, Revealed], ...] = ()  # (due tick (o,), rows)
        self.labelled: tuple[Revealed, ...] = ()
        self.budget_left = math.inf if config.budget is None else float(config.budget)

    def fork(self) -> Mechanisms:
        """A copy whose state changes leave this one alone (stored arrays are shared)."""
        other = object.__new__(Mechanisms)
        other.__dict__.update(self.__dict__)
        return other

    # -- decide: the start of tick t -----------------------------------------------------
    def start_tick(self, t: int, waiting: Population, streams: Any) -> dict[str, Any]:
        """Reveals, refit, budget refill and validity at the start of tick ``t``.

        Returns the tick's extension figures so far (``revealed`` holds the
        :class:`Revealed` outcomes for the policy's Feedback).
        """
        out: dict[str, Any] = {}
        if self.outcomes:
            revealed = self._reveal(t)
            out["revealed"] = revealed
            out["n_revealed"] = revealed.n
            out["n_revealed_pos"] = int(np.count_nonzero(revealed.y))
            out["tp_rate"] = metrics.ratio(out["n_revealed_pos"], revealed.n)
        if self.retraining:
            every = self.config.retrain_every
            shift = (math.nan,) * 3
            if t >= 1 and t % every == 0:
                old = self.scorer
                self._refit(t // every, streams)
                shift = _shift_norms(old, self.scorer)
            out["model_version"] = self.version
            adv = waiting.advised
            goals = waiting.goal[adv]
            cf_now = self.scorer.score(waiting.X_cf[adv])
            out["n_outstanding"] = int(goals.shape[0])
            out["validity"] = metrics_ext.validity(cf_now, goals, VALID_TOL)
            out["shift_l1"], out["shift_l2"], out["shift_linf"] = shift
            # robust-recourse §5: advice issued under an older model than the one in force
            if len(waiting):
                older = waiting.data["issued_version"][adv] < self.version
            else:
                older = np.zeros(0, dtype=bool)
            cf_old = cf_now[older]
            out["valid_retrained"] = metrics_ext.validity(cf_old, goals[older], VALID_TOL)
            n_old = cf_old.shape[0]
            if n_old:
                th = waiting.data["issued_threshold"][adv][older]
                drop = waiting.data["issued_score"][adv][older] - cf_old
                out["valid_threshold"] = np.count_nonzero(cf_old >= th) / n_old
                out["score_drop"] = float(np.add.reduce(drop) / n_old)
            else:
                out["valid_threshold"] = out["score_drop"] = math.nan
        if self.budgeted and self.config.budget_scope == "tick":
            self.budget_left = float(self.config.budget)
        return out

    def _reveal(self, t: int) -> Revealed:
        """Outcomes due at ``t`` join the labelled store (§1), in acceptance order."""
        z = self.config.n_features
        due, keep = [], []
        for when, rows in self.pending:
            now = when <= t
            if now.all():
                due.append(rows)
            elif now.any():
                due.append(_take(rows, now))
                keep.append((when[~now], _take(rows, ~now)))
            else:
                keep.append((when, rows))
        self.pending = tuple(keep)
        if not due:
            return _no_outcomes(z)
        revealed = due[0] if len(due) == 1 else _concat(due)
        self.labelled = (*self.labelled, revealed)
        return revealed

    def _refit(self, r: int, streams: Any) -> None:
        """§2: refit a clone of M on the scenario's retraining data; a new version."""
        c, w = self.config, self.world
        parts_X, parts_y = [], []
        if c.retrain_data in ("outcomes", "both"):
            parts_X += [w.X_train, *(o.X for o in self.labelled)]
            parts_y += [w.y_train, *(o.y for o in self.labelled)]
        if c.retrain_data in ("shifted", "both"):
            drift = np.zeros(c.n_features) if not c.retrain_drift else np.asarray(c.retrain_drift)
            X, y = w.shifted_rows(c.n_train, r * drift, streams.get("retrain"))
            parts_X.append(X)
            parts_y.append(y)
        X = np.concatenate(parts_X)
        y = np.concatenate(parts_y).astype(np.int8)
        estimator = clone(w.decision_model.estimator)
        if np.unique(y).shape[0] < 2:
            raise RuntimeError(
                f"retraining at version {self.version + 1}: the labels are all {int(y[0])}"
            )
        self.scorer = DecisionModel(estimator.fit(X, y))
        self.version += 1

    def issued(self, advised: np.ndarray, cf_scores: np.ndarray, threshold: float) -> dict:
        """The retraining columns (n,) of rows advised now: the model version, the threshold
        and M(x_cf) at issue. ``cf_scores`` (n,) are the advice's scores under the model in
        force, NaN where not advised; unadvised rows get version -1 and NaN."""
        version = np.full(advised.shape[0], -1, dtype=np.int64)
        version[advised] = self.version
        th = np.where(advised, threshold, math.nan)
        return {"issued_version": version, "issued_threshold": th, "issued_score": cf_scores}

    # -- decide: after the selection -----------------------------------------------------
    def draw_outcomes(
        self,
        t: int,
        applicants: Population,
        accepted: np.ndarray,
        p_true: np.ndarray,
        streams: Any,
    ) -> np.ndarray:
        """§1: y ~ Bernoulli(h*(x)) for each acceptance (applicant order), due at t + D.

        ``p_true`` (a,) is h*(x) of the applicants. Returns y (a,) int8 over the
        applicants, -1 where not accepted.
        """
        y_all = np.full(accepted.shape[0], -1, dtype=np.int8)
        if self.config.outcome_delay is None:
            return y_all
        rows = accepted.nonzero()[0]
        X = applicants.X_obs.take(rows, axis=0)
        p = p_true.take(rows)
        y = (streams.get("outcomes").random(rows.shape[0]) < p).astype(np.int8)
        y_all[rows] = y
        delay = self.config.outcome_delay
        if self.config.outcome_delay_dist == "geometric":
            D = streams.get("outcome-delays").geometric(1.0 / delay, rows.shape[0])
        else:
            D = np.full(rows.shape[0], delay, dtype=np.int64)
        if rows.shape[0]:
            ids = applicants.ids.take(rows)
            chunk = Revealed(ids, X, np.full(rows.shape[0], t, dtype=np.int64), y)
            self.pending = (*self.pending, (t + D.astype(np.int64), chunk))
        return y_all

    # -- respond -------------------------------------------------------------------------
    def charge(self, cost: np.ndarray, advised: np.ndarray, policy_name: str) -> float:
        """§5: charge the advised rows' costs (n,); an overspend is the policy's error."""
        spent = float(np.add.reduce(cost[advised]))
        if spent > self.budget_left + BUDGET_TOL:
            raise RuntimeError(
                f"policy {policy_name!r} spent {spent:.6g} of an intervention budget with "
                f"{self.budget_left:.6g} left (budget = {self.config.budget}, scope = "
                f"{self.config.budget_scope}); withhold advice with advised=False"
            )
        self.budget_left = max(self.budget_left - spent, 0.0)
        return spent

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: np.ndarray) -> np.ndarray:
        """§4: implemented changes flow to their descendants (a new (n, z) array)."""
        if self.graph is None:
            return X_new
        return self.graph.propagate(X_old, X_new, intervened)

    def true_probability(self, X: np.ndarray) -> np.ndarray:
        """h*(x) (n,) for rows X (n, z) (§1)."""
        return self.probability_of_score(self.true_score(X))

    def probability_of_score(self, s: np.ndarray) -> np.ndarray:
        """h* as a function of the true score s = w*·x (n,) (§1)."""
        return metrics_ext.probability_of_true_score(
            s, self.config.outcome_threshold, self.sigma_star
        )

    def true_score(self, X: np.ndarray) -> np.ndarray:
        """w*·x (n,) for rows X (n, z)."""
        return np.add.reduce(X * self.world.w_star, axis=1)


def _shift_norms(old: DecisionModel, new: DecisionModel) -> tuple[float, float, float]:
    """‖θ_new − θ_old‖ for p = 1, 2, inf, θ = (w, b) (NaN for a non-linear model)."""
    if not (old.is_linear and new.is_linear):
        return (math.nan,) * 3
    delta = np.append(new.weights - old.weights, new.intercept - old.intercept)
    return (
        float(np.add.reduce(np.abs(delta))),
        float(math.sqrt(np.add.reduce(delta * delta))),
        float(np.abs(delta).max()),
    )


def _take(rows: Revealed, mask: np.ndarray) -> Revealed:
    return Revealed(rows.ids[mask], rows.X[mask], rows.tick[mask], rows.y[mask])


def _concat(parts: list[Revealed]) -> Revealed:
    return Revealed(
        np.concatenate([p.ids for p in parts]),
        np.concatenate([p.X for p in parts]),
        np.concatenate([p.tick for p in parts]),
        np.concatenate([p.y for p in parts]),
    )
