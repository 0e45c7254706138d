"""Reproductions of the SafeAR paper's tables as plain functions.

* :func:`reproduce_insurance` -- App. B, Table 17 (synthetic insurance, H = 8).
* :func:`reproduce_dataset` -- Tables 1 and 3 (Adult / German Credit, H = 12),
  :func:`reproduce_dataset_full` also returns the Mann-Whitney tests
  (Tables 10-12) and per-individual measures.

Every function takes a ``seed`` and builds its own ``numpy.random.Generator``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .datasets import DatasetMDP, build_dataset_mdp
from .examples import insurance_mdp
from .risk import (
    DEFAULT_ALPHAS,
    exact_measures,
    group_disparity,
    per_start_measures,
    rollout,
    summarize,
)
from .solvers import grsvi

# Paper values of Table 17 (App. B), for side-by-side comparison only.
PAPER_TABLE17 = pd.DataFrame({
    "beta": [0.0, 0.5, 1.0],
    "rho": [0.999, 1.000, 1.000],
    "cost_mean": [1.9, 2.2, 3.0],
    "cost_var": [1.7, 0.2, 0.0],
    "var95": [5.0, 3.0, 3.0],
    "cvar95": [6.5, 4.1, np.nan],
})

TABLE17_COLUMNS = ["beta", "rho", "cost_mean", "cost_var", "var95", "cvar95"]
METRIC_COLUMNS = ["rho", "cost_mean", "cost_var", "var80", "cvar80", "var95", "cvar95", "sparsity", "proximity"]


def _write(df: pd.DataFrame, out_dir, name: str) -> None:
    if out_dir is not None:
        p = Path(out_dir)
        p.mkdir(parents=True, exist_ok=True)
        # NaN (undefined CVaR) is written as an empty field.
        df.to_csv(p / name, index=False, na_rep="")


def reproduce_insurance(out_dir=None, n_rollouts: int = 1000, seed: int = 0,
                        betas: Sequence[float] = (0.0, 0.5, 1.0), horizon: int = 8,
                        exact: bool = False) -> pd.DataFrame:
    """Table 17: G-RSVI policies for the insurance example, measured from ``s0``.

    Monte-Carlo with ``n_rollouts`` rollouts per policy (the paper used 1000),
    or the exact cost distribution when ``exact=True``. Columns: beta, rho,
    cost_mean, cost_var, var95, cvar95 (NaN = undefined: no mass above VaR).
    Writes ``out_dir/table17.csv`` when ``out_dir`` is given.
    """
    mdp = insurance_mdp(horizon)
    rng = np.random.default_rng(seed)
    rows = []
    for beta in betas:
        pol = grsvi(mdp, beta)
        if exact:
            m = exact_measures(mdp, pol, 0, alphas=(0.95,))
        else:
            ro = rollout(mdp, pol, [0], n_rollouts, rng=rng)
            m = summarize(per_start_measures(mdp, ro, alphas=(0.95,)))
        rows.append({"beta": float(beta), **{k: m[k] for k in TABLE17_COLUMNS[1:]}})
    df = pd.DataFrame(rows, columns=TABLE17_COLUMNS)
    _write(df, out_dir, "table17.csv")
    return df


@dataclass
class DatasetReproduction:
    """Everything :func:`reproduce_dataset_full` computes.

    table : Tables 1/3 shape, one row per (group, beta); groups "all", "Female", "Male".
    mannwhitney : Tables 10-12 shape, one row per (beta, metric).
    per_individual : per-individual measures with columns beta, group, start and metrics.
    """

    table: pd.DataFrame
    mannwhitney: pd.DataFrame
    per_individual: pd.DataFrame
    accuracy: float
    n_states: int
    solve_seconds: dict


def reproduce_dataset_full(
    name: str,
    out_dir=None,
    betas: Sequence[float] = (0.0, 0.5, 1.0),
    n_individuals: int | None = None,
    seed: int = 0,
    *,
    n_rollouts: int = 100,
    horizon: int = 12,
    risk: str = "std",
    table: int = 5,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    n_estimators: int = 100,
    prebuilt: DatasetMDP | None = None,
) -> DatasetReproduction:
    """Tables 1 and 3 (and 10-12) for ``"adult"`` or ``"german"``.

    Individuals are the dataset rows the random forest rejects (the paper's
    n = 25923 / 281); ``n_individuals`` draws a seeded subsample. Each
    individual gets ``n_rollouts`` rollouts of every policy; measures are
    computed per individual and then averaged (undefined CVaRs skipped).
    Writes ``{name}_table.csv`` and ``{name}_mannwhitney.csv`` to ``out_dir``.
    """
    d = prebuilt if prebuilt is not None else build_dataset_mdp(
        name, horizon, seed=seed, table=table, n_estimators=n_estimators)
    mdp = d.mdp if d.mdp.horizon == horizon else d.mdp.with_horizon(horizon)
    rng = np.random.default_rng(seed)
    rows_idx = np.flatnonzero(d.predicted == 0)
    if n_individuals is not None and n_individuals < rows_idx.size:
        rows_idx = np.sort(rng.choice(rows_idx, size=n_individuals, replace=False))
    starts = d.states[rows_idx]
    gender = np.where(d.X["gender"].to_numpy()[rows_idx] == 1, "Male", "Female")
    tables, tests, per = [], [], []
    solve_s = {}
    for beta in betas:
        t0 = time.perf_counter()
        pol = grsvi(mdp, beta, risk=risk)
        solve_s[float(beta)] = time.perf_counter() - t0
        ro = rollout(mdp, pol, starts, n_rollouts, rng=rng)
        ps = per_start_measures(mdp, ro, alphas)
        ps.insert(0, "group", gender)
        ps.insert(0, "beta", float(beta))
        per.append(ps)
        for grp, mask in (("all", np.ones(len(ps), bool)), ("Female", gender == "Female"), ("Male", gender == "Male")):
            s = summarize(ps.loc[mask].drop(columns=["beta"]))
            tables.append({"dataset": name, "group": grp, "beta": float(beta), **s})
        mw = group_disparity(ps.drop(columns=["beta", "group"]), gender, pair=("Female", "Male"))
        mw.insert(0, "beta", float(beta))
        mw.insert(0, "dataset", name)
        tests.append(mw)
    tab = pd.DataFrame(tables)
    tab = tab[["dataset", "group", "n", "beta", *[c for c in tab.columns if c not in ("dataset", "group", "n", "beta")]]]
    res = DatasetReproduction(
        table=tab, mannwhitney=pd.concat(tests, ignore_index=True),
        per_individual=pd.concat(per, ignore_index=True), accuracy=d.accuracy,
        n_states=mdp.n_states, solve_seconds=solve_s,
    )
    _write(res.table, out_dir, f"{name}_table.csv")
    _write(res.mannwhitney, out_dir, f"{name}_mannwhitney.csv")
    return res


def reproduce_dataset(
    name: str,
    out_dir=None,
    betas: Sequence[float] = (0.0, 0.5, 1.0),
    n_individuals: int | None = None,
    seed: int = 0,
    **kwargs,
) -> pd.DataFrame:
    """Tables 1/3 as one DataFrame (see :func:`reproduce_dataset_full` for options)."""
    return reproduce_dataset_full(name, out_dir, betas, n_individuals, seed, **kwargs).table


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m policies.safear.reproduce OUT_DIR [--quick]``: write all tables and the insurance plot."""
    import argparse

    from .plot import plot_policy_rollouts

    ap = argparse.ArgumentParser(description="Reproduce SafeAR Tables 1, 3, 10-12 and 17")
    ap.add_argument("out_dir")
    ap.add_argument("--quick", action="store_true", help="small configuration (200 individuals, 30 rollouts)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    pd.set_option("display.width", 200)
    print(reproduce_insurance(args.out_dir, seed=args.seed).round(3).to_string(index=False))
    mdp = insurance_mdp(8)
    plot_policy_rollouts(mdp, {f"beta={b:g}": grsvi(mdp, b) for b in (0.0, 0.5, 1.0)}, 0,
                         Path(args.out_dir) / "insurance_policies.png", rng=np.random.default_rng(args.seed),
                         title="Synthetic insurance example (H=8)")
    kw = {"n_individuals": 200, "n_rollouts": 30} if args.quick else {}
    for name in ("german", "adult"):
        res = reproduce_dataset_full(name, args.out_dir, seed=args.seed, **kw)
        print(f"\n{name}: classifier accuracy {res.accuracy:.3f}, {res.n_states} states")
        print(res.table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
