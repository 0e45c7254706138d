"""DiCE counterfactuals through the ``dice-ml`` library (Mothilal et al., 2020).

The decision model is handed to DiCE as a model-agnostic regressor of the score M(x),
and the desired outcome is the score range [g, g + width]. The default width 0.04
reproduces the paper's DiCE error (about 1.6e-2 on the Table 1 protocol); width 1
asks for anything from g up (error about 6e-2: DiCE's random draws overshoot). Of the counterfactuals DiCE
generates, the one with the smallest L1 change is returned. A candidate for whom DiCE
finds none gets a NaN row (no advice), never a substitute.

The random method is dice-ml's own, run on arrays (:mod:`policies.baselines.dice_arrays`:
the same counterfactuals bit for bit, in about a fiftieth of the time); the genetic
method goes through dice-ml's API.
"""

from __future__ import annotations

import contextlib
import io
import random
import warnings
from typing import Annotated, Any, Literal, get_args

import numpy as np
from pydantic import Field

from abm.interfaces import Feedback, FollowsModel, PolicyContext
from abm.validation import optional_import

Method = Literal["random", "genetic"]
METHODS: tuple[str, ...] = get_args(Method)


@contextlib.contextmanager
def _preserve_global_random_state():
    """dice-ml seeds numpy's and Python's global generators: put them back afterwards."""
    np_state = np.random.get_state()  # noqa: NPY002 - saved to be restored, not used
    py_state = random.getstate()
    try:
        yield
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)


class _ScoreRegressor:
    """M(x) as a regressor with ``predict`` on DataFrames, what DiCE's sklearn backend calls.
    With ``onehot`` groups and a query row ``x`` (z,) set, M of the rows snapped against x
    (``OneHot.snap``): DiCE's range then holds for the advice the snapped row is."""

    def __init__(self, model: Any, onehot: Any = None) -> None:
        self.model, self.onehot = model, onehot
        self.x: np.ndarray | None = None

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if self.onehot is not None and self.x is not None:
            X = self.onehot.snap(np.broadcast_to(self.x, X.shape), X)
        return self.model.score(X)


