"""Recourse for long-term improvement inside the population model
(specs/improvement-bandits.md §5): ``improve-proto``, ``improve-linucb``, ``improve-bwo``.

Arms: at the first ``recommend``, ``n_arms`` rows of ``ctx.X_train`` whose score under
the context's model is at least its 0.9-quantile, drawn with the policy stream. For a
rejected candidate x an arm k proposes x_cf = x̃_k on the mutable features and x on the
immutable ones (``advice="arm"``, the spec's), or the first point of the segment from x
to that proposal that reaches the goal (``advice="segment"``, ours and the default in the
population world: a whole move to an arm changes every feature at once and is seldom
implemented, so RF is about 0.001 in ``improvement`` and ``lending`` with "arm" against
0.7-0.87 with "segment", 3 seeds; results/sensible/sensible.md). The goal is this tick's
threshold, lifted above the candidate's own score (:func:`policies.goals.admissible_goals`);
an arm is eligible when it changes something and M_v(x_cf) reaches the goal under the
model in force (none eligible: the highest-scoring arm). The advice's recorded goal is
M_v(x_cf); E = exp(-‖x_cf - x‖₁ / z) is the policy's own model of compliance (the world's
dropout and implementation decide what really happens).

One round = one advised rejected candidate, in ``obs.ids`` order: LinUCB's V⁻¹ and bonus
sum move after every pick. A pick's reward is 1 when its candidate reapplies having
implemented all of it, is accepted, and the outcome later revealed for them is 1; a new
recommendation to the same candidate, an accepted reapplication without the change,
a revealed outcome of 0 or ``window`` ticks without a reward close it at 0 (censored).

Tick figures (``tick_stats``): ``picks``, ``rewards`` (picks closed at 1) and
``censored`` (picks closed at 0) since the last report. Candidate columns: ``arm``
(-1 none) and ``arm_E``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from abm.interfaces import (
    Feedback,
    FollowsModel,
    PolicyContext,
    Recommendation,
    RecourseObs,
    Scorer,
)
from abm.registry import Registry, checked
from abm.validation import ConfigError
from policies.budget import fit_paced
from policies.goals import admissible_goals
from policies.improvement.bandits import (
    Bonus,
    BwOUCB,
    Delta,
    Lam,
    LinUCB,
    M,
    MaxSamples,
    NArms,
    NTrees,
    argmax_feasible,
)

#: arms come from the training rows scoring at least this quantile of M (§5, ours)
ARM_QUANTILE = 0.9
#: a proposal whose score is within this of its goal reaches it (score units; see
#: abm.selection.SCORE_TIE for why a last digit must not decide)
REACH_TOL = 1e-9
#: bisection steps along a segment (2^-40 of its length)
_BISECT = 40
Advice = Literal["arm", "segment"]
Window = Annotated[int, Field(ge=1, le=1_000_000)]


def full_scores(
    scorer: Scorer, X: np.ndarray, arms: np.ndarray, mutable: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores (n, K) of the full proposals x_cf = x̃_k on ``mutable``, x elsewhere, for
    candidates X (n, z) and arms (K, z); for a linear model also their logits (n, K),
    which split into an arm part and a candidate part (no (n, K, z) array is scored)."""
    if scorer.is_linear:
        w = np.asarray(scorer.weights)
        arm_part = np.add.reduce(arms[:, mutable] * w[mutable], axis=1)
        own_part = np.add.reduce(X[:, ~mutable] * w[~mutable], axis=1) + scorer.intercept
        logit = own_part[:, None] + arm_part[None, :]
        return 1.0 / (1.0 + np.exp(-logit)), logit
    n, K, z = X.shape[0], arms.shape[0], X.shape[1]
    C = np.where(mutable, arms[None, :, :], X[:, None, :])
    return scorer.score(C.reshape(-1, z)).reshape(n, K), None


