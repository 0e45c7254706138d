"""Retraining (specs/world-extensions.md §2): the decision model is refitted every
``retrain_every`` ticks; outstanding advice may stop being valid under the new model
(§7.2 and the robust-recourse spec's §5 figures), and each refit's domain and model
shifts are measured with their permutation p-values. Shapes: w waiting, a applicants,
n rejected, z features."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm import metrics, metrics_ext
from abm.card import Figure, Sheet
from abm.fields import Float, Int, synthetic_only
from abm.mechanisms.base import CheckSpec, EpisodeFigure, Mechanism, RecordView
from abm.population import Population, filled
from abm.provenance import arrays_digest
from abm.tick import Advice, Decision, Outcome
from abm.validation import not_allowed

#: validity of outstanding advice: M_v(x_cf) >= goal - VALID_TOL (§2); ``valid_threshold``
#: takes the issue tick's threshold for the goal, within :data:`abm.metrics.CLEAR_TOL`
VALID_TOL = 1e-6
#: the tick columns, with their dtypes
COLUMNS: dict[str, type] = {
    "model_version": np.int64,
    "n_outstanding": np.int64,
    "validity": float,
    "shift_l1": float,
    "shift_l2": float,
    "shift_linf": float,
    "valid_retrained": float,
    "valid_threshold": float,
    "valid_threshold_refit": float,
    "score_drop": float,
}
#: at a refit, while ``shift_points`` > 0 (Altmeyer et al.'s domain and model shifts)
SHIFT_COLUMNS = ("domain_mmd", "model_mmd", "disagreement")
#: at a refit, while ``shift_points`` and ``shift_permutations`` are > 0: the shifts'
#: permutation p-values
SHIFT_P_COLUMNS = ("domain_p", "model_p")
SHIFT_POINTS = 2000  # abm.metrics_ext.SHIFT_MAX_POINTS
SHIFT_PERMUTATIONS = 200  # permutations per shift's p-value (AlgorithmicRecourseDynamics.jl)
_DRIFT_TEXT = "empty, or n_features numbers in [-1, 1]"
_SHIFT_POINTS_TEXT = "0 (off) or an integer in [2, 1000000]"
_SHIFT_PERMUTATIONS_TEXT = "0 (off) or an integer in [1, 100000]"


class RetrainingSettings(BaseModel):
    """§2: the decision model refitted on a schedule, and the shifts measured at refits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retrain_every: Int = Field(0, ge=0, le=1_000_000)
    retrain_data: Literal["outcomes", "shifted", "both", "advised"] = "outcomes"
    retrain_drift: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _DRIFT_TEXT})
    # retrain_data = advised (Altmeyer et al.'s data entry): the share of the candidates
    # advised since the last refit whose counterfactuals join the data, labelled positive
    retrain_advised_share: Float = Field(1.0, gt=0.0, le=1.0)
    # the domain and model shifts at each refit (MMD², subsampled to this many rows; 0: off)
    shift_points: Int = Field(
        SHIFT_POINTS, ge=0, le=1_000_000, json_schema_extra={"allowed": _SHIFT_POINTS_TEXT}
    )
    # the shifts' Gaussian kernel: a fixed length-scale l (gamma = 1 / (2 l^2), the paper's
    # 0.5), or None for the median heuristic
    shift_length_scale: Float | None = Field(None, gt=0.0, le=1e6, allow_inf_nan=False)
    # the permutations behind each shift's p-value (stream shift_perm; 0: no p-values)
    shift_permutations: Int = Field(
        SHIFT_PERMUTATIONS,
        ge=0,
        le=100_000,
        json_schema_extra={"allowed": _SHIFT_PERMUTATIONS_TEXT},
    )


#: rows per sample of a shift's permutation test (a subsample of the shift's own sample,
#: drawn from stream ``shift_perm``): its cost grows with the square of the rows; at 1000
#: the two tests of a refit take ~0.1 s at B = 200, at 2000 ~0.45 s
SHIFT_PERM_POINTS = 1000


