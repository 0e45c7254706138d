"""The ARLIM reproduction (specs/improvement-bandits.md §4): paired trials of the static
task as a study of the ``arlim-trial`` experiment, the paper's COMPAS figures beside
ours, the synthetic regret check, and the tolerance and ordering checks.

Trials are the study's seeds, each one run of :func:`lab.study.trials.improvement.run_trial`
(every method and noise level on the same draws), stored and resumed by the one
experiment runner (:mod:`lab.study`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError, problem, require_int
from lab.reproduce.checks import Check, checks_frame
from lab.study import Study, collect
from lab.study.trials.improvement import METHODS, XIS, TrialParams

QUICK_XIS = (0.0, 0.25)
SYNTHETIC_SEEDS = 5
#: the paper's COMPAS RF figures at ξ = 0 (Fig. 2, read off its plots): (mean, ±) or a range
PAPER_XI0: dict[str, dict[str, tuple[float, float]]] = {
    "LinUCB": {"mer": (0.83, 0.04), "improvement": (0.87, 0.04), "cost": (0.22, 0.06)},
    "BwO-UCB": {"mer": (0.78, 0.05), "improvement": (0.88, 0.05), "cost_range": (0.5, 1.2)},
    "ProtoAR": {"mer": (0.42, 0.12), "improvement": (0.42, 0.12), "cost": (0.17, 0.04)},
    "TAP": {"mer": (0.42, 0.10), "improvement": (0.44, 0.10), "cost_range": (0.25, 0.55)},
}
#: the paper's LinUCB at ξ = 0.25 (Fig. 4): final MER and improvement
PAPER_LINUCB_XI025 = {"mer": (0.74, 0.03), "improvement": (0.82, 0.04)}
#: the synthetic regret check: log-log slope of cumulative regret (mean, ±)
PAPER_SLOPE = {"LinUCB": (0.79, 0.08), "ProtoAR": (1.00, 0.02)}
SUMMARY = ("mer", "mer200", "improvement", "cost", "ms_per_round")


def trial_study(task: str, seeds: tuple[int, ...], **params: Any) -> Study:
    """The study of ``arlim-trial`` runs: one per seed, ``params`` of :class:`TrialParams`.

    Built directly (not from a TOML layout): the trial takes no policy and no sweep.
    """
    settings = TrialParams(task=task, **params).model_dump(mode="json")
    name = f"arlim-{task}"
    return Study(
        name=name,
        base=resolve_scenario("paper"),
        policy="",
        axes=(),
        seeds=tuple(seeds),
        metrics=(),
        report_metrics=("mer", "improvement", "cost"),
        description=f"ARLIM static task on {task}: paired trials",
        spec={"name": name, "experiment": "arlim-trial", "set": settings, "seeds": list(seeds)},
        experiment="arlim-trial",
        settings=settings,
    )


def run_trials(
    task: str,
    seeds: tuple[int, ...],
    store: str | Path | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    **params: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves, rows) of the trials: per-round MER curves and one row per (trial, method, ξ)."""
    study = trial_study(task, seeds, **params)
    ticks, runs = collect(study, store, workers=workers, progress=progress)
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"trial seed {failed['seed'].iloc[0]}: {failed['error'].iloc[0]}")
    return ticks, runs


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over trials of :data:`SUMMARY` per (method, ξ), methods in paper order."""
    g = runs.groupby(["method", "xi"], sort=False)[list(SUMMARY)]
    mean, sd = g.mean(), g.std(ddof=1).add_suffix("_sd")
    table = pd.concat([mean, sd], axis=1).reset_index()
    table.insert(2, "trials", g.size().to_numpy())
    order = {m: i for i, m in enumerate(METHODS)}
    table = table.sort_values(
        ["method", "xi"], key=lambda c: c.map(order) if c.name == "method" else c, kind="stable"
    )
    cols = ["method", "xi", "trials"] + [x for c in SUMMARY for x in (c, f"{c}_sd")]
    return table[cols].reset_index(drop=True)


def with_paper(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the paper's ξ = 0 figures (and LinUCB's at ξ = 0.25) beside ours:
    ``<col>_paper`` and ``<col>_paper_pm`` (a range's ends for BwO-UCB and TAP cost)."""
    out = table.copy()
    for col in ("mer", "improvement", "cost"):
        out[f"{col}_paper"] = math.nan
        out[f"{col}_paper_pm"] = math.nan
    for i, r in out.iterrows():
        ref = PAPER_XI0.get(r["method"], {}) if r["xi"] == 0 else {}
        if r["method"] == "LinUCB" and abs(r["xi"] - 0.25) < 1e-12:
            ref = PAPER_LINUCB_XI025
        for col in ("mer", "improvement", "cost"):
            if col in ref:
                out.loc[i, [f"{col}_paper", f"{col}_paper_pm"]] = ref[col]
            elif col == "cost" and "cost_range" in ref:
                lo, hi = ref["cost_range"]
                out.loc[i, ["cost_paper", "cost_paper_pm"]] = ((lo + hi) / 2, (hi - lo) / 2)
    return out


