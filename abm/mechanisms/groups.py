"""Groups (specs/world-extensions.md §3): candidates belong to one of G groups, drawn at
entry; the tick records the gap between groups (§7.3 and long-term-fairness §4).
Shapes: a applicants, w waiting, z features."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm import metrics, metrics_ext
from abm.card import Figure, Sheet
from abm.fields import Float, synthetic_only
from abm.mechanisms.base import EpisodeFigure, Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome
from abm.validation import not_allowed

_PER_GROUP = ("rr", "rf", "n_applicants", "accept_rate", "mean_time_to_accept")
_SHARE_TEXT = "1 to 16 numbers >= 0 summing to 1"
_SHIFT_TEXT = "empty, or one row of n_features numbers in [-1, 1] per group"
_SHARE_TOL = 1e-9


class GroupsSettings(BaseModel):
    """§3: each candidate belongs to one of G groups (shares), whose features may shift."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_share: tuple[Float, ...] = Field((1.0,), json_schema_extra={"allowed": _SHARE_TEXT})
    group_shift: tuple[tuple[Float, ...], ...] = Field(
        (), json_schema_extra={"allowed": _SHIFT_TEXT}
    )


@dataclass
class GroupsTick:
    """One tick of groups: the RF window's size per group (G,) (eq. 3)."""

    window: np.ndarray


