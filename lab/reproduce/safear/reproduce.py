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

from lab.reproduce.safear.datasets import DatasetMDP, build_dataset_mdp
from lab.reproduce.safear.examples import insurance_mdp
from policies.safear.risk import (
    DEFAULT_ALPHAS,
    exact_measures,
    group_disparity,
    per_start_measures,
    rollout,
    summarize,
)
from policies.safear.solvers import grsvi

# Paper values of Table 17 (App. B), for side-by-side comparison only.
PAPER_TABLE17 = pd.DataFrame(
    {
        "beta": [0.0, 0.5, 1.0],
        "rho": [0.999, 1.000, 1.000],
        "cost_mean": [1.9, 2.2, 3.0],
        "cost_var": [1.7, 0.2, 0.0],
        "var95": [5.0, 3.0, 3.0],
        "cvar95": [6.5, 4.1, np.nan],
    }
)

_PAPER_ROWS = """
adult all 25923 0 0.994 3.49 1.23 3.81 6.31 4.76 7.53 2.09 2.87
adult all 25923 0.25 0.994 3.51 0.89 3.64 6.10 4.46 7.43 2.16 3.06
adult all 25923 0.5 0.993 3.59 0.77 3.66 6.11 4.44 7.40 2.21 3.18
adult example 1 0 1.000 4.63 1.86 5.80 8.54 6.80 9.80 3.92 3.92
adult example 1 0.5 1.000 4.79 0.13 4.80 6.80 4.80 6.80 3.00 4.86
adult example 1 0.75 1.000 4.79 0.13 4.80 6.80 4.80 6.80 3.00 4.86
adult Female 9824 0 0.988 4.56 1.41 4.76 7.07 5.70 8.00 2.58 3.77
adult Female 9824 0.25 0.987 4.57 1.18 4.64 6.95 5.48 7.84 2.55 3.87
adult Female 9824 0.5 0.985 4.61 1.11 4.66 6.99 5.51 7.89 2.55 3.93
adult Male 16099 0 0.997 2.84 1.12 3.27 5.79 4.30 7.26 1.79 2.32
adult Male 16099 0.25 0.997 2.87 0.72 3.08 5.51 3.95 7.15 1.93 2.56
adult Male 16099 0.5 0.998 2.98 0.57 3.10 5.48 3.92 7.08 2.01 2.73
german all 281 0 1.000 1.65 0.48 1.96 3.66 2.63 4.56 1.26 1.33
german all 281 0.25 1.000 1.67 0.35 1.87 3.51 2.51 4.50 1.34 1.43
german all 281 0.5 1.000 1.70 0.30 1.90 3.56 2.48 4.40 1.40 1.50
german example 1 0 1.000 2.48 3.49 4.00 6.13 7.00 8.33 1.00 1.00
german example 1 0.5 1.000 2.81 1.19 4.00 5.44 5.00 6.00 1.00 2.00
german example 1 0.75 1.000 3.87 0.65 4.40 5.50 5.40 6.67 2.00 3.00
german Female 103 0 1.000 1.72 0.56 2.08 3.70 2.84 4.66 1.25 1.36
german Female 103 0.25 1.000 1.75 0.38 2.00 3.61 2.67 4.63 1.33 1.47
german Female 103 0.5 1.000 1.79 0.33 2.02 3.64 2.59 4.51 1.41 1.57
german Male 178 0 1.000 1.61 0.43 1.89 3.64 2.61 4.62 1.27 1.32
german Male 178 0.25 1.000 1.62 0.37 1.81 3.50 2.41 4.42 1.35 1.41
german Male 178 0.5 1.000 1.65 0.29 1.84 3.50 2.33 4.29 1.40 1.46
"""

# Paper values of Tables 1 and 3 (H = 12, 100 trials per individual), for comparison only.
_MEASURES = (
    "beta",
    "rho",
    "cost_mean",
    "cost_var",
    "var80",
    "cvar80",
    "var95",
    "cvar95",
    "sparsity",
    "proximity",
)
PAPER_DATASET_TABLES = pd.DataFrame(
    [line.split() for line in _PAPER_ROWS.strip().splitlines()],
    columns=["dataset", "group", "n", *_MEASURES],
).astype({"n": int, **dict.fromkeys(_MEASURES, float)})

# The paper's example individuals (Table 1, Figs. 5-6): "Instance #16" (Adult) and "#44"
# (German). Their feature values are not given; here they are read as positions in the
# list of rejected rows, so they are different people from the paper's.
EXAMPLE_INSTANCE = {"adult": 16, "german": 44}
PAPER_BETAS = (0.0, 0.25, 0.5)
EXAMPLE_BETAS = (0.0, 0.5, 0.75)

TABLE17_COLUMNS = ["beta", "rho", "cost_mean", "cost_var", "var95", "cvar95"]
METRIC_COLUMNS = [
    "rho",
    "cost_mean",
    "cost_var",
    "var80",
    "cvar80",
    "var95",
    "cvar95",
    "sparsity",
    "proximity",
]