class Dice(FollowsModel):
    """DiCE recommender: desired score range [g, min(g + ``width``, 1)],
    ``method`` random|genetic, ``cfs`` counterfactuals per query,
    ``samples`` random draws per query (random method), ``n_data`` training rows shown to
    DiCE (it reads feature ranges and, for genetic, a KD-tree from them). The explainer
    wraps the decision model in force (``use_model``) and is rebuilt when it changes.

    With one-way features each query gets its row's own box (``ctx.box``) as DiCE's
    permitted range, features with no room left out of those it varies; what comes back
    is clipped to that box and scored again, so advice never moves a feature the wrong
    way (a row left with no valid counterfactual is unreached).

    With one-hot groups (``ctx.onehot``) DiCE varies the indicators as numbers, and the
    model it is shown scores each row snapped to one-hot against the query
    (``OneHot.snap``: argmax, a switch not allowed undone); each counterfactual it returns
    is snapped so, and also tried with every group held at the row's category and with each
    allowed switch of a mutable group made on that. Of those in the score range, the one of
    least cost is returned, L1 with a switch a -> b at c(a, b) (``OneHot.moves``)."""

    keeps_one_way = True
    keeps_onehot = True

    def __init__(
        self,
        method: Method = "random",
        cfs: Annotated[int, Field(ge=1)] = 4,
        samples: Annotated[int, Field(ge=10)] = 200,
        n_data: Annotated[int, Field(ge=10)] = 2000,
        width: Annotated[float, Field(gt=0.0, le=1.0)] = 0.04,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        for name, value, low in (("cfs", cfs, 1), ("samples", samples, 10), ("n_data", n_data, 10)):
            if not (isinstance(value, int) and value >= low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not 0.0 < width <= 1.0:
            raise ValueError(f"width must be in (0, 1], got {width!r}")
        self.method, self.cfs, self.samples, self.n_data = method, cfs, samples, n_data
        self.width = float(width)

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.names = [f"x{i}" for i in range(ctx.n_features)]
        self.model_changed()
        self.vary = [self.names[j] for j in np.flatnonzero(ctx.mutable)]
        self.permitted = {
            self.names[j]: [float(ctx.lower[j]), float(ctx.upper[j])]
            for j in np.flatnonzero(ctx.mutable)
        }

    def model_changed(self) -> None:
        """Build DiCE's data (rows scored by the model in force), model and explainer."""
        dice_ml = optional_import("dice_ml", "dice", "the dice recommender")
        import pandas as pd

        from policies.baselines.dice_arrays import ArrayData, ArrayRandom

        ctx = self.ctx
        if ctx.X_train is not None:
            rows = ctx.X_train[: self.n_data]
        else:  # only the ranges matter to DiCE's random method
            rows = np.stack([ctx.lower, ctx.upper])
        df = pd.DataFrame(rows, columns=self.names)
        df["score"] = ctx.decision_model.score(np.asarray(rows, dtype=float))
        params = {"dataframe": df, "continuous_features": self.names, "outcome_name": "score"}
        # the random method is dice-ml's with its cell-by-cell pandas work on arrays (the
        # same draws and output, in a sixth of the time); the genetic one is dice-ml's own
        arrays = self.method == "random"
        data = ArrayData(params) if arrays else dice_ml.Data(**params)
        # dice-ml re-derives each feature's decimal precision from the data's modes on every
        # query (half of a query's time); the data never change, so fix the values it derives
        data.continuous_features_precision = data.get_decimal_precisions(output_type="dict")
        self.regressor = _ScoreRegressor(ctx.decision_model, ctx.onehot)
        model = dice_ml.Model(model=self.regressor, backend="sklearn", model_type="regressor")
        if arrays:
            self.explainer = ArrayRandom(data, model)
        else:
            self.explainer = dice_ml.Dice(data, model, method=self.method)

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        goals = np.broadcast_to(np.asarray(goals, dtype=float), X.shape[:1])
        out = X.copy()
        scores = self.ctx.decision_model.score(X)
        for i in np.flatnonzero(scores < goals):
            seed = int(rng.integers(2**31 - 1))
            out[i] = self._one(X[i], float(goals[i]), seed)
        return out

    def _one(self, x: np.ndarray, goal: float, seed: int) -> np.ndarray:
        if not goal <= 1.0:
            return np.full_like(x, np.nan)
        vary, permitted = self.vary, self.permitted
        lower, upper = self.ctx.bounds(x)
        if self.ctx.one_way:
            room = np.flatnonzero(lower < upper)  # immutables and one-way at their end: none
            if room.size == 0:
                return np.full_like(x, np.nan)
            vary = [self.names[j] for j in room]
            permitted = {self.names[j]: [float(lower[j]), float(upper[j])] for j in room}
        desired = [goal, min(goal + self.width, 1.0)]
        self.regressor.x = x  # what it snaps against (one-hot groups)
        if self.method == "random":  # dice-ml's query on arrays: no frames, no global draws
            C = self.explainer.counterfactuals(
                x, self.cfs, desired, vary, permitted, self.samples, seed, self.regressor.predict
            )
        else:
            C = self._genetic(x, desired, vary, permitted, seed)
        if len(C) == 0:  # DiCE found none: the goal is out of its reach, the row unreached
            return np.full_like(x, np.nan)
        oh = self.ctx.onehot
        if oh is not None:  # as its model saw them, before the clip can tie an indicator
            C = oh.snap(np.broadcast_to(x, C.shape), C)
        # DiCE rounds its output: unvaried features come back rounded, not changed (and a
        # one-way feature rounded past x is put back on x by its row's box)
        C = np.clip(C, lower, upper)
        C[:, self.ctx.immutable] = x[self.ctx.immutable]
        C = np.where(np.abs(C - x) < 1e-6, x, C)
        if oh is not None:
            C = self._onehot(x, C)
        sc = self.ctx.decision_model.score(C)
        valid = (sc >= goal) & (sc <= goal + self.width)
        if not valid.any():
            return np.full_like(x, np.nan)
        C = C[valid]
        if oh is not None:
            return C[np.argmin(oh.moves(np.broadcast_to(x, C.shape), C).sum(axis=1))]
        return C[np.argmin(np.abs(C - x).sum(axis=1))]

    def _genetic(
        self, x: np.ndarray, desired: list[float], vary: list[str], permitted: dict, seed: int
    ) -> np.ndarray:
        """dice-ml's genetic method's counterfactuals of ``x`` (F,): (k, F), (0, F) for none."""
        import pandas as pd
        from raiutils.exceptions import UserConfigValidationException

        query = pd.DataFrame(x[None, :], columns=self.names)
        # DiCE draws a progress bar per query on stderr: keep it off the user's terminal
        with (
            _preserve_global_random_state(),
            warnings.catch_warnings(),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            # the genetic method draws from numpy's global generator: seed it, then restore
            np.random.seed(seed)  # noqa: NPY002
            random.seed(seed)
            try:
                res = self.explainer.generate_counterfactuals(
                    query,
                    total_CFs=self.cfs,
                    desired_range=desired,
                    features_to_vary=vary,
                    permitted_range=permitted,
                    posthoc_sparsity_param=None,
                    verbose=False,
                )
            except UserConfigValidationException:
                # DiCE raises, rather than returning none, when it finds no counterfactual
                return np.empty((0, len(x)))
        cfs = res.cf_examples_list[0].final_cfs_df
        if cfs is None or len(cfs) == 0:
            return np.empty((0, len(x)))
        return cfs.to_numpy(dtype=float)[:, cfs.columns.get_indexer(self.names)]

    def _onehot(self, x: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Valid one-hot candidates (k', z) from DiCE's snapped counterfactuals C (k, z) of
        row x (z,): C, C with every group at x's category, and that with each allowed switch
        of a mutable group made."""
        oh = self.ctx.onehot
        held = C.copy()
        held[:, oh.columns] = x[oh.columns]
        out = [C, held]
        for switch in oh.switches(x):
            if not self.ctx.immutable[switch.column]:
                out.append(oh.apply(held, switch))
        return np.concatenate(out)

    def observe(self, feedback: Feedback) -> None:
        pass
