"""SCARF in the population world (specs/long-term-fairness.md §4): ``scarf``, ``scarf-mlp``
and ``ei``.

``prepare(ctx)`` trains the generator through a differentiable surrogate built from what
the paper assumes known (documented: the policy uses the known causal graph):

* the counterfactual x̃ = q(x, δ): δ on the improvable features I, passed down
  ``ctx.causal_graph`` as its linear SEM (total effects (I − W)⁻¹ with edges into I cut;
  no clipping inside the surrogate);
* the decision model's logit, centred on logit(th₀), the initial threshold: the
  (1 − k/m)-quantile of the training rows' scores (ours);
* cohorts of ``cohort`` rows resampled from ``ctx.X_train`` with their groups
  (``ctx.group_train``); group 0 is the disadvantaged one, s = 1 every other group;
* no dynamics: x_{t+1} = x̃_t (the top-k world itself is not differentiated).

Seeding: stream ``fairness-<name>`` of the scenario's seed, torch on one thread. A process
keeps its trained generators by a digest of the training inputs (:func:`trained_generator`):
runs that differ only in the world's budget train once. Across processes they are kept on
disk (:mod:`policies.fairness.store`: shipped for the dashboard's demonstrations, else the
user cache), so a preparation trains once per machine. :func:`training_progress` lets a
caller watch a training's epochs.

``recommend`` gives each rejected applicant δ on I: ``scarf`` follows the plan its LSTM
made at the candidate's first advice (step = how many times the policy advised that
candidate, kept by candidate id, capped at T − 1); ``scarf-mlp`` asks its MLP for the
candidate's current features. x_cf = ``ctx.causal_graph.propagate(...)`` (computed by
:class:`LevelPropagation`, the same bits), goal = M(x_cf). The advice is scaled so its
total L1 cost fits the tick's allowance (with ``pace``, ours, only budget_left / ticks
remaining of an episode budget, :func:`policies.budget.tick_allowance`; every δ scaled by
one factor, rescaled until it fits since moves clipped at the bounds cost less than
their share), then :func:`policies.budget.fit_to_budget` guards the exact total (called only
when the total is not clearly below the allowance: below, it would return the advice
unchanged).

``ei``: no advice; it names the world whose decision model is trained with the EI
objective (``decision_model = "ei"``, :mod:`abm.fair_models`) and refuses any other, so
a study row labelled ``ei`` is that world.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from abm.interfaces import Feedback, FollowsModel, PolicyContext, Recommendation, RecourseObs
from abm.registry import Registry, checked
from abm.rng import stream
from abm.validation import ConfigError, problem
from policies.budget import budget_horizon, fit_to_budget, tick_allowance
from policies.fairness.generator import (
    Budget,
    Epochs,
    Hidden,
    Horizon,
    Lambdas,
    Rate,
    TrainSettings,
    plan_lstm,
    step_mlp,
    train,
)


def improvable_features(ctx: PolicyContext, given: tuple[int, ...] | None, name: str) -> np.ndarray:
    """The improvable set I as sorted indices: ``given``, else the mutable features with a
    child in the causal graph (every mutable feature without a graph). Raises
    :class:`ConfigError` for an empty set, an index out of range or an immutable one."""
    z = ctx.n_features
    field = f"{name}: improvable"
    if given is None:
        graph = ctx.causal_graph
        if graph is None:
            idx = np.flatnonzero(ctx.mutable)
        else:
            levers = {i for i, _, _ in graph.edges}
            idx = np.array(sorted(i for i in levers if ctx.mutable[i]), dtype=np.int64)
    else:
        idx = np.array(sorted(set(int(i) for i in given)), dtype=np.int64)
        if any(not 0 <= i < z for i in idx):
            raise ConfigError(problem(field, tuple(given), f"indices in [0, {z - 1}]"))
        if ctx.immutable[idx].any():
            raise ConfigError(problem(field, tuple(given), "mutable features only"))
    if idx.size == 0:
        raise ConfigError(
            problem(field, () if given is None else tuple(given), "at least one mutable feature")
        )
    return idx


class GraphSurrogate:
    """The population surrogate (see the module docstring): improvable ``idx`` (k,), total
    effects ``E`` (k, z) of a unit δ on each, a linear logit (``w`` (z,), ``b``) centred on
    ``centre``."""

    def __init__(
        self, idx: np.ndarray, E: np.ndarray, w: np.ndarray, b: float, centre: float
    ) -> None:
        import torch

        self.k = idx.size
        self.idx = np.array(idx, dtype=np.int64)
        self.E = torch.as_tensor(np.array(E, dtype=float))
        self.w = torch.as_tensor(np.array(w, dtype=float))
        self.b = float(b) - float(centre)

    def fingerprint(self) -> list[np.ndarray]:
        """The arrays that define this surrogate (its training depends on nothing else)."""
        return [self.idx, self.E.numpy(), self.w.numpy(), np.array([self.b])]

    def counterfactual(self, X, D):
        return X + D @ self.E

    def logit(self, X):
        return X @ self.w + self.b

    def transition(self, X, soft, t, noise):
        return X

    def noise(self, T, n, gen):
        return None


# trained generators of this process by the digest of everything train() reads: a study's
# runs that differ only in what training does not see (the world's budget, say) share one
_GENERATORS: OrderedDict[str, Any] = OrderedDict()
GENERATOR_CACHE_SIZE = 256  # a hidden-32 LSTM is ~50 kB: 256 of them stay small


def generator_key(
    kind: str,
    sur: GraphSurrogate,
    X0: np.ndarray,
    s: np.ndarray,
    T: int,
    budget_total: float,
    settings: TrainSettings,
    seed: int,
) -> str:
    """SHA-256 over :func:`policies.fairness.generator.train`'s inputs: the kind, the
    surrogate's arrays, the cohort X0 (n, z) and groups s (n,) (shapes, dtypes and bytes),
    T, the plan budget, the settings and the seed."""
    h = hashlib.sha256(repr((kind, int(T), float(budget_total), settings, int(seed))).encode())
    for a in (*sur.fingerprint(), X0, s):
        a = np.ascontiguousarray(a)
        h.update(repr((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


# who watches the trainings of this context (thread): called with (policy name, epochs
# done, epochs in all); set through training_progress
_PROGRESS: ContextVar[Callable[[str, int, int], None] | None] = ContextVar(
    "scarf_training_progress", default=None
)
# a training of less CPU time than this (seconds, the training thread's: a busy machine
# does not change it) is not written to the user cache: the file would save little, and
# test suites and sweeps of tiny trainings would fill the cache
DISK_MIN_TRAIN_S = 2.0


@contextmanager
def training_progress(callback: Callable[[str, int, int], None]) -> Iterator[None]:
    """Within the block (in this thread or context), every generator training calls
    ``callback(policy name, epochs done, epochs in all)`` after each epoch."""
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def trained_generator(
    kind: str,
    sur: GraphSurrogate,
    X0: np.ndarray,
    s: np.ndarray,
    T: int,
    budget_total: float,
    settings: TrainSettings,
    seed: int,
    name: str = "scarf",
) -> Any:
    """:func:`~policies.fairness.generator.train` with a per-process cache keyed by
    :func:`generator_key`, then the stored generators (:mod:`policies.fairness.store`),
    and a training (by policy ``name``, reported to :func:`training_progress`) kept in
    both. Training is deterministic in those inputs, so a hit returns the net a fresh
    training would give, bit for bit. The net is shared: read it only."""
    from policies.fairness import store

    key = generator_key(kind, sur, X0, s, T, budget_total, settings, seed)
    net = _GENERATORS.get(key)
    if net is not None:
        _GENERATORS.move_to_end(key)
        return net
    shape = {"n_in": int(X0.shape[1]) + 1, "k": int(sur.k), "T": int(T)}
    shape["hidden"] = int(settings.hidden)
    on_disk = store.enabled()
    dkey = stored_key(key) if on_disk else ""
    ukey = store.user_key(dkey) if on_disk else ""
    user = store.user_cache_dir() if on_disk else None
    for folder, fkey in ((store.SHIPPED_DIR, dkey), (user, ukey)) if on_disk else ():
        if folder is not None and net is None:
            net = store.load(folder / store.file_name(kind, fkey), kind, fkey, shape)
    if net is None:
        watch = _PROGRESS.get()
        progress = None if watch is None else lambda done, total: watch(name, done, total)
        start = time.thread_time()
        net = train(kind, sur, X0, s, T, budget_total, settings, seed=seed, progress=progress)
        if user is not None and time.thread_time() - start >= DISK_MIN_TRAIN_S:
            try:
                store.save(user, kind, ukey, net, shape)
            except OSError as exc:  # an unwritable cache costs time, never the run
                store.log.warning("could not keep the trained generator in %s: %s", user, exc)
    _GENERATORS[key] = net
    while len(_GENERATORS) > GENERATOR_CACHE_SIZE:
        _GENERATORS.popitem(last=False)
    return net


@functools.cache
def _surrogate_code() -> str:
    return inspect.getsource(GraphSurrogate)


def stored_key(input_key: str) -> str:
    """The key under which :mod:`policies.fairness.store` keeps the generator of training
    inputs with digest ``input_key`` (:func:`generator_key`): the store's key with the
    surrogate's code, so that changing how the surrogate computes misses old files."""
    from policies.fairness import store

    return store.disk_key(input_key, _surrogate_code())