def synthetic_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per method: mean and sd over seeds of the log-log regret slope and the final
    cumulative regret, with the paper's slope."""
    g = runs.groupby("method", sort=False)
    out = pd.DataFrame(
        {
            "seeds": g.size(),
            "regret_slope": g["regret_slope"].mean(),
            "regret_slope_sd": g["regret_slope"].std(ddof=1),
            "regret": g["regret"].mean(),
            "regret_sd": g["regret"].std(ddof=1),
            "mer": g["mer"].mean(),
        }
    ).reset_index()
    out["regret_slope_paper"] = [PAPER_SLOPE.get(m, (math.nan,))[0] for m in out["method"]]
    return out


def _cell(table: pd.DataFrame, method: str, xi: float, col: str) -> float:
    row = table[(table["method"] == method) & (np.isclose(table["xi"], xi))]
    return float(row[col].iloc[0]) if len(row) else math.nan


def _within(name: str, value: float, mean: float, pm: float) -> Check:
    return Check(name, value, f"{mean:g} ± {pm:g}", abs(value - mean) <= pm + 1e-12)


def checks(
    table: pd.DataFrame, synthetic: pd.DataFrame | None = None, quick: bool = False
) -> list[Check]:
    """The §4 checks on a :func:`summarise` table: tolerances and orderings; with
    ``synthetic`` (a :func:`synthetic_table`) the regret check too. ``quick`` keeps the
    orderings of methods only: no tolerances, bandits beat baselines by any margin, and
    no MER(1000) > MER(200)."""
    out: list[Check] = []
    xis = sorted(table["xi"].unique())
    x0, xmax = xis[0], xis[-1]
    has = set(table["method"])
    if not quick and x0 == 0:
        for method, ref in PAPER_XI0.items():
            if method not in has:
                continue
            for col in ("mer", "improvement", "cost"):
                v = _cell(table, method, 0.0, col)
                if col in ref:
                    out.append(_within(f"{method} {col} (ξ = 0)", v, *ref[col]))
                elif col == "cost" and "cost_range" in ref:
                    lo, hi = ref["cost_range"]
                    out.append(
                        Check(f"{method} cost (ξ = 0)", v, f"[{lo:g}, {hi:g}]", lo <= v <= hi)
                    )
        if "LinUCB" in has and abs(xmax - 0.25) < 1e-12:
            for col, ref in PAPER_LINUCB_XI025.items():
                out.append(
                    _within(f"LinUCB {col} (ξ = 0.25)", _cell(table, "LinUCB", 0.25, col), *ref)
                )
    if "ProtoAR" in has and x0 == 0:
        at0 = {m: _cell(table, m, 0.0, "cost") for m in has}
        low = min(at0, key=at0.get)
        out.append(
            Check(
                "ProtoAR has the lowest cost (ξ = 0)",
                at0["ProtoAR"],
                f"lowest (lowest: {low})",
                low == "ProtoAR",
            )
        )
    if "LinUCB" in has:
        mers = [_cell(table, "LinUCB", x, "mer") for x in xis]
        rises = max((b - a for a, b in zip(mers, mers[1:], strict=False)), default=0.0)
        out.append(
            Check(
                "LinUCB MER non-increasing in ξ (within 0.02)",
                rises,
                "largest rise <= 0.02",
                rises <= 0.02,
            )
        )
    if {"LinUCB", "BwO-UCB"} <= has and abs(xmax - 0.25) < 1e-12 and not quick:
        gap = _cell(table, "BwO-UCB", xmax, "mer") - _cell(table, "LinUCB", xmax, "mer")
        out.append(Check("BwO-UCB >= LinUCB - 0.02 (ξ = 0.25)", gap, ">= -0.02", gap >= -0.02))
    margin = 0.0 if quick else 0.15  # two trials show the order, not the size of the gap
    for bandit in ("LinUCB", "BwO-UCB"):
        for base in ("ProtoAR", "TAP"):
            if {bandit, base} <= has:
                gap = min(
                    _cell(table, bandit, x, "mer") - _cell(table, base, x, "mer") for x in xis
                )
                out.append(
                    Check(
                        f"{bandit} beats {base} by >= {margin:g} at every ξ",
                        gap,
                        f"smallest gap >= {margin:g}",
                        gap >= margin,
                    )
                )
    if "ProtoAR" in has and len(xis) > 1 and x0 == 0:
        rise = _cell(table, "ProtoAR", xis[1], "mer") - _cell(table, "ProtoAR", 0.0, "mer")
        out.append(Check(f"ProtoAR rises from ξ = 0 to {xis[1]:g}", rise, "> 0", rise > 0))
    for bandit in ("LinUCB", "BwO-UCB"):
        if bandit in has and not quick:  # the shape of a curve, not an ordering of methods
            gain = _cell(table, bandit, x0, "mer") - _cell(table, bandit, x0, "mer200")
            out.append(Check(f"{bandit} MER(1000) > MER(200) (ξ = {x0:g})", gain, "> 0", gain > 0))
    if synthetic is not None and len(synthetic):
        s = synthetic.set_index("method")
        if not quick:
            for method, ref in PAPER_SLOPE.items():
                if method in s.index:
                    out.append(
                        _within(
                            f"synthetic: {method} regret slope",
                            float(s.loc[method, "regret_slope"]),
                            *ref,
                        )
                    )
        if {"LinUCB", "ProtoAR"} <= set(s.index):
            ratio = float(s.loc["LinUCB", "regret"] / s.loc["ProtoAR", "regret"])
            out.append(
                Check("synthetic: LinUCB regret < ½ ProtoAR's", ratio, "ratio < 0.5", ratio < 0.5)
            )
            slopes = float(s.loc["LinUCB", "regret_slope"] - s.loc["ProtoAR", "regret_slope"])
            out.append(Check("synthetic: LinUCB slope below ProtoAR's", slopes, "< 0", slopes < 0))
    return out