class Groups(Mechanism):
    name = "groups"
    Settings = GroupsSettings
    needs_true_probability = True
    preset = "groups"
    figures: ClassVar[tuple[Figure, ...]] = (
        Figure("dp_gap", "demographic-parity gap in acceptance (mean over ticks)", "groups"),
        Figure("w_dist", "W1 between the groups' features in the pool (mean over ticks)", "groups"),
        Figure("accept_gap", "acceptance rate of group 1 minus group 0 (signed)", "groups"),
        Figure("rr_gap", "RR of group 1 minus group 0 (signed)", "groups"),
        Figure("rf_gap", "RF of group 1 minus group 0 (signed)", "groups"),
    )
    episode = (
        EpisodeFigure("dp_gap", "mean", "demographic-parity gap of acceptances (mean)"),
        EpisodeFigure("w_dist", "mean", "Wasserstein distance between groups in the pool (mean)"),
    )
    episode_prefixes = ("rr_g", "rf_g", "accept_rate_g")

    @classmethod
    def is_on(cls, config) -> bool:
        return len(config.group_share) > 1

    @classmethod
    def check(cls, config) -> None:
        share, z = config.group_share, config.n_features
        if (
            not 1 <= len(share) <= 16
            or not all(v >= 0.0 for v in share)
            or abs(math.fsum(share) - 1.0) > _SHARE_TOL
        ):
            raise not_allowed(_SHARE_TEXT, field="group_share", value=share)
        g = len(share)
        if config.group_shift and (
            len(config.group_shift) != g
            or any(len(row) != z for row in config.group_shift)
            or not all(-1.0 <= v <= 1.0 for row in config.group_shift for v in row)
        ):
            raise not_allowed(
                f"empty, or shape ({g}, {z}) (groups x features) with entries in [-1, 1]",
                field="group_shift",
                value=config.group_shift,
            )
        synthetic_only(config, {"group_share": g > 1})
        if config.decision_model in ("dp", "ei") and g < 2:
            raise not_allowed(
                "logistic or mlp with one group (dp and ei penalise differences between "
                "groups: give group_share two or more groups)",
                field="decision_model",
                value=config.decision_model,
            )

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        ticks, put, nanmean = sheet.ticks, sheet.put, metrics.nanmean
        put("dp_gap", nanmean(ticks["dp_gap"]), "no tick with applicants of every group")
        put("w_dist", nanmean(ticks["w_dist"]), "no tick with a pool of every group")
        rate = [
            sheet.weighted(ticks[f"accept_rate_g{g}"], ticks[f"n_applicants_g{g}"]) for g in (0, 1)
        ]
        put("accept_gap", rate[1] - rate[0], "a group had no applicant")
        for metric in ("rr", "rf"):
            per = [nanmean(ticks[f"{metric}_g{g}"]) for g in (0, 1)]
            put(f"{metric}_gap", per[1] - per[0], f"the {metric.upper()} of a group is undefined")
        for metric in ("rr", "rf"):  # the groups' own, after the catalogue
            for g in range(sheet.config.n_groups):
                put(
                    f"{metric}_g{g}",
                    nanmean(ticks[f"{metric}_g{g}"]),
                    "undefined in every tick",
                    extra=True,
                )

    def start_tick(self, t, waiting, streams, others) -> GroupsTick:
        return GroupsTick(np.zeros(self.config.n_groups, dtype=np.int64))

    def on_selected(self, state: GroupsTick, d: Decision, pool, streams, record) -> None:
        window = [d.applicants.group[: d.n_ret], pool.waiting.group]
        window += [p.group for _, p in pool.dropped]
        state.window = np.bincount(np.concatenate(window), minlength=self.config.n_groups)

    def observation(self, d: Decision) -> dict:
        return {"group": d.applicants.group.take(d.rej), "applicant_group": d.applicants.group}

    @classmethod
    def tick_columns(cls, config) -> dict[str, type]:
        cols: dict[str, type] = {"dp_gap": float, "w_dist": float, "w_dist_n": np.int64}
        cols.update(w_score=float, decision_accuracy=float)
        for name in _PER_GROUP:
            kind = np.int64 if name.startswith("n_") else float
            cols.update((f"{name}_g{g}", kind) for g in range(config.n_groups))
        return cols

    def row(
        self,
        state: GroupsTick,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        row: dict,
        view: RecordView,
    ) -> None:
        """§7.3: the DP gap, W1 between groups in the pool, and per-group rates."""
        G, applicants, accepted = self.config.n_groups, d.applicants, d.accepted
        group = applicants.group
        row["dp_gap"] = metrics_ext.demographic_parity_gap(accepted, group, G)
        pool = view.waiting
        big = np.bincount(pool.group, minlength=G).max(initial=0)
        rng = view.streams.get("metrics") if big > metrics_ext.W_DIST_MAX_POINTS else None
        row["w_dist"], row["w_dist_n"] = metrics_ext.wasserstein_between_groups(
            pool.X, pool.group, G, rng
        )
        # long-term-fairness §4 (ours): W1 of the groups' scores among this tick's
        # applicants, and how often the decision agrees with h*(x) >= 1/2
        row["w_score"] = metrics_ext.score_distance_between_groups(d.scores, group, G)
        row["decision_accuracy"] = metrics.ratio(
            np.count_nonzero(accepted == (d.p_true >= 0.5)), accepted.shape[0]
        )
        ret = slice(0, d.n_ret)
        succ = applicants.advised[ret] & applicants.implemented[ret]
        g_ret = group[ret]
        n_succ = np.bincount(g_ret[succ], minlength=G)
        n_succ_acc = np.bincount(g_ret[succ & accepted[ret]], minlength=G)
        for g in range(G):
            row[f"rr_g{g}"] = metrics.recourse_reliability(int(n_succ_acc[g]), int(n_succ[g]))
        for g in range(G):
            row[f"rf_g{g}"] = metrics.recourse_feasibility(int(n_succ[g]), int(state.window[g]))
        row.update(metrics_ext.per_group_rates(accepted, group, G))
        wait = (d.t - applicants.entered[accepted]).astype(np.float64)
        row.update(metrics_ext.per_group_mean(wait, group[accepted], G, "mean_time_to_accept"))

    def events(
        self, state, d: Decision, advice: Advice, outcome: Outcome, dropped, chunk, view: RecordView
    ) -> None:
        chunk["group"] = d.applicants.group.copy()
