"""dice-ml's random method on arrays: the same draws and counterfactuals, without pandas.

A query of :class:`dice_ml.explainer_interfaces.dice_random.DiceRandom` costs 25–45 ms, and
nearly all of it is pandas, not the method: a ``DataFrame.at`` read and write per sampled
row and feature count (about 430 a query in ``paper``), a Python loop over the samples'
validity, per-column ``astype`` calls that set and restore the query's dtypes, the training
frame's extremes read again, and a dozen small frames built. With DiCE inside every tick of
a predictor's training (``hybrid-dice``, hundreds of thousands of queries), that cost was
the entry's: about 1,100 CPU-seconds a predictor in ``paper``.

- :func:`sample` is the method itself on arrays: dice-ml's draws from the same legacy
  generator sequence (the seed again before each varied feature, then the feature picks,
  then ``DataFrame.sample``'s draw of ``total_CFs``) on a ``RandomState`` of its own,
  rather than numpy's global one; its rounds, stopping rule and order of found
  counterfactuals (first seen first, duplicates as pandas tells them).
- :class:`ArrayRandom` is dice-ml's explainer with :func:`sample` inside: the library's API
  and output frames, for any caller; :meth:`ArrayRandom.counterfactuals` is the same
  query without frames (what :class:`policies.baselines.dice.Dice` asks).
- :class:`ArrayData` is dice-ml's data interface, reading the training frame's extremes once
  and casting a numeric query in one call.

dice-ml stays the reference: ``tests/test_dice_arrays.py`` asks it every query of
``threshold-dice`` runs in every preset and compares frames and arrays bit for bit. Outside
what this covers (a classifier, no seed, post-hoc sparsity, categorical features,
non-numeric columns) the classes hand over to dice-ml's own code. One difference that is
not output: dice-ml prints a line to stdout when it finds no counterfactual; this does not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from dice_ml import diverse_counterfactuals
from dice_ml.constants import ModelTypes
from dice_ml.data_interfaces.public_data_interface import PublicData
from dice_ml.explainer_interfaces.dice_random import DiceRandom


def _numeric(dtypes: Iterable[Any]) -> bool:
    return all(isinstance(t, np.dtype) and t.kind in "biuf" for t in dtypes)


class ArrayData(PublicData):
    """dice-ml's public data interface, casting all-numeric frames in one call.
    ``PublicData(params)``: ``params`` as :class:`dice_ml.Data` takes them."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__(params)
        # what get_data_type reads from the training frame on every query
        self.kinds = {f: self.get_data_type(f) for f in self.continuous_feature_names}

    @functools.cached_property
    def data_ranges(self) -> dict[str, tuple[Any, Any]]:
        """Each continuous feature's (min, max) in the training frame, as dice-ml reads them."""
        return {
            f: (self.data_df[f].min(), self.data_df[f].max()) for f in self.continuous_feature_names
        }

    def get_features_range(
        self, permitted_range_input: Any = None, features_dict: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(ranges, the data's ranges): dice-ml reads the training frame's extremes again on
        every query; they are read once here."""
        if self.categorical_feature_names or "data_df" not in self.__dict__:
            return super().get_features_range(permitted_range_input, features_dict)
        ranges = {f: list(extremes) for f, extremes in self.data_ranges.items()}
        data = ranges.copy()
        ranges.update(permitted_range_input or {})
        return ranges, data

    def prepare_query_instance(self, query_instance: Any) -> pd.DataFrame:
        """The query with each continuous feature as float32 or int32 (dice-ml's rule)."""
        if self.categorical_feature_names or not isinstance(query_instance, pd.DataFrame):
            return super().prepare_query_instance(query_instance)
        kinds = set(self.kinds.values())
        if set(query_instance.columns) != set(self.kinds) or len(kinds) != 1:
            return super().prepare_query_instance(query_instance)
        return query_instance.reset_index(drop=True).astype(
            np.float32 if kinds == {"float"} else np.int32
        )

    def ensure_consistent_type(self, output_df: pd.DataFrame, query_instance: Any) -> pd.DataFrame:
        """``output_df`` with each of the query's columns cast to the query's dtype."""
        if not isinstance(query_instance, pd.DataFrame):
            return super().ensure_consistent_type(output_df, query_instance)
        want = dict(zip(query_instance.columns, query_instance.dtypes, strict=True))
        have = dict(zip(output_df.columns, output_df.dtypes, strict=True))
        if len(have) != output_df.shape[1] or not want.keys() <= have.keys():
            return super().ensure_consistent_type(output_df, query_instance)
        if all(have[name] == dtype for name, dtype in want.items()):
            return output_df.copy()
        if len(set(have.values())) != 1 or not _numeric(want.values()):
            return super().ensure_consistent_type(output_df, query_instance)
        # one dtype in: read the frame as one array, cast column by column
        block = output_df.to_numpy()
        columns = {
            name: block[:, j].astype(want.get(name, dtype))
            for j, (name, dtype) in enumerate(have.items())
        }
        return pd.DataFrame(columns, index=output_df.index.copy())


def sample(
    x: np.ndarray,
    vary: Sequence[int],
    ranges: Sequence[tuple[Any, Any] | None],
    digits: Sequence[int | None],
    score: Callable[[np.ndarray], np.ndarray],
    total: int,
    desired: tuple[float, float],
    size: int,
    seed: int,
) -> np.ndarray:
    """dice-ml's random method for one query ``x`` (F,): counterfactuals (k, F), k <= total,
    with score(row) in ``desired``; none found: (0, F).

    ``vary`` are the features it changes, in dice-ml's order; ``ranges[j]`` and
    ``digits[j]`` feature j's sampling range and decimal precision (read for varied ones),
    the very objects dice-ml would use (a float32 bound rounds as float32); ``score`` maps
    (size, F) rows to (size,) scores."""
    rs = np.random.RandomState(seed)
    n_features = len(x)
    candidates = np.repeat(np.asarray(x, dtype=float)[None, :], size, axis=0)
    samples = candidates.copy()
    for j in sorted(vary):  # dice-ml seeds again before each varied feature, in column order
        lo, hi = ranges[j]
        rs.seed(seed)
        if digits[j] == 0:
            samples[:, j] = rs.randint(lo, hi + 1, size)
        else:  # np.round is what round() of each numpy float calls
            samples[:, j] = np.round(rs.uniform(lo, hi + (10 ** -digits[j]), size), digits[j])
    # round r changes one more feature of each copy of the query, picked at random
    vary = np.asarray(vary)
    rows = np.arange(size)
    low, high = desired
    found: dict[bytes, np.ndarray] = {}  # first seen first, as drop_duplicates keeps
    for r in range(1, len(vary) + 1):
        pick = vary[rs.choice(len(vary), (size, 1), replace=True)[:, 0]]
        candidates[rows, pick] = samples[rows, pick]
        scores = np.asarray(score(candidates))
        valid = candidates[(low <= scores) & (scores <= high)]
        if not len(valid):  # dice-ml asks whether to stop only in a round that found some
            continue
        keys = valid + 0.0  # -0.0 == 0.0 and NaN == NaN, as pandas tells duplicates
        keys[np.isnan(keys)] = np.nan
        for key, row in zip(keys, valid, strict=True):
            found.setdefault(key.tobytes(), row)
        if r >= 2 and len(found) >= total:  # dice-ml changes two features at least
            break
    if not found:
        return np.empty((0, n_features))
    kept = np.stack(list(found.values()))
    if len(kept) > total:  # DataFrame.sample's draw
        kept = kept[rs.choice(len(kept), size=total, replace=False)]
    return kept


class ArrayRandom(DiceRandom):
    """dice-ml's random sampling explainer with :func:`sample` inside.
    ``ArrayRandom(data_interface, model_interface)``."""

    def _find_features_having_missing_values(self, data: Any) -> list[str]:
        """The columns of ``data`` with a missing value (numeric: NaN), read as one array."""
        if not (isinstance(data, pd.DataFrame) and _numeric(data.dtypes)):
            return super()._find_features_having_missing_values(data)
        missing = np.isnan(data.to_numpy(dtype=float)).any(axis=0)
        return [name for name, m in zip(data.columns.tolist(), missing, strict=True) if m]

    def counterfactuals(
        self,
        x: np.ndarray,
        total_CFs: int,
        desired_range: tuple[float, float],
        features_to_vary: list[str],
        permitted_range: dict[str, Any] | None,
        sample_size: int,
        random_seed: int,
        score: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """``generate_counterfactuals``'s counterfactuals of the query ``x`` (F,), in the data's
        feature order, as an array (k, F): (0, F) where dice-ml raises for finding none.
        ``score`` scores rows (n, F) as the model does; no checks of the arguments."""
        ranges, _ = self.data_interface.get_features_range(permitted_range)
        return self._sample(
            x, total_CFs, desired_range, features_to_vary, ranges, sample_size, random_seed, score
        )

    def _sample(
        self,
        x: np.ndarray,
        total: int,
        desired: Sequence[float],
        vary: list[str],
        ranges: dict[str, Any],
        size: int,
        seed: int,
        score: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """:func:`sample` of ``x`` (F,) in the data's feature order, features and ranges by
        name."""
        names = self.data_interface.feature_names
        digits = self.data_interface.get_decimal_precisions(output_type="dict")
        return sample(
            x,
            [names.index(f) for f in vary],
            [ranges.get(f) for f in names],
            [digits.get(f) for f in names],
            score,
            total,
            tuple(desired),
            size,
            seed,
        )

    def _generate_counterfactuals(
        self,
        query_instance: pd.DataFrame,
        total_CFs: int,
        desired_range: Any = None,
        desired_class: Any = "opposite",
        permitted_range: Any = None,
        features_to_vary: Any = "all",
        stopping_threshold: float = 0.5,
        posthoc_sparsity_param: float | None = 0.1,
        posthoc_sparsity_algorithm: str = "linear",
        sample_size: int = 1000,
        random_seed: int | None = None,
        verbose: bool = False,
        limit_steps_ls: int = 10000,
    ) -> Any:
        data = self.data_interface
        if (
            self.model.model_type != ModelTypes.Regressor
            or random_seed is None
            or posthoc_sparsity_param
            or data.categorical_feature_names
            or not _numeric(query_instance.dtypes)
        ):
            return super()._generate_counterfactuals(
                query_instance,
                total_CFs,
                desired_range=desired_range,
                desired_class=desired_class,
                permitted_range=permitted_range,
                features_to_vary=features_to_vary,
                stopping_threshold=stopping_threshold,
                posthoc_sparsity_param=posthoc_sparsity_param,
                posthoc_sparsity_algorithm=posthoc_sparsity_algorithm,
                sample_size=sample_size,
                random_seed=random_seed,
                verbose=verbose,
                limit_steps_ls=limit_steps_ls,
            )
        vary = self.setup(features_to_vary, permitted_range, query_instance, None)
        self.features_to_vary = vary
        names, outcome = data.feature_names, data.outcome_name
        columns = list(query_instance.columns)
        order = [columns.index(f) for f in names]  # the query's columns in the data's order
        back = [names.index(f) for f in columns]
        query_pred = self.predict_fn(query_instance)[0]
        self.num_output_nodes = None
        self.target_cf_range = self.infer_target_cfs_range(desired_range)
        self.total_CFs, self.stopping_threshold = total_CFs, stopping_threshold

        def score(rows: np.ndarray) -> np.ndarray:  # the model as dice-ml asks it: a frame
            return self.predict_fn(pd.DataFrame(rows[:, back], columns=columns))

        kept = self._sample(
            query_instance.to_numpy()[0, order],
            total_CFs,
            self.target_cf_range,
            vary,
            self.feature_range,
            sample_size,
            random_seed,
            score,
        )
        self.total_cfs_found, self.valid_cfs_found = 0, False
        self.cfs_preds = self.cfs_pred_scores = self.final_cfs = None
        final = None
        if len(kept):
            self.cfs_pred_scores = score(kept)
            final = pd.DataFrame(kept, columns=names)
            final[outcome] = self.get_model_output_from_scores(self.cfs_pred_scores)
            final[outcome] = final[outcome].round(self.outcome_precision)
            self.total_cfs_found = len(final)
            self.valid_cfs_found = self.total_cfs_found >= total_CFs
            self.cfs_preds = final[outcome].to_numpy()[:, None]
            self.final_cfs = kept
        query = data.prepare_query_instance(query_instance)
        query[outcome] = np.array(
            np.round(self.get_model_output_from_scores((query_pred,)), self.outcome_precision)
        )
        sparse = None if final is None else final.copy()
        query, final, sparse = self.decode_to_original_labels(query, final, sparse)
        return diverse_counterfactuals.CounterfactualExamples(
            data_interface=data,
            final_cfs_df=final,
            test_instance_df=query,
            final_cfs_df_sparse=sparse,
            posthoc_sparsity_param=posthoc_sparsity_param,
            desired_class=desired_class,
            desired_range=desired_range,
            model_type=self.model.model_type,
        )