def clear_generator_cache() -> None:
    """Forget this process's trained generators: the next ``prepare`` loads a stored one
    (:mod:`policies.fairness.store`; ``RABM_CACHE_DIR=off``: none) or trains afresh."""
    _GENERATORS.clear()


def total_effects(ctx: PolicyContext, idx: np.ndarray) -> np.ndarray:
    """(k, z): the change of every feature per unit change of each improvable feature,
    through the graph's linear SEM with the edges into I cut (intervened features keep
    their values)."""
    z = ctx.n_features
    W = np.zeros((z, z)) if ctx.causal_graph is None else np.array(ctx.causal_graph.W)
    W[:, idx] = 0.0
    total = np.linalg.inv(np.eye(z) - W)
    return total[idx]


class LevelPropagation:
    """:meth:`abm.causal.CausalGraph.propagate` of the policy's advice on the improvable
    features ``idx``, bit for bit, one graph level at a time instead of one feature at a
    time (spec §6: the policy propagates twice a tick).

    A feature's level is 0 without parents, else 1 + its parents' highest level, so the
    parents' changes are final when a level starts. The graph sums a feature's shift as
    W[i, j]·Δ_i over its parents in ascending i; here term r of every feature of a level
    is its r-th parent's (a feature with fewer parents adds 0·Δ = ±0, which leaves a sum's
    bits unchanged: only the sign of a zero shift can differ, and a zero shift moves
    nothing). Clipping and the realised changes are elementwise, so computing them for
    every row and keeping the moved ones gives the graph's values. Rows are finite, so
    clip(x, 0, 1) = min(max(x, 0), 1): a moved feature's x + shift (shift != 0) is never
    -0, the one value where the two could differ."""

    def __init__(self, graph: Any, idx: np.ndarray) -> None:
        level: dict[int, int] = {}
        for j in np.asarray(graph.order).tolist():
            pa = graph.parents[j]
            level[j] = 1 + max(level[i] for i in pa) if pa else 0
        W = np.asarray(graph.W)
        self.idx = np.asarray(idx, dtype=np.int64)
        in_I = set(self.idx.tolist())
        # per level: its features (c,), whether one is improvable (then it may be fixed),
        # and per parent rank r the sources (c,) and weights (c,)
        self.steps: list[tuple[np.ndarray, bool, list[tuple[np.ndarray, np.ndarray]]]] = []
        for lv in range(1, max(level.values(), default=0) + 1):
            cols = [j for j in sorted(level) if level[j] == lv]
            terms = []
            for r in range(max(len(graph.parents[j]) for j in cols)):
                pa = [graph.parents[j][r] if r < len(graph.parents[j]) else None for j in cols]
                src = np.array([cols[0] if i is None else i for i in pa], dtype=np.int64)
                w = np.array([0.0 if i is None else W[i, j] for i, j in zip(pa, cols, strict=True)])
                terms.append((src, w))
            self.steps.append((np.array(cols, dtype=np.int64), bool(in_I & set(cols)), terms))
        self.needs_fixed = any(has_I for _, has_I, _ in self.steps)

    def __call__(self, X: np.ndarray, X_I: np.ndarray, moved_I: np.ndarray) -> np.ndarray:
        """X (n, z) with the improvable features already set to ``moved_I`` (n, k) from
        ``X_I`` (n, k), after the changes propagate; X is updated in place and returned.
        A feature is intervened where moved_I != X_I."""
        delta = np.zeros(X.shape)
        # the graph's Δ is 0 where not intervened; here moved_I - X_I = ±0 there: only the
        # sign of a zero term differs, which moves nothing (see above)
        delta[:, self.idx] = moved_I - X_I
        if self.needs_fixed:
            fixed = np.zeros(X.shape, dtype=bool)
            fixed[:, self.idx] = moved_I != X_I
        last = len(self.steps) - 1
        for lv, (cols, has_I, terms) in enumerate(self.steps):
            (src, w), *rest = terms
            shift = delta[:, src] * w
            for src, w in rest:
                shift += delta[:, src] * w
            moved = shift != 0.0
            if has_I:
                moved &= ~fixed[:, cols]
            if not moved.any():
                continue
            before = X[:, cols]
            after = np.minimum(np.maximum(before + shift, 0.0), 1.0)
            X[:, cols] = np.where(moved, after, before)
            if lv < last:  # later levels read this level's realised changes
                delta[:, cols] = np.where(moved, after - before, delta[:, cols])
        return X