def segment_steps(
    scorer: Scorer,
    X: np.ndarray,
    arms: np.ndarray,
    mutable: np.ndarray,
    full: np.ndarray,
    target: np.ndarray,
    full_logit: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """How far along each proposal's segment to go (the ``advice="segment"`` variant, ours).

    X (n, z) candidates, arms (K, z), ``full`` (n, K) the full proposals' scores (and
    ``full_logit`` for a linear model), ``target`` (n,) each candidate's goal in (0, 1).
    Returns (s, score), both (n, K): the smallest s in (0, 1] with M(x + s (x_cf - x)) >=
    target where the full move reaches it (s = 1 elsewhere: such arms stay ineligible)
    and the score there. A linear model has logit(x + s d) = logit(x) + s (logit(x_cf) -
    logit(x)): s in closed form (the caller checks the chosen row's score); any other
    model is bisected to 2^-40 of the segment, keeping M >= target exactly.
    """
    target = np.clip(np.asarray(target, dtype=float), 1e-12, 1.0 - 1e-12)
    reach = full >= target[:, None]
    if not reach.any():
        return np.ones(full.shape), full.copy()
    if full_logit is not None:
        # every (candidate, arm) at once, kept where the full move reaches: elementwise
        # the same arithmetic as on the reaching pairs alone, without gathers/scatters
        lx = scorer.logit(X)[:, None]
        need = (np.log(target) - np.log1p(-target))[:, None]
        rise = full_logit - lx
        gap = need - lx
        step = np.divide(gap, rise, out=np.ones_like(rise), where=rise > 0)
        step = np.clip(step, 0.0, 1.0, out=step)
        at = np.multiply(step, rise)
        at += lx
        np.negative(at, out=at)
        np.exp(at, out=at)
        at += 1.0
        np.divide(1.0, at, out=at)  # 1 / (1 + exp(-(lx + step rise)))
        unreached = ~reach
        step[unreached] = 1.0
        np.copyto(at, full, where=unreached)
        return step, at
    s = np.ones(full.shape)
    score = full.copy()
    rows, cols = np.nonzero(reach)
    x = X[rows]
    d = np.where(mutable, arms[cols], x) - x
    lo, hi = np.zeros(rows.size), np.ones(rows.size)
    at_hi = full[rows, cols]
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        m = scorer.score(x + mid[:, None] * d)
        ok = m >= target[rows]
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        at_hi = np.where(ok, m, at_hi)
    s[rows, cols], score[rows, cols] = hi, at_hi
    return s, score


@dataclass(slots=True)
class _Pick:
    """An open pick: its arm, the E it was chosen with, the tick, its number among the
    policy's picks, and whether the candidate came back accepted having implemented it."""

    arm: int
    e: float
    tick: int
    number: int
    awaiting: bool = False


class ImprovementPolicy(FollowsModel):
    """Shared mechanics of the three policies; subclasses choose the arm (``_choose``)
    and learn from rewards (``_credit``, ``_learned``). In a world with one-way features
    an arm that would move one of them the wrong way is not offered to that candidate
    (as the spec's A_t leaves out arms whose immutable features differ)."""

    name = "improve"
    keeps_one_way = True

    @checked
    def __init__(
        self, n_arms: NArms = 200, window: Window | None = None, advice: Advice = "segment"
    ) -> None:
        self.advice = advice
        self.n_arms = int(n_arms)
        self.window_param = None if window is None else int(window)

    # -- protocol ------------------------------------------------------------------------
    def prepare(self, ctx: PolicyContext) -> None:
        scenario = ctx.extra.get("scenario")
        delay = getattr(scenario, "outcome_delay", None)
        if delay is None:
            raise ConfigError(f"{self.name} needs outcome_delay (1..10000)")
        if ctx.X_train is None or ctx.X_train.shape[0] == 0:
            raise ConfigError(f"{self.name} needs training rows (PolicyContext.X_train)")
        self.ctx = ctx
        self.base_model = ctx.decision_model
        self.window = self.window_param if self.window_param is not None else ctx.validity + delay
        self.arms: np.ndarray | None = None
        self.open: dict[int, _Pick] = {}
        self.n_picks = 0
        self.stats = {"picks": 0, "rewards": 0, "censored": 0}

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        self.use_model(self.base_model if obs.decision_model is None else obs.decision_model)
        if self.arms is None:
            self._draw_arms(rng)
        n, z = obs.X.shape
        self._expire(obs.tick)
        for cid in obs.ids.tolist():  # a new recommendation closes the old pick at 0
            if cid in self.open:
                self._close(cid, 0.0)
        goal = np.full(n, np.nan)
        X_cf = obs.X.copy()
        advised = np.zeros(n, dtype=bool)
        arm = np.full(n, -1, dtype=np.int64)
        arm_E = np.full(n, np.nan)
        if n:
            # every candidate with every arm at once: (n, K) costs, scores, steps and E
            model, mut = self.ctx.decision_model, self.ctx.mutable
            cost = self._costs(obs.X[:, mut])
            score, logit = full_scores(model, obs.X, self.arms, mut)
            # at least the threshold and above the candidate's own score (SPEC §2)
            target = admissible_goals(np.full(n, obs.threshold), obs.scores, obs.threshold)
            s = np.ones_like(cost)
            if self.advice == "segment":
                s, score = segment_steps(model, obs.X, self.arms, mut, score, target, logit)
                cost = s * cost
            E_all = np.negative(cost)
            E_all /= z
            np.exp(E_all, out=E_all)  # exp(-cost / z), without temporaries
            changes = cost > 0
            if self.ctx.one_way:
                changes &= self._one_way_arms(obs.X)
            # a segment's point lands on its goal up to round-off, whichever way the CPU's
            # kernels round: within REACH_TOL it reaches (the advice is nudged up to it)
            eligible = changes & (score >= target[:, None] - REACH_TOL)
            # nothing reaches the threshold: the best-scoring arm (none if none changes);
            # not with one-way features, where the arms left are few and that arm's goal
            # would mostly fall below the threshold (SPEC §2): such a row gets no advice
            fallback = np.flatnonzero(~eligible.any(axis=1))
            if self.ctx.one_way:
                fallback = fallback[:0]
            for i in fallback.tolist():
                best = argmax_feasible(score[i], changes[i])
                if best >= 0:
                    eligible[i, best] = True
            rows = np.flatnonzero(eligible.any(axis=1))
            # in obs.ids order: LinUCB's V⁻¹ moves after every pick
            if rows.size == n:
                arm[:] = self._choose_rows(obs.X, s, E_all, eligible)
            else:
                arm[rows] = self._choose_rows(obs.X[rows], s[rows], E_all[rows], eligible[rows])
            rows = rows[arm[rows] >= 0]
            k = arm[rows]
            X_cf[rows] = self._advice_rows(obs.X[rows], k, s[rows, k], target[rows])
            goal[rows] = model.score(X_cf[rows])
            advised[rows] = True
            arm_E[rows] = E_all[rows, k]
            ids = obs.ids[rows].tolist()
            for cid, ki, e in zip(ids, k.tolist(), arm_E[rows].tolist(), strict=True):
                self.open[int(cid)] = _Pick(ki, e, obs.tick, self.n_picks)
                self.n_picks += 1
            self.stats["picks"] += rows.size
        rec = Recommendation(
            goal=goal, X_cf=X_cf, advised=advised, info={"arm": arm, "arm_E": arm_E}
        )
        fitted = fit_paced(rec, obs, self.ctx)
        if fitted is not rec:  # advice the budget withheld can earn nothing
            for i in np.flatnonzero(advised & ~fitted.advised_mask()):
                self._close(int(obs.ids[i]), 0.0)
        return fitted

    def observe(self, feedback: Feedback) -> None:
        if feedback.ids.shape[0]:
            attempted, succeeded = feedback.outcomes()
            done = attempted.any(axis=1) & (attempted == succeeded).all(axis=1)
            for cid, ok, acc in zip(feedback.ids.tolist(), done, feedback.accepted, strict=True):
                pick = self.open.get(cid)
                if pick is None or not acc:
                    continue  # the rejected get new advice, which closes their pick
                if ok:
                    pick.awaiting = True
                else:
                    self._close(cid, 0.0)
        credited = False
        for cid, y in zip(feedback.outcome_ids.tolist(), feedback.outcome_y.tolist(), strict=True):
            pick = self.open.get(cid)
            if pick is not None and pick.awaiting:
                credited |= y == 1
                self._close(cid, float(y == 1))
        if credited:
            self._learned()

    def tick_stats(self) -> dict[str, float]:
        """Picks, rewards (closed at 1) and censored picks (closed at 0) since the last call."""
        out = {k: float(v) for k, v in self.stats.items()}
        self.stats = dict.fromkeys(self.stats, 0)
        return out

    # -- helpers -------------------------------------------------------------------------
    def _draw_arms(self, rng: np.random.Generator) -> None:
        X = self.ctx.X_train
        score = self.base_model.score(X)
        pool = np.flatnonzero(score >= np.quantile(score, ARM_QUANTILE))
        if pool.size < self.n_arms:
            warnings.warn(
                f"{self.name}: n_arms = {self.n_arms} but only {pool.size} training rows score "
                f"in the top {1 - ARM_QUANTILE:.0%}; using all of them",
                stacklevel=2,
            )
        rows = pool if pool.size <= self.n_arms else rng.choice(pool, self.n_arms, replace=False)
        self.arms = X[rows]
        # the arms' mutable features, feature-major (m, K), and _costs' buffer (m, n, K)
        self._arms_mt = np.ascontiguousarray(self.arms[:, self.ctx.mutable].T)
        self._buffer = np.empty(0)
        self._start(self.arms.shape[0], rng)

    def _costs(self, Xm: np.ndarray) -> np.ndarray:
        """‖x̃_k - x‖₁ over the mutable features (n, K) of candidates' mutable features
        Xm (n, m), bit for bit ``np.add.reduce(np.abs(arms_m[None] - Xm[:, None]), axis=2)``
        (that expression lays the feature axis outermost and adds the features one after
        another, in order). The |differences| go to a buffer the policy keeps, laid out
        (m, n, K): a fresh array this large costs more in page faults than the arithmetic,
        and contiguous K-long rows beat n K loops over m features."""
        m, K = self._arms_mt.shape
        size = m * Xm.shape[0] * K
        if self._buffer.size < size:
            self._buffer = np.empty(max(size, 2 * self._buffer.size))
        out = self._buffer[:size].reshape(m, Xm.shape[0], K)  # contiguous
        np.subtract(self._arms_mt[:, None, :], Xm.T[:, :, None], out=out)
        np.abs(out, out=out)
        return np.add.reduce(out, axis=0)  # feature by feature, in order

    def _one_way_arms(self, X: np.ndarray) -> np.ndarray:
        """(n, K) bool: the arms that move no one-way feature of candidates X (n, z) the
        wrong way (a segment towards an arm moves each feature the arm's way, so its
        points do not either)."""
        d = self.ctx.direction
        j = np.flatnonzero((d != 0) & self.ctx.mutable)
        return ((self.arms[None, :, j] - X[:, None, j]) * d[j] >= 0).all(axis=2)

    def _advice_rows(
        self, X: np.ndarray, k: np.ndarray, s: np.ndarray, target: np.ndarray
    ) -> np.ndarray:
        """The advised x_cf (m, z) of candidates X (m, z) with arms k (m,) and steps s (m,):
        the whole move (exactly the arm's values) where s = 1, else the segment's point,
        nudged up the segment where a closed-form step leaves M a rounding error short of
        ``target`` (m,)."""
        C = np.where(self.ctx.mutable, self.arms[k], X)
        out = np.where((s == 1.0)[:, None], C, X + s[:, None] * (C - X))
        model = self.ctx.decision_model
        if model.is_linear and (s < 1.0).any():
            s = s.copy()
            for j in range(60):
                short = (s < 1.0) & (model.score(out) < target)
                if not short.any():
                    break
                s[short] = np.minimum(1.0, s[short] * (1.0 + 1e-12) + 1e-15 * 2.0**j)
                out[short] = X[short] + s[short, None] * (C[short] - X[short])
                full = short & (s == 1.0)
                out[full] = C[full]
        return out

    def _expire(self, tick: int) -> None:
        for cid in [c for c, p in self.open.items() if tick - p.tick >= self.window]:
            self._close(cid, 0.0)

    def _close(self, cid: int, value: float) -> None:
        pick = self.open.pop(cid)
        if value > 0:
            self._credit(pick)
            self.stats["rewards"] += 1
        else:
            self.stats["censored"] += 1

    def _start(self, n_arms: int, rng: np.random.Generator) -> None:
        """Set up the learner once the arms are known."""

    def _choose(self, x: np.ndarray, s: np.ndarray, E: np.ndarray, eligible: np.ndarray) -> int:
        """The arm for candidate x (z,): steps s (K,) along the segments, E (K,), eligible
        (K,) bool (at least one)."""
        raise NotImplementedError

    def _choose_rows(
        self, X: np.ndarray, s: np.ndarray, E: np.ndarray, eligible: np.ndarray
    ) -> np.ndarray:
        """The arms (n,) of candidates X (n, z) one after the other (s, E, eligible (n, K),
        each row with an eligible arm): :meth:`_choose` row by row unless a subclass does
        the same faster."""
        return np.array(
            [self._choose(X[i], s[i], E[i], eligible[i]) for i in range(len(X))], dtype=np.int64
        )

    def _credit(self, pick: _Pick) -> None:
        """A pick earned a reward of 1."""

    def _learned(self) -> None:
        """Called once per ``observe`` that credited at least one reward."""


class ImproveProto(ImprovementPolicy):
    """ProtoAR in the population: the eligible arm with the highest E (the cheapest)."""

    name = "improve-proto"

    def _choose(self, x, s, E, eligible) -> int:
        return argmax_feasible(E, eligible)

    def _choose_rows(self, X, s, E, eligible) -> np.ndarray:
        # no state moves between picks: every row's first highest eligible E at once
        return np.argmax(np.where(eligible, E, -np.inf), axis=1)


class ImproveLinUCB(ImprovementPolicy):
    """LinUCB (Algorithm 1) over the arms, ϕ = E e_k; ``lam``, ``delta``, ``m`` (picks
    whose bonus enters κ), ``bonus`` as in :class:`policies.improvement.bandits.LinUCB`."""

    name = "improve-linucb"

    @checked
    def __init__(
        self,
        n_arms: NArms = 200,
        window: Window | None = None,
        advice: Advice = "segment",
        lam: Lam = 20.0,
        delta: Delta = 0.05,
        m: M = 10,
        bonus: Bonus = "quad",
    ) -> None:
        super().__init__(n_arms, window, advice)
        self.lam, self.delta, self.m, self.bonus = lam, delta, m, bonus

    def _start(self, n_arms: int, rng: np.random.Generator) -> None:
        self.agent = LinUCB(n_arms, self.lam, self.delta, self.m, self.bonus)

    def _choose(self, x, s, E, eligible) -> int:
        return self.agent.pick(E, eligible)

    def _choose_rows(self, X, s, E, eligible) -> np.ndarray:
        return self.agent.pick_rows(E, eligible)

    def _credit(self, pick: _Pick) -> None:
        self.agent.reward(pick.arm, 1.0, pick.e)


class ImproveBwO(ImprovementPolicy):
    """BwO-UCB (Algorithm 2) over z = (x, x_cf - x); ``n_trees`` and ``max_samples`` of
    the extra-trees surrogate. Never reads E."""

    name = "improve-bwo"

    @checked
    def __init__(
        self,
        n_arms: NArms = 200,
        window: Window | None = None,
        advice: Advice = "segment",
        n_trees: NTrees = 50,
        max_samples: MaxSamples = 0.25,
    ) -> None:
        super().__init__(n_arms, window, advice)
        self.n_trees, self.max_samples = n_trees, max_samples

    def _start(self, n_arms: int, rng: np.random.Generator) -> None:
        # its own generator, seeded from the policy stream: random picks and forest seeds
        seed = int(rng.integers(2**63 - 1))
        self.agent = BwOUCB(self.n_trees, self.max_samples, np.random.default_rng(seed))

    def _choose(self, x, s, E, eligible) -> int:
        C = np.where(self.ctx.mutable, self.arms, x)
        Z = np.concatenate([np.broadcast_to(x, C.shape), s[:, None] * (C - x)], axis=1)
        return self.agent.pick(Z, eligible)

    def _credit(self, pick: _Pick) -> None:
        self.agent.reward(pick.number)

    def _learned(self) -> None:
        self.agent.refit()


def register(registry: Registry) -> None:
    """Add ``improve-proto``, ``improve-linucb`` and ``improve-bwo`` to the registry."""
    registry.policy(
        "improve-proto",
        ImproveProto,
        "improvement (ARLIM): cheapest valid prototype; needs outcome_delay",
    )
    registry.policy(
        "improve-linucb",
        ImproveLinUCB,
        "improvement (ARLIM): LinUCB on revealed outcomes (Alg. 1); needs outcome_delay",
    )
    registry.policy(
        "improve-bwo",
        ImproveBwO,
        "improvement (ARLIM): BwO-UCB extra-trees surrogate (Alg. 2); needs outcome_delay",
    )


__all__ = [
    "ARM_QUANTILE",
    "ImproveBwO",
    "ImproveLinUCB",
    "ImproveProto",
    "ImprovementPolicy",
    "register",
]