def _write(df: pd.DataFrame, out_dir, name: str) -> None:
    if out_dir is not None:
        p = Path(out_dir)
        p.mkdir(parents=True, exist_ok=True)
        # NaN (undefined CVaR) is written as an empty field.
        df.to_csv(p / name, index=False, na_rep="")


def reproduce_insurance(
    out_dir=None,
    n_rollouts: int = 1000,
    seed: int = 0,
    betas: Sequence[float] = (0.0, 0.5, 1.0),
    horizon: int = 8,
    exact: bool = False,
) -> pd.DataFrame:
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


def _group_rows(name: str, beta: float, ps: pd.DataFrame, gender: np.ndarray) -> list[dict]:
    """Table rows of one beta: the per-individual measures ``ps`` averaged over everyone,
    the women and the men (``gender`` (n,) "Female" / "Male")."""
    rows = []
    for grp, mask in (
        ("all", np.ones(len(ps), bool)),
        ("Female", gender == "Female"),
        ("Male", gender == "Male"),
    ):
        s = summarize(ps.loc[mask].drop(columns=["beta"]))
        rows.append({"dataset": name, "group": grp, "beta": beta, **s})
    return rows


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
    d = (
        prebuilt
        if prebuilt is not None
        else build_dataset_mdp(name, horizon, seed=seed, table=table, n_estimators=n_estimators)
    )
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
        tables += _group_rows(name, float(beta), ps, gender)
        mw = group_disparity(ps.drop(columns=["beta", "group"]), gender, pair=("Female", "Male"))
        mw.insert(0, "beta", float(beta))
        mw.insert(0, "dataset", name)
        tests.append(mw)
    tab = pd.DataFrame(tables)
    lead = ["dataset", "group", "n", "beta"]
    tab = tab[[*lead, *[c for c in tab.columns if c not in lead]]]
    res = DatasetReproduction(
        table=tab,
        mannwhitney=pd.concat(tests, ignore_index=True),
        per_individual=pd.concat(per, ignore_index=True),
        accuracy=d.accuracy,
        n_states=mdp.n_states,
        solve_seconds=solve_s,
    )
    _write(res.table, out_dir, f"{name}_table.csv")
    _write(res.mannwhitney, out_dir, f"{name}_mannwhitney.csv")
    return res


def rejected_start(d: DatasetMDP, position: int) -> tuple[int, int]:
    """(dataset row, state) of the ``position``-th individual the classifier rejects."""
    rows = np.flatnonzero(d.predicted == 0)
    if not 0 <= position < rows.size:
        raise ValueError(
            f"instance must be in [0, {rows.size}) (rejected individuals of {d.name}), got {position}"
        )
    r = int(rows[position])
    return r, int(d.states[r])


def reproduce_example(
    d: DatasetMDP,
    position: int,
    betas: Sequence[float] = EXAMPLE_BETAS,
    seed: int = 0,
    n_rollouts: int = 100,
    horizon: int = 12,
    risk: str = "std",
    alphas: Sequence[float] = DEFAULT_ALPHAS,
) -> pd.DataFrame:
    """Table 1's example-instance rows: one rejected individual, ``n_rollouts`` trials per policy."""
    mdp = d.mdp if d.mdp.horizon == horizon else d.mdp.with_horizon(horizon)
    row, start = rejected_start(d, position)
    rng = np.random.default_rng(seed)
    rows = []
    for beta in betas:
        ro = rollout(mdp, grsvi(mdp, beta, risk=risk), [start], n_rollouts, rng=rng)
        m = summarize(per_start_measures(mdp, ro, alphas))
        rows.append(
            {
                "dataset": d.name,
                "group": "example",
                "instance": position,
                "row": row,
                "beta": float(beta),
                **{k: v for k, v in m.items() if k != "n"},
            }
        )
    return pd.DataFrame(rows)


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
    """``python -m lab.reproduce.safear.reproduce OUT_DIR [--quick]``: write all tables and the insurance plot."""
    import argparse

    from lab.reproduce.safear.plot import plot_policy_rollouts

    ap = argparse.ArgumentParser(description="Reproduce SafeAR Tables 1, 3, 10-12 and 17")
    ap.add_argument("out_dir")
    ap.add_argument(
        "--quick", action="store_true", help="small configuration (200 individuals, 30 rollouts)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(reproduce_insurance(args.out_dir, seed=args.seed).round(3).to_string(index=False))
    mdp = insurance_mdp(8)
    plot_policy_rollouts(
        mdp,
        {f"beta={b:g}": grsvi(mdp, b) for b in (0.0, 0.5, 1.0)},
        0,
        Path(args.out_dir) / "insurance_policies.png",
        rng=np.random.default_rng(args.seed),
        title="Synthetic insurance example (H=8)",
    )
    kw = {"n_individuals": 200, "n_rollouts": 30} if args.quick else {}
    for name in ("german", "adult"):
        res = reproduce_dataset_full(name, args.out_dir, seed=args.seed, **kw)
        print(f"\n{name}: classifier accuracy {res.accuracy:.3f}, {res.n_states} states")
        print(res.table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
