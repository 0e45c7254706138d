"""policies.baselines.dice_arrays: dice-ml's random method on arrays gives dice-ml's output
bit for bit, query by query, in every preset's world, and leaves numpy's global
generator alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dice_ml = pytest.importorskip("dice_ml")
from raiutils.exceptions import UserConfigValidationException  # noqa: E402

from abm.model import RecourseModel  # noqa: E402
from policies.baselines.dice import Dice, _preserve_global_random_state  # noqa: E402
from policies.baselines.dice_arrays import ArrayData, ArrayRandom, sample  # noqa: E402

FAST = ("paper", "groups")
SLOW = ("lending", "improvement", "retraining", "causal", "budget", "fair-scarf")


def _same(a: pd.DataFrame | None, b: pd.DataFrame | None) -> None:
    assert (a is None) == (b is None)
    if a is not None:
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def _ask(explainer, query, kwargs):
    """The query's counterfactual examples, None where DiCE finds none (it raises)."""
    try:
        return explainer.generate_counterfactuals(query, **kwargs).cf_examples_list[0]
    except UserConfigValidationException:
        return None


def _stock(explainer: ArrayRandom, names: list[str]):
    """dice-ml's own explainer on the same training frame, precisions fixed as Dice does."""
    data = dice_ml.Data(
        dataframe=explainer.data_interface.data_df, continuous_features=names, outcome_name="score"
    )
    data.continuous_features_precision = data.get_decimal_precisions(output_type="dict")
    return dice_ml.Dice(data, explainer.model, method="random")


def _compare_every_query(
    preset: str, ticks: int | None, monkeypatch, world_seed: int = 3, seed: int = 3
) -> int:
    """Run `threshold-dice`; each query asks dice-ml too, and ArrayRandom through dice-ml's
    API, and compares the arrays and frames that come back."""
    made = Dice.model_changed
    queries = []

    def model_changed(self):
        made(self)
        ours = self.explainer
        assert isinstance(ours, ArrayRandom) and isinstance(ours.data_interface, ArrayData)
        stock, own = _stock(ours, self.names), ours.counterfactuals

        def both(x, total, desired, vary, permitted, size, seed, score):
            got = own(x, total, desired, vary, permitted, size, seed, score)
            query = pd.DataFrame(x[None, :], columns=self.names)
            kwargs = {
                "total_CFs": total,
                "desired_range": desired,
                "features_to_vary": vary,
                "permitted_range": permitted,
                "posthoc_sparsity_param": None,
                "sample_size": size,
                "random_seed": seed,
            }
            with _preserve_global_random_state():
                want, framed = _ask(stock, query, kwargs), _ask(ours, query, kwargs)
            assert (want is None) == (framed is None) == (len(got) == 0)
            if want is not None:
                assert np.array_equal(want.final_cfs_df[self.names].to_numpy(), got)
                _same(framed.final_cfs_df, want.final_cfs_df)
                _same(framed.test_instance_df, want.test_instance_df)
                _same(framed.final_cfs_df_sparse, want.final_cfs_df_sparse)
            queries.append(want is not None)
            return got

        monkeypatch.setattr(ours, "counterfactuals", both)

    monkeypatch.setattr(Dice, "model_changed", model_changed)
    model = RecourseModel(preset, "threshold-dice", seed=seed, world_seed=world_seed, agents=False)
    model.run(ticks=ticks)
    return sum(queries)


@pytest.mark.parametrize("preset", FAST)
def test_every_query_is_dice_mls_own(preset, monkeypatch):
    assert _compare_every_query(preset, 2, monkeypatch) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("preset", SLOW)
def test_every_query_is_dice_mls_own_in_every_world(preset, monkeypatch):
    assert _compare_every_query(preset, 3, monkeypatch) >= 10


@pytest.mark.slow
def test_a_whole_episode_is_dice_mls_own(monkeypatch):
    """A `paper` episode of 100 ticks (a quick tier's), 891 queries: one in it (the 405th) has
    a round that finds none after one that found enough, which ended the search too early in
    a first version of the array method."""
    assert _compare_every_query("paper", None, monkeypatch, world_seed=8, seed=0) > 600


class Linear:
    """A regressor of rows (n, F): their weighted mean, weights 1 to 2."""

    def __init__(self, n: int) -> None:
        self.w = np.linspace(1, 2, n) / np.linspace(1, 2, n).sum()

    def predict(self, X):
        return np.asarray(X, dtype=float) @ self.w


def _explainers(n: int = 4, model=None):
    rng = np.random.default_rng(0)
    names = [f"x{i}" for i in range(n)]
    df = pd.DataFrame(rng.uniform(0, 1, (300, n)).round(3), columns=names)
    df["score"] = Linear(n).predict(df[names])
    params = {"dataframe": df, "continuous_features": names, "outcome_name": "score"}
    model = dice_ml.Model(model=model or Linear(n), backend="sklearn", model_type="regressor")
    ours = ArrayRandom(ArrayData(params), model)
    stock = dice_ml.Dice(dice_ml.Data(**params), model, method="random")
    return names, rng, ours, stock


