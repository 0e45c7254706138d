"""True outcomes (specs/world-extensions.md §1): y ~ Bernoulli(h*(x)) for each acceptance,
revealed D ticks later to the policy, and the figures of true improvement (§7.1).
Shapes: a applicants, n rejected, o outcomes, z features."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict

from abm import metrics, metrics_ext
from abm.card import Figure, Sheet
from abm.fields import Float, Int, integral, synthetic_only
from abm.mechanisms.base import CheckSpec, EpisodeFigure, Mechanism, RecordView
from abm.population import Population
from abm.tick import Advice, Decision, Outcome
from abm.validation import not_allowed

#: the tick columns, with their dtypes
COLUMNS: dict[str, type] = {
    "n_revealed": np.int64,
    "n_revealed_pos": np.int64,
    "tp_rate": float,
    "mean_p_true_accepted": float,
    "mean_p_true_applicants": float,
    "improvement_rate": float,
    "mean_true_gain": float,
    "impl_improvement_rate": float,
    "gaming_rate": float,
    "n_qualified_accepted": np.int64,
    "true_gain_sum": float,
    "advised_change": float,
    "noncausal_change": float,
}
_NONCAUSAL_TEXT = "distinct feature indices in [0, n_features - 1], leaving one causal"


class OutcomesSettings(BaseModel):
    """§1: a true outcome h* with non-causal proxies; outcomes revealed after a delay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    noncausal_features: tuple[Int, ...] = Field((), json_schema_extra={"allowed": _NONCAUSAL_TEXT})
    noncausal_strength: Float = Field(0.5, ge=0.0, le=0.99)
    outcome_delay: (
        Annotated[int, BeforeValidator(integral), Strict(), Field(ge=1, le=10_000)] | None
    ) = Field(None, json_schema_extra={"allowed": "none or an integer in [1, 10000]"})
    outcome_delay_dist: Literal["fixed", "geometric"] = "fixed"
    outcome_threshold: Float = Field(0.5, ge=0.0, le=1.0)
    outcome_noise: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)] | None = Field(
        None, json_schema_extra={"allowed": "none (label_noise) or a finite number >= 0"}
    )


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

    def take(self, mask: np.ndarray) -> Revealed:
        return Revealed(self.ids[mask], self.X[mask], self.tick[mask], self.y[mask])

    @staticmethod
    def none(z: int) -> Revealed:
        return Revealed(
            np.zeros(0, np.int64), np.zeros((0, z)), np.zeros(0, np.int64), np.zeros(0, np.int8)
        )

    @staticmethod
    def concat(parts: list[Revealed]) -> Revealed:
        return Revealed(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("ids", "X", "tick", "y"))
        )


@dataclass
class OutcomesTick:
    """One tick of the outcomes: what was revealed, and y (a,) of the applicants (int8,
    -1 where not accepted)."""

    revealed: Revealed
    y: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    @property
    def n_revealed_pos(self) -> int:
        return int(np.count_nonzero(self.revealed.y))