def late_gain(runs: pd.DataFrame) -> pd.DataFrame:
    """MER(T) - MER(200) per trial, paired within the trial, at the lowest ξ: per method
    the mean, sd, trials and the 95 % t-interval over trials (``runs``: one row per
    (seed, method, ξ) with ``mer`` and ``mer200``, as in ``trials.csv``). The §4 check
    "MER(1000) > MER(200)" compares the means only; the interval says whether the trial
    count can tell a small gain from none."""
    from scipy import stats

    x0 = runs["xi"].min()
    part = runs[np.isclose(runs["xi"], x0)]
    rows = []
    for method in [m for m in METHODS if m in set(part["method"])]:
        d = part.loc[part["method"] == method, "mer"] - part.loc[part["method"] == method, "mer200"]
        n, mean = len(d), float(d.mean())
        sd = float(d.std(ddof=1)) if n > 1 else math.nan
        half = float(stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)) if n > 1 else math.nan
        rows.append(
            {
                "method": method,
                "xi": x0,
                "trials": n,
                "gain": mean,
                "gain_sd": sd,
                "ci95_low": mean - half,
                "ci95_high": mean + half,
            }
        )
    return pd.DataFrame(rows)


# -- figures -----------------------------------------------------------------------------
COLOURS = {"ProtoAR": "tab:blue", "TAP": "tab:red", "LinUCB": "tab:orange", "BwO-UCB": "tab:green"}


def plot_mer_vs_round(curves: pd.DataFrame, path: str | Path, title: str = "") -> None:
    """Mean MER over trials per round and method, one panel per kept ξ (Figs. 2b, 3b)."""
    from matplotlib.figure import Figure

    levels = sorted(curves["xi"].unique())
    fig = Figure(figsize=(5.2 * len(levels), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(levels)))
    for ax, xi in zip(axes, levels, strict=True):
        part = curves[np.isclose(curves["xi"], xi)]
        for method in METHODS:
            m = part[part["method"] == method]
            if len(m):
                mean = m.groupby("tick")["mer"].mean()
                ax.plot(mean.index, mean.to_numpy(), label=method, color=COLOURS[method])
        ax.set_xlabel("round")
        ax.set_ylabel("mean expected reward (MER)")
        ax.set_title(f"ξ = {xi:g}")
        ax.grid(alpha=0.3)
    axes[0].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_noise_sweep(table: pd.DataFrame, path: str | Path, title: str = "") -> None:
    """Final MER, improvement and cost against ξ (mean ± sd over trials; Fig. 4)."""
    from matplotlib.figure import Figure

    panels = (("mer", "final MER"), ("improvement", "improvement"), ("cost", "cost"))
    fig = Figure(figsize=(15, 3.6))
    axes = fig.subplots(1, len(panels))
    for ax, (col, label) in zip(axes, panels, strict=True):
        for method in METHODS:
            m = table[table["method"] == method]
            if not len(m):
                continue
            x, y, e = m["xi"].to_numpy(), m[col].to_numpy(), m[f"{col}_sd"].fillna(0).to_numpy()
            if method == "BwO-UCB":  # one run stands for every ξ: a band, as in the paper
                ax.axhline(y[0], color=COLOURS[method], ls="--", label=method)
                ax.axhspan(y[0] - e[0], y[0] + e[0], color=COLOURS[method], alpha=0.2)
            else:
                ax.errorbar(x, y, e, marker="o", capsize=4, color=COLOURS[method], label=method)
        ax.set_xlabel("noise level ξ")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# -- the whole reproduction -------------------------------------------------------------