def test_many_small_queries_as_arrays_and_frames():
    """Small samples, narrow ranges and several counterfactuals asked: rounds that find
    none, searches that end early and ones that run out, as dice-ml has them."""
    names, rng, ours, stock = _explainers(5)
    model = Linear(5)
    found = 0
    for i in range(150):
        x = rng.uniform(0, 0.6, len(names))
        low = float(rng.uniform(0.45, 0.75))
        vary = [f for f in names if rng.random() < 0.8] or names[:1]
        kwargs = {
            "total_CFs": int(rng.integers(1, 7)),
            "desired_range": [low, low + float(rng.choice([0.002, 0.01, 0.05, 0.3]))],
            "features_to_vary": vary,
            "permitted_range": {f: [0.0, float(rng.uniform(0.5, 1.0))] for f in vary},
            "posthoc_sparsity_param": None,
            "sample_size": int(rng.integers(10, 40)),
            "random_seed": i,
        }
        query = pd.DataFrame(x[None, :], columns=names)
        with _preserve_global_random_state():
            want, framed = _ask(stock, query, kwargs), _ask(ours, query, kwargs)
        got = ours.counterfactuals(
            x,
            kwargs["total_CFs"],
            kwargs["desired_range"],
            vary,
            kwargs["permitted_range"],
            kwargs["sample_size"],
            i,
            model.predict,
        )
        assert (want is None) == (framed is None) == (len(got) == 0)
        if want is not None:
            found += 1
            assert np.array_equal(want.final_cfs_df[names].to_numpy(), got)
            _same(framed.final_cfs_df, want.final_cfs_df)
    assert 30 < found < 140


class Scripted(Linear):
    """Linear, but the n-th call scores every row ``script[n]`` (the query is call 0)."""

    def __init__(self, n: int, script: list[float]) -> None:
        super().__init__(n)
        self.script, self.calls = script, 0

    def predict(self, X):
        out = np.full(len(X), self.script[min(self.calls, len(self.script) - 1)])
        self.calls += 1
        return out


def test_a_round_that_finds_none_does_not_end_the_search():
    """Round 1 finds more than asked, round 2 none, round 3 some: dice-ml asks whether to
    stop only after a round that found some, so it runs three rounds."""
    frames = []
    for which in ("ours", "stock"):
        model = Scripted(3, [0.0, 0.5, 0.0, 0.5])
        names, rng, ours, stock = _explainers(3, model)
        query = pd.DataFrame([[0.2, 0.2, 0.2]], columns=names)
        kwargs = {"total_CFs": 2, "desired_range": [0.4, 0.6], "sample_size": 20}
        with _preserve_global_random_state():
            res = _ask(ours if which == "ours" else stock, query, {**kwargs, "random_seed": 3})
        frames.append(res.final_cfs_df)
    _same(*frames)
    rounds = Scripted(3, [0.5, 0.0, 0.5])
    ranges = [(0.0, 1.0)] * 3
    kept = sample(np.full(3, 0.2), [0, 1, 2], ranges, [3] * 3, rounds.predict, 2, (0.4, 0.6), 20, 3)
    assert rounds.calls == 3 and len(kept) == 2


def test_what_it_does_not_cover_is_dice_mls_own_code():
    """Post-hoc sparsity goes to DiCE's own loop, with its own draws: same frames."""
    names, rng, ours, stock = _explainers(3)
    query = pd.DataFrame(rng.uniform(0, 0.5, (1, 3)), columns=names)
    kwargs = {"total_CFs": 2, "desired_range": [0.6, 0.7], "random_seed": 7}
    with _preserve_global_random_state():
        np.random.seed(1)  # noqa: NPY002
        got = ours.generate_counterfactuals(query, **kwargs).cf_examples_list[0]
        np.random.seed(1)  # noqa: NPY002
        want = stock.generate_counterfactuals(query, **kwargs).cf_examples_list[0]
    _same(got.final_cfs_df_sparse, want.final_cfs_df_sparse)


@pytest.mark.parametrize(
    "query",
    [
        pd.DataFrame({"a": [0.25], "b": [1.5]}),
        pd.DataFrame({"a": np.float32([0.25]), "b": [1.5]}, index=[7]),
        pd.DataFrame({"a": [1], "b": [2]}),
        pd.DataFrame({"b": [1.5], "a": [0.25]}),
    ],
)
def test_the_data_casts_are_dice_mls(query):
    df = pd.DataFrame({"a": [0.0, 1.0, 0.5], "b": [1.0, 2.0, 3.0], "y": [0.1, 0.2, 0.3]})
    params = {"dataframe": df, "continuous_features": ["a", "b"], "outcome_name": "y"}
    ours, stock = ArrayData(params), dice_ml.Data(**params)
    prepared = ours.prepare_query_instance(query)
    pd.testing.assert_frame_equal(prepared, stock.prepare_query_instance(query), check_exact=True)
    out = prepared.assign(y=np.float32([0.5]))
    pd.testing.assert_frame_equal(
        ours.ensure_consistent_type(out, query),
        stock.ensure_consistent_type(out, query),
        check_exact=True,
    )
    # a frame of text is dice-ml's own path
    text = out.assign(y=["yes"])
    pd.testing.assert_frame_equal(
        ours.ensure_consistent_type(text, query), stock.ensure_consistent_type(text, query)
    )