# fit_to_budget returns the recommendation itself when the advised costs (summed
# cheapest first) fit in the allowance; a total this far below it fits whatever
# the summation order (n terms >= 0 round by at most ~n·2⁻⁵³ of the total), so the call
# is skipped then (the usual tick with pace: only budget_left / ticks left is spent)
FITS_MARGIN = 1e-6
# rescaling rounds that fit shrunken advice to the allowance (what still overspends after
# them, fit_to_budget withholds), aiming this far below it so that round-off never does
SHRINK_ROUNDS, SHRINK_SLACK = 8, 1e-9


class ScarfPolicy(FollowsModel):
    """SCARF (``generator = "lstm"``) or its memoryless ablation (``"mlp"``) in the world.

    It does not keep one-way features (refused there): δ >= 0 raises every improvable
    feature, a decrease-only one too, and the causal graph carries it into children along
    edges of either sign; a generator trained without the directions cannot avoid that.
    """

    name = "scarf"
    kind = "lstm"

    @checked
    def __init__(
        self,
        horizon: Horizon = 10,
        lam: Lambdas = (1.0, 1.0, 1.0),
        hidden: Hidden = 32,
        lr: Rate = 0.02,
        epochs: Epochs = 150,
        tau: Rate = 0.1,
        plan_budget: Budget = 1.0,
        cohort: Annotated[int, Field(ge=2, le=1_000_000)] = 512,
        pace: bool = True,
        improvable: tuple[int, ...] | None = None,
    ) -> None:
        self.horizon = int(horizon)
        self.lam = tuple(float(v) for v in lam)
        self.plan_budget = float(plan_budget)
        self.settings = TrainSettings(lam=self.lam, hidden=hidden, lr=lr, epochs=epochs, tau=tau)
        self.cohort = cohort
        self.pace = bool(pace)
        self.improvable_given = None if improvable is None else tuple(improvable)

    # -- protocol ------------------------------------------------------------------------
    def prepare(self, ctx: PolicyContext) -> None:
        if ctx.budget is None:
            raise ConfigError(f"{self.name} needs budget ≥ 0; budget = None is not allowed")
        if not ctx.decision_model.is_linear:
            raise ConfigError(
                problem(
                    f"{self.name}: decision_model",
                    "non-linear",
                    "a linear model (logistic, dp, ei)",
                )
            )
        if ctx.X_train is None or ctx.X_train.shape[0] < 2:
            raise ConfigError(f"{self.name} needs training rows (PolicyContext.X_train)")
        self.ctx = ctx
        self.idx = improvable_features(ctx, self.improvable_given, self.name)
        self._lower_I, self._upper_I = ctx.lower[self.idx], ctx.upper[self.idx]
        bounds = np.concatenate([self._lower_I, self._upper_I])
        # min(max(x, lo), hi) is np.clip's value unless a bound is -0 (see _advice)
        self._minmax = bool(np.isfinite(bounds).all() and not np.signbit(bounds[bounds == 0]).any())
        graph = ctx.causal_graph
        self._propagate = None if graph is None else LevelPropagation(graph, self.idx)
        self.net = trained_generator(*self.training_inputs(ctx), name=self.name)
        # per-candidate state in arrays, one row per candidate id the policy has seen:
        # times advised (rows,) and, for the LSTM, the plan made at first advice (rows, T, k)
        self._row: dict[int, int] = {}
        self._steps = np.zeros(0, dtype=np.int64)
        self._plans = np.zeros((0, self.horizon, self.idx.size))
        self.stats = {"advised": 0.0, "spent": 0.0}

    def training_inputs(self, ctx: PolicyContext) -> tuple[Any, ...]:
        """What :func:`trained_generator` trains on for ``ctx`` (kind, surrogate, cohort,
        groups, horizon, plan budget, settings, seed); sets :attr:`centre`."""
        idx = improvable_features(ctx, self.improvable_given, self.name)
        scenario = ctx.extra.get("scenario")
        seed = int(getattr(scenario, "seed", 0))
        rng = stream(seed, f"fairness-{self.name}")
        X, group = ctx.X_train, ctx.group_train
        s = np.zeros(X.shape[0]) if group is None else (np.asarray(group) != 0).astype(float)
        rows = rng.integers(0, X.shape[0], self.cohort)
        model = ctx.decision_model
        share = min(max(1.0 - ctx.k / max(ctx.m, 1), 0.0), 1.0)
        self.centre = float(np.quantile(model.logit(X), share))
        sur = GraphSurrogate(
            idx,
            total_effects(ctx, idx),
            np.asarray(model.weights),
            float(model.intercept),
            self.centre,
        )
        return (
            self.kind,
            sur,
            X[rows],
            s[rows],
            self.horizon,
            self.plan_budget * self.cohort,
            self.settings,
            int(rng.integers(2**31)),
        )

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        self.use_model(obs.decision_model)
        n, z = obs.X.shape
        s = np.zeros(n) if obs.group is None else (np.asarray(obs.group) != 0).astype(float)
        rows, new = self._rows_of(obs.ids)
        step = np.minimum(self._steps[rows], self.horizon - 1)
        D = self._deltas(obs.X, s, rows, new, step)
        allowance = self._allowance(obs)
        X_cf = self._advice(obs.X, D)
        cost = np.abs(X_cf - obs.X).sum(axis=1)
        total = float(cost.sum())
        if total > allowance:  # shrink every δ alike, then let fit_to_budget trim the rest
            X_cf, cost = self._shrink(obs.X, D, allowance)
        advised = cost > 0
        goal = np.full(n, np.nan)
        goal[advised] = self.ctx.decision_model.score(X_cf[advised])
        X_cf[~advised] = obs.X[~advised]
        rec = Recommendation(
            goal=goal, X_cf=X_cf, advised=advised, info={"scarf_step": np.where(advised, step, -1)}
        )
        if not float(cost.sum()) * (1.0 + FITS_MARGIN) < allowance:  # else it all fits
            rec = fit_to_budget(rec, obs.X, allowance)
        kept = rec.advised_mask()
        self._steps[rows[kept]] += 1  # ids are distinct within a tick: no repeated rows
        self.stats["advised"] += float(kept.sum())
        self.stats["spent"] += float(np.abs(rec.X_cf[kept] - obs.X[kept]).sum())
        return rec

    def _shrink(self, X: np.ndarray, D: np.ndarray, allowance: float):
        """Advice for c·D (X_cf (n, z), costs (n,)) whose total cost fits ``allowance``.

        Moves clipped at the bounds cost less than their share, so one rescale
        c = allowance / total overspends (about fourfold in ``fair-scarf``); the cost of c·D
        over c only grows as c shrinks, so rescaling again approaches the allowance from
        above, and once no move is clipped (usually the second round) it lands on it.
        """
        target = allowance * (1.0 - SHRINK_SLACK)
        c, X_cf = 1.0, self._advice(X, D)
        cost = np.abs(X_cf - X).sum(axis=1)
        for _ in range(SHRINK_ROUNDS):
            total = float(cost.sum())
            if total <= allowance:
                break
            c *= target / total
            X_cf = self._advice(X, D * c)
            cost = np.abs(X_cf - X).sum(axis=1)
        return X_cf, cost

    def steps_of(self, ids: Any) -> np.ndarray:
        """How many times the policy advised each candidate of ``ids`` (n,): 0 if never."""
        return np.array(
            [
                self._steps[r] if (r := self._row.get(int(c))) is not None else 0
                for c in np.asarray(ids).tolist()
            ],
            dtype=np.int64,
        )

    def observe(self, feedback: Feedback) -> None:
        """Nothing to learn online: the generator is fixed after ``prepare``."""

    def tick_stats(self) -> dict[str, float]:
        """Advised candidates and the L1 advised since the last call."""
        out = dict(self.stats)
        self.stats = dict.fromkeys(self.stats, 0.0)
        return out

    # -- helpers -------------------------------------------------------------------------
    def _rows_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """State rows of the candidates ``ids`` (n,) and which of them are new (n,) bool;
        a new candidate gets a fresh row (steps 0)."""
        table = self._row
        get = table.get
        id_list = np.asarray(ids).tolist()
        rows = np.array([get(c, -1) for c in id_list], dtype=np.int64)
        new = rows < 0
        n_new = int(new.sum())
        if n_new:
            start = len(table)
            rows[new] = np.arange(start, start + n_new)
            for i, r in zip(np.flatnonzero(new).tolist(), rows[new].tolist(), strict=True):
                table[id_list[i]] = r
            if start + n_new > self._steps.size:  # grow by doubling: amortised O(1) per row
                size = max(2 * self._steps.size, start + n_new, 64)
                self._steps = np.concatenate(
                    [self._steps, np.zeros(size - self._steps.size, dtype=np.int64)]
                )
                if self.kind == "lstm":
                    grown = np.zeros((size, *self._plans.shape[1:]))
                    grown[: self._plans.shape[0]] = self._plans
                    self._plans = grown
        return rows, new

    def _deltas(
        self, X: np.ndarray, s: np.ndarray, rows: np.ndarray, new: np.ndarray, step: np.ndarray
    ) -> np.ndarray:
        """δ (n, k) for the rejected X (n, z) at their steps (n,); ``rows`` (n,) are their
        state rows, ``new`` (n,) marks first sight."""
        if X.shape[0] == 0:
            return np.zeros((0, self.idx.size))
        if self.kind == "mlp":
            return step_mlp(self.net, X, s)
        if new.any():  # a candidate's plan is made once, from the features of its first advice
            self._plans[rows[new]] = plan_lstm(self.net, X[new], s[new])
        return self._plans[rows, step]

    def _advice(self, X: np.ndarray, D: np.ndarray) -> np.ndarray:
        """x_cf: X (n, z) with δ (n, k) on I within the bounds, passed down the graph."""
        X_I = X[:, self.idx]
        if self._minmax:  # np.clip's bits: X_I + δ is finite and never -0 (δ >= 0), the
            # bounds are finite and not -0, so no tie between different zeros can occur
            moved = np.minimum(np.maximum(X_I + D, self._lower_I), self._upper_I)
        else:
            moved = np.clip(X_I + D, self._lower_I, self._upper_I)
        X_new = X.copy()
        X_new[:, self.idx] = moved
        if self._propagate is None:
            return X_new
        return self._propagate(X_new, X_I, moved)

    def _allowance(self, obs: RecourseObs) -> float:
        if not self.pace:
            return float(obs.budget_left)
        horizon = budget_horizon(self.ctx)
        return tick_allowance(obs.budget_left, obs.tick, horizon, self.ctx.budget_scope)