@dataclass
class RetrainingTick:
    """One tick of retraining: the tick-table figures (:data:`COLUMNS`), M(x_cf) (r,)
    of the reapplicants' advice under the model that now decides (NaN where unadvised),
    and the ids (n,) of the rejected (``retrain_data = advised`` only)."""

    figures: dict[str, float]
    cf_score_now: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rejected_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class Retraining(Mechanism):
    """The decision model in force (``scorer``) and how often it was refitted (``version``)."""

    name = "retraining"
    Settings = RetrainingSettings
    preset = "retraining"
    check_world = CheckSpec(
        "retraining",
        "retraining",
        {"immutable": (7,), "retrain_every": 3},
        "the decision model refitted on drifting data every 3 ticks",
    )
    figures: ClassVar[tuple[Figure, ...]] = (
        Figure(
            "valid_outstanding",
            "outstanding advice clearing its issue threshold under the model in force",
            "retraining",
        ),
        Figure(
            "valid_after_refit",
            "advice from an older model clearing its issue threshold under the model in force",
            "retraining",
        ),
        Figure(
            "own_goal_outstanding",
            "outstanding advice reaching the policy's own goal",
            "retraining",
        ),
        Figure(
            "own_goal_after_refit",
            "advice from an older model reaching the policy's own goal",
            "retraining",
        ),
        Figure(
            "domain_shift",
            "MMD² between the first positive class and the rows added since",
            "retraining",
        ),
        Figure(
            "domain_shift_p",
            "permutation p-value of the domain shift (the last refit)",
            "retraining",
        ),
        Figure(
            "model_shift",
            "MMD² between successive models' scores (mean over refits)",
            "retraining",
        ),
        Figure("model_shift_p", "share of refits whose model shift has p < 0.05", "retraining"),
        Figure("disagreement", "share whose predicted class a refit changed (mean)", "retraining"),
        Figure("param_shift", "L2 distance between successive models' (w, b) (mean)", "retraining"),
    )
    episode = (
        EpisodeFigure("model_version", "last", "decision model refits"),
        EpisodeFigure("validity", "mean", "outstanding advice still valid (mean)"),
    )

    @classmethod
    def is_on(cls, config) -> bool:
        return bool(config.retrain_every)

    @classmethod
    def check(cls, config) -> None:
        z, c = config.n_features, config
        if c.retrain_drift and (
            len(c.retrain_drift) != z or not all(-1.0 <= v <= 1.0 for v in c.retrain_drift)
        ):
            raise not_allowed(
                f"empty, or n_features = {z} numbers in [-1, 1]",
                field="retrain_drift",
                value=c.retrain_drift,
            )
        if c.decision_model in ("dp", "ei") and c.retrain_every:
            raise not_allowed(
                "logistic or mlp when retrain_every > 0 (the fairness-regularised models "
                "need groups for every training row)",
                field="decision_model",
                value=c.decision_model,
            )
        if c.retrain_every and c.retrain_data in ("outcomes", "both") and c.outcome_delay is None:
            raise not_allowed(
                "an outcome_delay (outcomes to retrain on), or retrain_data = shifted "
                "with a retrain_drift",
                field="retrain_data",
                value=c.retrain_data,
            )
        synthetic_only(c, {"retrain_every": bool(c.retrain_every)})
        cls._check_companions(c)

    @staticmethod
    def _check_companions(c) -> None:
        """Settings that mean nothing without another one: refused, naming both fields."""
        if c.retrain_data == "shifted" and not c.retrain_drift:
            raise not_allowed(
                "outcomes or both while retrain_drift is empty (shifted data moves by "
                "retrain_drift: set it)",
                field="retrain_data",
                value=c.retrain_data,
            )
        if c.retrain_drift and c.retrain_data == "outcomes":
            raise not_allowed(
                "empty while retrain_data = outcomes (the drift moves shifted data only: "
                "set retrain_data = shifted or both)",
                field="retrain_drift",
                value=c.retrain_drift,
            )
        if c.retrain_data == "advised" and not c.retrain_every:
            raise not_allowed(
                "outcomes, shifted or both while retrain_every = 0 (advised rows enter the "
                "data of refits, and there are none: set retrain_every)",
                field="retrain_data",
                value=c.retrain_data,
            )
        if c.retrain_advised_share != 1.0 and c.retrain_data != "advised":
            raise not_allowed(
                f"1.0 while retrain_data = {c.retrain_data} (the share picks the advised "
                "rows that enter a refit's data: set retrain_data = advised)",
                field="retrain_advised_share",
                value=c.retrain_advised_share,
            )
        if c.shift_length_scale is not None and not (c.retrain_every and c.shift_points):
            raise not_allowed(
                "none while retrain_every = 0 or shift_points = 0 (the kernel is that of the "
                "shifts measured at refits: set retrain_every and shift_points)",
                field="shift_length_scale",
                value=c.shift_length_scale,
            )
        if c.shift_points == 1:
            raise not_allowed(
                _SHIFT_POINTS_TEXT + " (an MMD needs two rows a sample)",
                field="shift_points",
                value=c.shift_points,
            )
        if c.retrain_drift and not c.retrain_every:
            raise not_allowed(
                "empty while retrain_every = 0 (the drift moves the data of refits, and "
                "there are none: set retrain_every, or clear retrain_drift and set "
                "retrain_data = outcomes)",
                field="retrain_drift",
                value=c.retrain_drift,
            )

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        ticks, put, config = sheet.ticks, sheet.put, sheet.config
        for name, col, why in (
            ("valid_outstanding", "valid_threshold", "no advice was outstanding"),
            ("valid_after_refit", "valid_threshold_refit", "no advice outlived a refit"),
            ("own_goal_outstanding", "validity", "no advice was outstanding"),
            ("own_goal_after_refit", "valid_retrained", "no advice outlived a refit"),
        ):
            put(name, metrics.nanmean(ticks[col]), why)
        nanmean = metrics.nanmean
        refits = "" if ticks["model_version"].iloc[-1:].gt(0).any() else "no refit"
        got = {"param_shift": (nanmean(ticks["shift_l2"]), refits or "a non-linear model")}
        if "domain_mmd" in ticks:
            last = ticks["domain_mmd"].dropna()
            got["domain_shift"] = (
                last.iloc[-1] if len(last) else math.nan,
                refits or "the positive class had under two rows",
            )
            got["model_shift"] = (nanmean(ticks["model_mmd"]), refits or "undefined at every refit")
            got["disagreement"] = (
                nanmean(ticks["disagreement"]),
                refits or "undefined at every refit",
            )
        else:
            for name in ("domain_shift", "model_shift", "disagreement"):
                got[name] = (math.nan, "shift_points = 0")
        if "domain_p" in ticks:
            # the domain shift is against the first data: its last test says whether the
            # data moved since; the model shift is tested at each refit on its own
            last = ticks["domain_p"].where(ticks["domain_mmd"].notna()).dropna()
            got["domain_shift_p"] = (
                last.iloc[-1] if len(last) else math.nan,
                refits or "the positive class had under two rows",
            )
            p = ticks["model_p"].dropna()
            few = config.shift_permutations < 19  # then no p can fall below 0.05
            got["model_shift_p"] = (
                math.nan if few or p.empty else float((p < 0.05).mean()),
                "fewer than 19 permutations" if few else refits or "undefined at every refit",
            )
        else:
            why = "shift_points = 0" if "domain_mmd" not in ticks else "shift_permutations = 0"
            got["domain_shift_p"] = got["model_shift_p"] = (math.nan, why)
        for f in cls.figures[4:]:  # the shifts, in the card's order
            put(f.name, *got[f.name])

    def __init__(self, config, world, streams=None) -> None:
        super().__init__(config, world)
        # abm.world.DecisionModel; a refit builds its successor as type(old)(estimator), so
        # this module (which the scenario's settings load) imports neither the world nor sklearn
        self.scorer = world.decision_model
        self.version = 0
        self._reference: ShiftReference | None = None  # drawn at the first refit
        self._k_scores = math.nan  # within-sample kernel mean of the scores in force
        self._shift_columns = tuple(self.tick_columns(config))[len(COLUMNS) :]
        # retrain_data = advised: (ids (a,), X_cf (a, z)) of each advice since the last
        # refit, and the counterfactual rows every refit so far let in (tuples: a fork
        # shares them and never appends in place)
        self._pending: tuple[tuple[np.ndarray, np.ndarray], ...] = ()
        self._entered: tuple[np.ndarray, ...] = ()

    def start_tick(self, t: int, waiting: Population, streams: Any, others: Any) -> RetrainingTick:
        """Refit at every ``retrain_every``-th tick; validity of the waiting's advice:

        * ``validity`` (and ``valid_retrained``, advice from an older model only): share
          with M_now(x_cf) >= goal − 1e-6, the goal the policy set;
        * ``valid_threshold``: share of all of it with M_now(x_cf) >= th − 1e-9, th the
          threshold of its issue tick (one scale for every policy: robust policies set the
          goal to x_cf's own score, generators aim at th and overshoot). The tolerance is
          :data:`abm.metrics.CLEAR_TOL`: advice placed exactly at th scores up to ~1e-15
          below it under the very model that issued it;
        * ``valid_threshold_refit``, ``score_drop``: advice from an older model only,
          M_now(x_cf) >= th (no tolerance: robust-recourse §5's figure) and the mean of
          M_issue(x_cf) − M_now(x_cf).
        """
        every = self.config.retrain_every
        shift = (math.nan,) * 3
        moved = dict.fromkeys(self._shift_columns, math.nan)
        if t >= 1 and t % every == 0:
            old = self.scorer
            X, y = self._refit(t // every, streams, others.find("outcomes"))
            shift = _shift_norms(old, self.scorer)
            # the shifts are figures only (their streams serve nothing else): a planning
            # fork, which records none, leaves them NaN
            if self.config.shift_points and self.recorded:
                moved = self._shifts(old, X, y, streams)
        out: dict[str, float] = {"model_version": self.version}
        adv = waiting.advised
        goals = waiting.goal[adv]
        cf_now = self.scorer.score(waiting.X_cf[adv])
        out["n_outstanding"] = int(goals.shape[0])
        out["validity"] = metrics_ext.validity(cf_now, goals, VALID_TOL)
        out["shift_l1"], out["shift_l2"], out["shift_linf"] = shift
        if len(waiting):  # an empty population carries no mechanism columns
            older = waiting.data["issued_version"][adv] < self.version
            th = waiting.data["issued_threshold"][adv]
        else:
            older = np.zeros(0, dtype=bool)
            th = np.zeros(0)
        out["valid_threshold"] = metrics_ext.validity(cf_now, th, metrics.CLEAR_TOL)
        # robust-recourse §5: advice issued under an older model than the one in force
        cf_old = cf_now[older]
        out["valid_retrained"] = metrics_ext.validity(cf_old, goals[older], VALID_TOL)
        out.update(moved)
        n_old = cf_old.shape[0]
        if n_old:
            drop = waiting.data["issued_score"][adv][older] - cf_old
            out["valid_threshold_refit"] = np.count_nonzero(cf_old >= th[older]) / n_old
            out["score_drop"] = float(np.add.reduce(drop) / n_old)
        else:
            out["valid_threshold_refit"] = out["score_drop"] = math.nan
        return RetrainingTick(out)

    def _refit(self, r: int, streams: Any, outcomes: Any) -> tuple[np.ndarray, np.ndarray]:
        """§2: refit a clone of M on the scenario's retraining data; a new version.
        Returns the rows it added to the first training data, X (n, z) and y (n,) int8."""
        c, w = self.config, self.world
        parts_X, parts_y = [], []
        if c.retrain_data == "advised":
            self._entered += (self._advised_rows(streams),)
            self._pending = ()
            parts_X += [w.X_train, *self._entered]
            parts_y += [w.y_train, *(np.ones(e.shape[0], np.int8) for e in self._entered)]
        if c.retrain_data in ("outcomes", "both"):
            labelled = () if outcomes is None else outcomes.labelled
            parts_X += [w.X_train, *(o.X for o in labelled)]
            parts_y += [w.y_train, *(o.y for o in labelled)]
        if c.retrain_data in ("shifted", "both"):
            drift = np.zeros(c.n_features) if not c.retrain_drift else np.asarray(c.retrain_drift)
            X, y = w.shifted_rows(c.n_train, r * drift, streams.get("retrain"))
            parts_X.append(X)
            parts_y.append(y)
        X = np.concatenate(parts_X)
        y = np.concatenate(parts_y).astype(np.int8)
        first = w.X_train.shape[0] if c.retrain_data != "shifted" else 0
        from sklearn.base import clone  # loaded by the world already; not by the settings

        estimator = clone(w.decision_model.estimator)
        if np.unique(y).shape[0] < 2:
            raise RuntimeError(
                f"retraining at version {self.version + 1}: the labels are all {int(y[0])}"
            )
        # a planner's forks of one key (abm.planning.RolloutStreams.memo) often refit on
        # the same rows, whatever their plan: outcomes revealed of acceptances made before
        # the fork, shifted rows from the key's stream. The fit is a function of its rows
        # (the estimator is a clone of the world's), so one fit serves every fork that has them
        memo = None if self.recorded else getattr(streams, "memo", None)
        if memo is None:
            self.scorer = type(w.decision_model)(estimator.fit(X, y))
        else:
            key = ("refit", self.version, arrays_digest(X, y))
            if key not in memo:
                memo[key] = type(w.decision_model)(estimator.fit(X, y))
            self.scorer = memo[key]
        self.version += 1
        return X[first:], y[first:]

    def _shifts(self, old: Any, X: np.ndarray, y: np.ndarray, streams: Any) -> dict:
        """The shifts of one refit (Altmeyer et al. 2023, §4), each an unbiased MMD²
        (:func:`abm.metrics_ext.mmd2`) with a bandwidth fixed for the episode:

        * ``domain_mmd``: the positive class of the data the model was first fitted on
          against the positive class of the rows added to it since, X (n, z) and y (n,):
          revealed outcomes, shifted data or advised counterfactuals (the first data
          itself left out, so the two samples share no row and the new rows are not
          diluted);
        * ``model_mmd``: the scores of the previous model against the new one's on a fixed
          sample of the first training data (the model shift of this refit; paired rows:
          0 when the scores did not change);
        * ``disagreement``: the share of that sample whose predicted class (score >= 1/2)
          the refit changed.

        Samples over ``shift_points`` rows are subsampled from stream ``shift``.

        While ``shift_permutations`` (B) > 0, ``domain_p`` and ``model_p`` are the shifts'
        permutation p-values (:func:`abm.metrics_ext.mmd2_test`), as
        AlgorithmicRecourseDynamics.jl reports them but counting the observed labelling,
        p = (1 + #{permuted MMD² >= observed}) / (1 + B): the domain's two samples pooled
        and split at random; the model's paired scores swapped between the old and the new
        model row by row (a unit's two scores are exchangeable when the refit changed
        nothing, scores of different rows are not). Each test runs on at most
        :data:`SHIFT_PERM_POINTS` rows of each sample (all of them while ``shift_points``
        is no more), with the shift's bandwidth; its subsamples and permutations come from
        stream ``shift_perm``, so B changes no other draw. ``domain_p`` is NaN where
        ``domain_mmd`` is.
        """
        rng = streams.get("shift")
        ref = self._reference
        if ref is None:  # the first refit: the previous model is the first one
            c = self.config
            ref = ShiftReference.draw(self.world, c.shift_points, rng, c.shift_length_scale)
            self._reference = ref
            self._k_scores = ref.k_scores
        pos = X[y == 1]
        pos = pos[metrics_ext.subsample(pos.shape[0], self.config.shift_points, rng)]
        if pos.shape[0] >= 2:
            domain = (
                ref.k_positive
                + metrics_ext.kernel_mean(pos, None, ref.gamma_positive)
                - 2.0 * metrics_ext.kernel_mean(ref.positive, pos, ref.gamma_positive)
            )
        else:
            domain = math.nan
        s_old = old.score(ref.X_eval)
        s_new = self.scorer.score(ref.X_eval)
        k_new = metrics_ext.kernel_mean(s_new[:, None], None, ref.gamma_scores)
        between = metrics_ext.kernel_mean(
            s_old[:, None], s_new[:, None], ref.gamma_scores, paired=True
        )
        model = self._k_scores + k_new - 2.0 * between
        self._k_scores = k_new  # the next refit's "old" term
        out = {
            "domain_mmd": domain,
            "model_mmd": model,
            "disagreement": metrics_ext.disagreement(s_old, s_new),
        }
        B = self.config.shift_permutations
        if B:
            perm, cap = streams.get("shift_perm"), SHIFT_PERM_POINTS
            domain_test = metrics_ext.mmd2_test(ref.positive, pos, perm, B, ref.gamma_positive, cap)
            model_test = metrics_ext.mmd2_test(
                s_old, s_new, perm, B, ref.gamma_scores, cap, paired=True
            )
            out["domain_p"], out["model_p"] = domain_test[1], model_test[1]
        return out

    def _advised_rows(self, streams: Any) -> np.ndarray:
        """Altmeyer et al.'s data entry: the counterfactuals (e, z) of the candidates
        advised since the last refit, each candidate's latest advice once, as advised
        (whether or not it was followed or led to acceptance); a share
        ``retrain_advised_share`` < 1 of them, drawn without replacement from stream
        ``retrain``."""
        z = self.config.n_features
        if not self._pending:
            return np.zeros((0, z))
        ids = np.concatenate([p[0] for p in self._pending])
        X = np.concatenate([p[1] for p in self._pending])
        # each id's last row: the first of the reversed order, back in issue order
        _, first = np.unique(ids[::-1], return_index=True)
        rows = np.sort(ids.shape[0] - 1 - first)
        share = self.config.retrain_advised_share
        if share < 1.0:
            n = rows.shape[0]
            pick = streams.get("retrain").choice(n, round(share * n), replace=False)
            rows = rows[np.sort(pick)]
        return X[rows]

    def on_advice(self, state: RetrainingTick, advice: Advice, policy_name: str) -> None:
        if self.config.retrain_data == "advised" and advice.advised.any():
            adv = advice.advised
            self._pending += ((state.rejected_ids[adv], advice.X_cf[adv]),)

    def on_selected(self, state: RetrainingTick, d: Decision, pool, streams, record) -> None:
        if self.config.retrain_data == "advised":
            state.rejected_ids = d.applicants.data["ids"][d.rej]
        if record:  # the advice reapplicants carry, scored by the model that now decides
            ret = slice(0, d.n_ret)
            adv = d.applicants.advised[ret]
            cf_now = filled(d.n_ret, np.nan, np.float64)
            cf_now[adv] = self.scorer.score(d.applicants.X_cf[ret][adv])
            state.cf_score_now = cf_now

    def entrant_columns(self, n: int) -> dict[str, np.ndarray]:
        return self.issued(np.zeros(n, dtype=bool), filled(n, np.nan, np.float64), math.nan)

    def issued(self, advised: np.ndarray, cf_scores: np.ndarray, threshold: float) -> dict:
        """The model version, the threshold and M(x_cf) (n,) at issue of advice given now;
        ``cf_scores`` are NaN where not advised; unadvised rows get version -1 and NaN."""
        version = np.full(advised.shape[0], -1, dtype=np.int64)
        version[advised] = self.version
        th = np.where(advised, threshold, math.nan)
        return {"issued_version": version, "issued_threshold": th, "issued_score": cf_scores}

    @classmethod
    def tick_columns(cls, config) -> dict[str, type]:
        if not config.shift_points:
            return COLUMNS
        shifts = SHIFT_COLUMNS + (SHIFT_P_COLUMNS if config.shift_permutations else ())
        return {**COLUMNS, **dict.fromkeys(shifts, float)}

    def row(
        self,
        state: RetrainingTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        row: dict,
        view: RecordView,
    ) -> None:
        row.update(state.figures)

    def events(
        self,
        state: RetrainingTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        dropped: np.ndarray,
        chunk: dict,
        view: RecordView,
    ) -> None:
        a = len(d.applicants)
        chunk["model_version"] = filled(a, self.version, np.int64)
        cf_now = np.full(a, np.nan)
        cf_now[: d.n_ret] = state.cf_score_now
        chunk["cf_score_now"] = cf_now
        valid = np.full(a, -1, dtype=np.int8)
        seen = ~np.isnan(cf_now)
        goal = d.applicants.goal
        valid[seen] = cf_now[seen] >= goal[seen] - VALID_TOL
        chunk["valid_now"] = valid


@dataclass(frozen=True)
class ShiftReference:
    """What the shifts of an episode compare against, drawn once at its first refit:
    ``positive`` (<= P, z), the first training data's positive class, with its kernel's γ
    (median heuristic, or ``shift_length_scale``) and within-sample kernel mean;
    ``X_eval`` (<= P, z), a sample of the first training data on which models are scored,
    with the γ of the first model's scores there (likewise) and their within-sample kernel
    mean. P =
    ``shift_points``."""

    positive: np.ndarray
    gamma_positive: float
    k_positive: float
    X_eval: np.ndarray
    gamma_scores: float
    k_scores: float

    @classmethod
    def draw(
        cls, world, points: int, rng: np.random.Generator, length_scale: float | None = None
    ) -> ShiftReference:
        """``length_scale`` l: both kernels' γ = 1 / (2 l²) (AlgorithmicRecourseDynamics.jl
        fixes l = 0.5, γ = 2); None: each γ by the median heuristic."""
        X, y = world.X_train, world.y_train
        pos = X[y == 1]
        pos = pos[metrics_ext.subsample(pos.shape[0], points, rng)]
        X_eval = X[metrics_ext.subsample(X.shape[0], points, rng)]
        scores = world.decision_model.score(X_eval)[:, None]
        if length_scale is None:
            gamma, gamma_scores = metrics_ext.median_gamma(pos), metrics_ext.median_gamma(scores)
        else:
            gamma = gamma_scores = 1.0 / (2.0 * length_scale * length_scale)
        return cls(
            pos,
            gamma,
            metrics_ext.kernel_mean(pos, None, gamma),
            X_eval,
            gamma_scores,
            metrics_ext.kernel_mean(scores, None, gamma_scores),
        )


def _shift_norms(old: Any, new: Any) -> tuple[float, float, float]:
    """‖θ_new − θ_old‖ for p = 1, 2, inf, θ = (w, b) (NaN for a non-linear model)."""
    if not (old.is_linear and new.is_linear):
        return (math.nan,) * 3
    delta = np.append(new.weights - old.weights, new.intercept - old.intercept)
    return (
        float(np.add.reduce(np.abs(delta))),
        float(math.sqrt(np.add.reduce(delta * delta))),
        float(np.abs(delta).max()),
    )
