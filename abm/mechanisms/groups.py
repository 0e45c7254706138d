"""Groups (specs/world-extensions.md §3): candidates belong to one of G groups, drawn at
entry; the tick records the gap between groups (§7.3 and long-term-fairness §4).
Shapes: a applicants, w waiting, z features."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from abm import metrics, metrics_ext
from abm.mechanisms.base import Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome

_PER_GROUP = ("rr", "rf", "n_applicants", "accept_rate", "mean_time_to_accept")


@dataclass
class GroupsTick:
    """One tick of groups: the RF window's size per group (G,) (eq. 3)."""

    window: np.ndarray


class Groups(Mechanism):
    name = "groups"
    needs_true_probability = True

    def start_tick(self, t, waiting, streams, others) -> GroupsTick:
        return GroupsTick(np.zeros(self.config.n_groups, dtype=np.int64))

    def on_selected(self, state: GroupsTick, d: Decision, pool, streams, record) -> None:
        window = [d.applicants.group[: d.n_ret], pool.waiting.group]
        window += [p.group for _, p in pool.dropped]
        state.window = np.bincount(np.concatenate(window), minlength=self.config.n_groups)

    def observation(self, d: Decision) -> dict:
        return {"group": d.applicants.group.take(d.rej), "applicant_group": d.applicants.group}

    @classmethod
    def tick_columns(cls, config) -> tuple[str, ...]:
        cols = ["dp_gap", "w_dist", "w_dist_n", "w_score", "decision_accuracy"]
        for name in _PER_GROUP:
            cols += [f"{name}_g{g}" for g in range(config.n_groups)]
        return tuple(cols)

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