class ScarfMLPPolicy(ScarfPolicy):
    """The memoryless ablation: δ_t = f(x_t, s) from the candidate's current features."""

    name = "scarf-mlp"
    kind = "mlp"


class EIWorld:
    """No advice, in a world whose decision model is trained with the EI objective."""

    name = "ei"
    keeps_one_way = True  # it moves nothing

    def prepare(self, ctx: PolicyContext) -> None:
        scenario: Any = ctx.extra.get("scenario")
        dm = getattr(scenario, "decision_model", None)
        if scenario is not None and dm != "ei":
            raise ConfigError(problem("decision_model", dm, "'ei' (policy ei is that world)"))

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        n = obs.n_rejected
        return Recommendation(
            goal=np.full(n, np.nan), X_cf=obs.X.copy(), advised=np.zeros(n, dtype=bool)
        )

    def observe(self, feedback: Feedback) -> None:
        pass


def register(registry: Registry) -> None:
    """Add ``scarf``, ``scarf-mlp`` and ``ei`` to the registry."""
    registry.policy(
        "scarf",
        ScarfPolicy,
        "long-term fairness (SCARF): LSTM interventions on the causal graph; needs budget",
    )
    registry.policy(
        "scarf-mlp",
        ScarfMLPPolicy,
        "long-term fairness: memoryless MLP ablation of scarf; needs budget",
    )
    registry.policy(
        "ei",
        EIWorld,
        "long-term fairness: no advice under decision_model = 'ei' (EI-trained model)",
    )