class Outcomes(Mechanism):
    """Outcomes waiting to be revealed, as (due tick (o,), rows) pairs, and the labelled
    store (every outcome revealed so far, which retraining may learn from)."""

    name = "outcomes"
    Settings = OutcomesSettings
    needs_true_probability = True
    preset = "improvement"
    check_world = CheckSpec(
        "improvement",
        "improvement",
        {"immutable": (7,), "outcome_delay": 2},
        "true outcomes revealed 2 ticks after acceptance; features 8, 9 are proxies",
    )
    figures: ClassVar[tuple[Figure, ...]] = (
        Figure("h_accepted", "mean h*(x) of the accepted", "outcomes"),
        Figure("h_applicants", "mean h*(x) of the applicants", "outcomes"),
        Figure(
            "true_gain", "mean gain in h*(x) per candidate who carried out all advice", "outcomes"
        ),
        Figure("noncausal_share", "share of advised change on non-causal features", "outcomes"),
        Figure("qualified_rate", "acceptances that truly qualify, h*(x) >= 1/2", "outcomes"),
    )
    episode = (
        EpisodeFigure("n_revealed", "sum", "true outcomes revealed"),
        EpisodeFigure("n_revealed_pos", "sum", ""),  # the CLI shows tp_rate instead
        EpisodeFigure(
            "tp_rate", "derived", "  of which positive (true-positive rate of acceptances)"
        ),
        EpisodeFigure(
            "mean_p_true_accepted", "mean", "mean true outcome probability h* of the accepted"
        ),
        EpisodeFigure(
            "improvement_rate", "mean", "advice that truly qualifies (improvement rate, mean)"
        ),
        EpisodeFigure("mean_true_gain", "mean", "mean gain in h* from following the advice"),
    )

    @classmethod
    def is_on(cls, config) -> bool:
        return bool(config.noncausal_features) or config.outcome_delay is not None

    @classmethod
    def check(cls, config) -> None:
        z, proxies = config.n_features, config.noncausal_features
        if (
            any(not 0 <= i < z for i in proxies)
            or len(set(proxies)) != len(proxies)
            or len(set(proxies)) >= z
        ):
            raise not_allowed(
                f"distinct feature indices in [0, {z - 1}], leaving one feature causal",
                field="noncausal_features",
                value=proxies,
            )
        synthetic_only(
            config,
            {
                "noncausal_features": bool(proxies),
                "outcome_delay": config.outcome_delay is not None,
            },
        )
        if config.outcome_delay_dist == "geometric" and config.outcome_delay is None:
            raise not_allowed(
                "fixed while outcome_delay is none (geometric delays have mean "
                "outcome_delay: set it)",
                field="outcome_delay_dist",
                value=config.outcome_delay_dist,
            )

    @classmethod
    def tick_columns(cls, config) -> dict[str, type]:
        return COLUMNS

    @classmethod
    def summarise(cls, ticks) -> dict[str, float]:
        out = super().summarise(ticks)
        if "n_revealed" in out:
            out["tp_rate"] = metrics.ratio(out["n_revealed_pos"], out["n_revealed"])
        return {f.column: out[f.column] for f in cls.episode if f.column in out}

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        ticks, put, share, total = sheet.ticks, sheet.put, sheet.share, sheet.total
        put(
            "h_accepted",
            sheet.weighted(ticks["mean_p_true_accepted"], ticks["n_accepted"]),
            "nobody was accepted",
        )
        put(
            "h_applicants",
            sheet.weighted(ticks["mean_p_true_applicants"], ticks["n_applicants"]),
            "no application",
        )
        put(
            "true_gain",
            share(total("true_gain_sum"), total("n_implemented")),
            "no advice was carried out in full",
        )
        if sheet.config.noncausal_features:
            put(
                "noncausal_share",
                share(total("noncausal_change"), total("advised_change")),
                "no change was advised",
            )
        else:
            put("noncausal_share", math.nan, "the world has no non-causal features")
        put(
            "qualified_rate",
            share(total("n_qualified_accepted"), sheet.n_accepted),
            "nobody was accepted",
        )

    def __init__(self, config, world, streams=None) -> None:
        super().__init__(config, world)
        self.pending: tuple[tuple[np.ndarray, Revealed], ...] = ()
        self.labelled: tuple[Revealed, ...] = ()

    def start_tick(self, t: int, waiting: Population, streams: Any, others: Any) -> OutcomesTick:
        """Outcomes due at ``t`` join the labelled store, in acceptance order."""
        due, keep = [], []
        for when, rows in self.pending:
            now = when <= t
            if now.all():
                due.append(rows)
            elif now.any():
                due.append(rows.take(now))
                keep.append((when[~now], rows.take(~now)))
            else:
                keep.append((when, rows))
        self.pending = tuple(keep)
        if not due:
            return OutcomesTick(Revealed.none(self.config.n_features))
        revealed = due[0] if len(due) == 1 else Revealed.concat(due)
        self.labelled = (*self.labelled, revealed)
        return OutcomesTick(revealed)

    def on_selected(self, state: OutcomesTick, d: Decision, pool, streams, record) -> None:
        """y ~ Bernoulli(h*(x)) for each acceptance (applicant order), due at t + D."""
        c, accepted = self.config, d.accepted
        state.y = y_all = np.full(accepted.shape[0], -1, dtype=np.int8)
        if c.outcome_delay is None:
            return
        rows = accepted.nonzero()[0]
        X = d.applicants.X_obs.take(rows, axis=0)
        y = (streams.get("outcomes").random(rows.shape[0]) < d.p_true.take(rows)).astype(np.int8)
        y_all[rows] = y
        if c.outcome_delay_dist == "geometric":
            D = streams.get("outcome-delays").geometric(1.0 / c.outcome_delay, rows.shape[0])
        else:
            D = np.full(rows.shape[0], c.outcome_delay, dtype=np.int64)
        if rows.shape[0]:
            ids = d.applicants.ids.take(rows)
            chunk = Revealed(ids, X, np.full(rows.shape[0], d.t, dtype=np.int64), y)
            self.pending = (*self.pending, (d.t + D.astype(np.int64), chunk))

    def feedback(self, state: OutcomesTick) -> dict[str, Any]:
        r = state.revealed
        if not r.n:
            return {}
        return {"outcome_ids": r.ids, "outcome_X": r.X, "outcome_tick": r.tick, "outcome_y": r.y}

    def true_score(self, X: np.ndarray) -> np.ndarray:
        """w*·x (n,) for rows X (n, z)."""
        return np.add.reduce(X * self.world.w_star, axis=1)

    def true_probability(self, X: np.ndarray) -> np.ndarray:
        """h*(x) (n,) for rows X (n, z)."""
        return probability_of_score(self.config, self.true_score(X))

    def row(
        self,
        state: OutcomesTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        row: dict,
        view: RecordView,
    ) -> None:
        c, applicants, accepted, p_app = self.config, d.applicants, d.accepted, d.p_true
        adv = advice.advised
        s_cf = self.true_score(view.true_counterfactual(advice)[adv])
        gain = probability_of_score(c, s_cf) - p_app.take(d.rej)[adv]
        revealed = state.revealed
        row["n_revealed"] = revealed.n
        row["n_revealed_pos"] = state.n_revealed_pos
        row["tp_rate"] = metrics.ratio(state.n_revealed_pos, revealed.n)
        row["mean_p_true_accepted"] = metrics.nanmean(p_app[accepted])
        # the pool's true qualification, whoever is accepted: advice that truly improves
        # raises it, advice that games the model does not
        row["mean_p_true_applicants"] = metrics.nanmean(p_app)
        n_adv = s_cf.shape[0]
        row["improvement_rate"] = metrics.ratio(
            np.count_nonzero(s_cf >= c.outcome_threshold), n_adv
        )
        row["mean_true_gain"] = float(np.add.reduce(gain) / n_adv) if n_adv else math.nan
        # improvement-bandits §5: did those who did everything asked truly qualify?
        ret = slice(0, d.n_ret)
        succ = applicants.advised[ret] & applicants.implemented[ret]
        good = p_app[ret][succ] >= 0.5
        acc = accepted[ret][succ]
        row["impl_improvement_rate"] = metrics.ratio(np.count_nonzero(good), good.shape[0])
        row["gaming_rate"] = metrics.ratio(np.count_nonzero(acc & ~good), np.count_nonzero(acc))
        # the outcome card's figures (abm/card.py): who is accepted qualifies truly, and
        # what implemented advice and advised change do to h*
        row["n_qualified_accepted"] = int(np.count_nonzero(p_app[accepted] >= 0.5))
        done = outcome.implemented
        before, after = outcome.X_before[done], outcome.X_after[done]
        gain = self.true_probability(after) - self.true_probability(before)
        row["true_gain_sum"] = float(np.add.reduce(gain))
        change = np.abs(advice.X_cf[adv] - advice.X[adv])
        row["advised_change"] = float(np.add.reduce(change, axis=None))
        proxies = list(c.noncausal_features)
        row["noncausal_change"] = float(np.add.reduce(change[:, proxies], axis=None))

    def events(
        self,
        state: OutcomesTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        dropped: np.ndarray,
        chunk: dict,
        view: RecordView,
    ) -> None:
        chunk["p_true"] = d.p_true
        chunk["y"] = state.y
        X_cf = view.true_counterfactual(advice)
        p_cf = np.where(
            advice.advised, probability_of_score(self.config, self.true_score(X_cf)), np.nan
        )
        chunk["cf_p_true"] = view.per_applicant(p_cf, np.nan)
        improving = advice.advised & (self.true_score(X_cf) >= self.config.outcome_threshold)
        chunk["improving"] = view.per_applicant(improving, False)


def sigma_star(config) -> float:
    """σ* of h* (§1): the outcome noise, or the label noise when it is not set."""
    return config.label_noise if config.outcome_noise is None else config.outcome_noise


def probability_of_score(config, s: np.ndarray) -> np.ndarray:
    """h* as a function of the true score s = w*·x (n,) (§1)."""
    return metrics_ext.probability_of_true_score(s, config.outcome_threshold, sigma_star(config))