@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproduce` wrote and found."""

    table: pd.DataFrame
    synthetic: pd.DataFrame | None
    checks: list[Check]
    files: list[Path]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def reproduce(
    out: str | Path,
    *,
    trials: int = 10,
    quick: bool = False,
    task: str = "compas",
    rounds: int = 1000,
    synthetic: bool = True,
    store: str | Path | None = None,
    workers: int = 1,
    progress: Callable[[str, int, int], None] | None = None,
    methods: tuple[str, ...] | None = None,
    xis: tuple[float, ...] | None = None,
) -> Reproduction:
    """Run the reproduction into ``out``: ``table.csv`` (method × ξ, mean ± sd, the paper's
    figures beside), ``trials.csv`` (one row per trial), ``mer_vs_round.png``,
    ``noise_sweep.png``, ``synthetic.csv`` and ``checks.csv``.

    ``quick``: 2 trials (unless ``trials`` says fewer), ξ in {0, 0.25}, orderings only.
    ``task`` "german" is the stand-in data set (orderings only; no synthetic check).
    ``store`` keeps the runs there (a rerun resumes); ``progress(what, done, total)``.
    ``methods`` and ``xis`` narrow the trials (default: all four methods, the six ξ; a
    supplementary many-trial run of the cheap methods, say). ``late_gain.csv`` holds the
    paired MER(T) - MER(200) interval of :func:`late_gain`.
    """
    from lab.datasets import DATASETS

    trials = require_int("--trials", trials, 1, 10_000)
    rounds = require_int("--rounds", rounds, 1, 1_000_000)
    if task not in DATASETS:
        raise ConfigError(problem("--dataset", task, ", ".join(DATASETS)))
    if methods is not None:
        bad = [m for m in methods if m not in METHODS]
        if bad or not methods:
            raise ConfigError(problem("--methods", ",".join(bad) or "''", ", ".join(METHODS)))
        methods = tuple(m for m in METHODS if m in methods)  # paper order, no repeats
    if xis is not None:
        bad = [x for x in xis if not 0.0 <= x <= 1.0]
        if bad or not xis:
            raise ConfigError(problem("--xis", bad[0] if bad else "''", "noise levels in [0, 1]"))
        xis = tuple(sorted(set(float(x) for x in xis)))
    if quick:
        trials = min(trials, 2)
    xis = xis if xis is not None else (QUICK_XIS if quick else XIS)
    narrowed = {} if methods is None else {"methods": methods}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def step(what: str) -> Callable[[int, int], None] | None:
        return None if progress is None else (lambda d, t: progress(what, d, t))

    seeds = tuple(range(trials))
    curves, runs = run_trials(
        task, seeds, store, workers, step(f"{task} trials"), xis=xis, rounds=rounds, **narrowed
    )
    table = summarise(runs)
    paper = task == "compas" and rounds == 1000
    shown = with_paper(table) if paper else table
    shown.assign(results_schema=RESULTS_SCHEMA).to_csv(
        out / "table.csv", index=False, float_format="%.4f", na_rep=""
    )
    keep = ["seed", "method", "xi", *SUMMARY, "n_none"]
    runs[keep].to_csv(out / "trials.csv", index=False, float_format="%.4f")
    label = f"{task}, RF, {trials} paired trials"
    plot_mer_vs_round(curves, out / "mer_vs_round.png", f"{label}: MER per round")
    plot_noise_sweep(table, out / "noise_sweep.png", f"{label}: final round against ξ")
    late_gain(runs).assign(results_schema=RESULTS_SCHEMA).to_csv(
        out / "late_gain.csv", index=False, float_format="%.4f"
    )
    files = [
        out / n
        for n in ("table.csv", "trials.csv", "mer_vs_round.png", "noise_sweep.png", "late_gain.csv")
    ]
    syn = None
    if synthetic and task == "compas":
        n_syn = 2 if quick else SYNTHETIC_SEEDS
        _, srun = run_trials(
            "synthetic",
            tuple(range(n_syn)),
            store,
            workers,
            step("synthetic regret"),
            methods=("ProtoAR", "LinUCB"),
            xis=(0.0,),
            rounds=5000,
            n_arms=50,
            curves=False,
        )
        syn = synthetic_table(srun)
        syn.to_csv(out / "synthetic.csv", index=False, float_format="%.4f")
        files.append(out / "synthetic.csv")
    items = checks(table, syn, quick=quick or not paper)
    checks_frame(items).to_csv(out / "checks.csv", index=False, float_format="%.4f")
    files.append(out / "checks.csv")
    return Reproduction(shown, syn, items, files)
