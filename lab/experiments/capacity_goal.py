"""Where a learned goal pays (issue 39): μ in a world whose capacity changes.

Table 3 shows that in the paper's stationary world the learned goal selector μ adds
nothing over a constant margin with the same recommender. A state-dependent goal can only
beat every constant where the right goal moves; the ``recession`` preset is such a world
(for ticks 40-59 only 5 of the 9 places are open, while 10 newcomers keep arriving).

This experiment, at the setting of Table 3 (T = 1, β = 0.05):

* trains μ there with the observation extended by the capacity in force (k_t / k,
  m_t / m; ``PopulationEnv(capacity_obs=True)``) on the (α, τ) grid of the Pareto study,
  once, in world 0: with the shipped φ inside (``rl``; φ's task does not involve the
  pool, so the T1-b005 φ is reused) and with exact-linear inside (the hybrids' shared
  predictor, ``hybrid-exact-linear``), 7,000 ticks each as in the paper, and ``rl``'s
  predictors of α:τ 4, 10 and 30:1 again for 21,000 ticks (``rl-long``);
* evaluates on ``worlds`` x ``episodes`` paired seeds (world 0 is where μ was trained;
  the other worlds test it, ``allow_mismatch``): the constant-margin fronts of every
  recommender, the practitioner's adaptive margin (``trend-threshold``: a margin that
  follows the recent threshold change) with φ and with exact-linear advice, the
  privileged lookahead front, ``rl`` and ``hybrid-exact-linear`` with the new μ, and as a
  control ``rl`` with the stationary μ of Table 3 (trained in the paper's world, blind
  to k);
* reads every front at RR 0.95 world by world and reports the paired differences with
  intervals that resample worlds, then episodes within them (one draw of episodes for
  every point of a world: common random numbers).

Writes under ``out``: ``predictors/`` (the artefacts, shipped), ``store/`` (the episodes,
resumable), ``table.csv``, ``points.csv``, ``phases.csv`` (RR and RF before, during and
after the recession for a few points), ``fronts.png``, ``ticks.png`` and ``summary.md``.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lab.experiments.pareto import (
    MARGINS,
    ORACLE_GRID,
    TARGET_RR,
    StudyConfig,
    episode_arrays,
    read_front,
)
from lab.study import Study, collect, load_runs_of

SCENARIO = "recession"
OVERRIDES = {"validity": 1, "beta": 0.05}  # Table 3's T1-b005 setting
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = Path("results") / "pareto" / "T1-b005"
PHI = SHIPPED / "recommender"  # relative to the repository root, as run ids record it
GRID: tuple[tuple[float, float], ...] = StudyConfig.model_fields["grid"].default
TRAIN_WORLD = 0
STEPS = 7000
FAMILIES = {"rl": f"rl:path={PHI}", "hybrid": "exact-linear"}  # μ family -> recommender inside
# recommender key -> spec: the constant-margin fronts and the adaptive-margin fronts
MARGIN_RECS = {
    "exact-linear": "exact-linear",
    "estimated": "exact-linear:weights=estimated",
    "true": "exact-linear:weights=true",
    "phi": f"rl:path={PHI},allow_mismatch=true",
}
TREND_RECS = ("phi", "exact-linear")
# rl's predictors trained again for 3x the ticks at the weights where RR matters most (at
# 7,000 ticks no rl predictor of the recession reached RR 0.72: docs/capacity-goal.md)
LONG_STEPS = 21_000
# the shipped run, and ``quick``: one (α, τ) point trained for 300 ticks, three margins,
# 2 worlds x 2 episodes of 60 ticks (the recession begins at tick 40): a check, not a result
PLANS = {
    False: {"grid": GRID, "margins": MARGINS, "steps": STEPS, "worlds": 5, "episodes": 10,
            "ticks": None, "long": ((4.0, 1.0), (10.0, 1.0), (30.0, 1.0))},
    True: {"grid": ((10.0, 1.0),), "margins": (0.0, 0.05, 0.1), "steps": 300, "worlds": 2,
           "episodes": 2, "ticks": 60, "long": ()},
}  # fmt: skip


def predictor_dir(out: Path, family: str, alpha: float, tau: float, steps: int = STEPS) -> Path:
    """Where the (family, α, τ) predictor lives; ``-sN`` when trained for N ≠ 7,000 ticks."""
    suffix = "" if steps == STEPS else f"-s{steps}"
    return Path(out) / "predictors" / f"{family}-a{alpha:g}-t{tau:g}{suffix}"


def _train_one(job: tuple[str, str, float, float, int]) -> tuple[str, float]:
    from abm.mlp import torch_threads
    from lab.experiments.rl_training import train_predictor

    directory, family, alpha, tau, steps = job
    with torch_threads(1):
        m = train_predictor(directory, SCENARIO, alpha=alpha, tau=tau, recommender=FAMILIES[family],
                            seed=0, steps=steps, capacity_obs=True, resume=True,
                            world_seed=TRAIN_WORLD, **OVERRIDES)  # fmt: skip
    return directory, float(m["cpu_seconds"])


def train(out: str | Path, *, workers: int = 2, quick: bool = False, families=tuple(FAMILIES),
          log: Callable[[str], None] = print) -> list[Path]:  # fmt: skip
    """Train every (family, α, τ) predictor not yet under ``out``/predictors; their dirs."""
    plan = PLANS[quick]
    wanted = [(f, a, t, plan["steps"]) for f in families for a, t in plan["grid"]]
    if "rl" in families:
        wanted += [("rl", a, t, LONG_STEPS) for a, t in plan["long"]]
    jobs, dirs = [], []
    for family, alpha, tau, steps in wanted:
        d = predictor_dir(Path(out), family, alpha, tau, steps)
        dirs.append(d)
        if not (d / "manifest.json").is_file():
            jobs.append((str(d), family, alpha, tau, steps))
    log(f"training {len(jobs)} predictor(s) of {len(dirs)} ({workers} at a time)")
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for directory, cpu in pool.map(_train_one, jobs):
            log(f"  {directory}: {cpu:.0f} CPU s")
    return dirs


# -- evaluation ---------------------------------------------------------------------------

POINT_KEYS = ("method", "family", "alpha", "tau", "margin", "policy")


def points(out: str | Path, quick: bool = False) -> list[dict[str, Any]]:
    """Every point to evaluate: method, family, alpha, tau, margin, policy (a registry spec)."""
    out, plan = Path(out), PLANS[quick]
    rows: list[dict[str, Any]] = [_point("threshold", "baseline", policy="threshold")]
    for key, rec in MARGIN_RECS.items():
        rows += [_point(f"margin-{key}", "margin", margin=c,
                        policy=f"last-threshold:margin={c:g}+{rec}") for c in plan["margins"]]  # fmt: skip
    for key in TREND_RECS:
        rows += [_point(f"trend-{key}", "trend", margin=c,
                        policy=f"trend-threshold:margin={c:g}+{MARGIN_RECS[key]}") for c in plan["margins"]]  # fmt: skip
    for a, t in plan["grid"]:
        rows.append(_point("lookahead-true", "lookahead", a, t, policy=f"lookahead:alpha={a:g},"
                           f"tau={t:g},{ORACLE_GRID}+exact-linear:weights=true"))  # fmt: skip
        rows.append(_point("rl", "rl", a, t, policy=f"rl:path={predictor_dir(out, 'rl', a, t, plan['steps'])},"
                           "allow_mismatch=true"))  # fmt: skip
        rows.append(_point("hybrid-exact-linear", "hybrid", a, t, policy="hybrid-exact-linear:path="
                           f"{predictor_dir(out, 'hybrid', a, t, plan['steps'])},allow_mismatch=true"))  # fmt: skip
        stationary = SHIPPED / "predictors" / f"rl-a{a:g}-t{t:g}"
        rows.append(_point("rl-stationary", "rl", a, t,
                           policy=f"rl:path={stationary},allow_mismatch=true"))  # fmt: skip
    for a, t in plan["long"]:
        rows.append(_point("rl-long", "rl", a, t, policy=f"rl:path="
                           f"{predictor_dir(out, 'rl', a, t, LONG_STEPS)},allow_mismatch=true"))  # fmt: skip
    return rows


def _point(method: str, family: str, alpha: float | None = None, tau: float | None = None, *,
           margin: float | None = None, policy: str) -> dict[str, Any]:  # fmt: skip
    return {"method": method, "family": family, "alpha": alpha, "tau": tau, "margin": margin,
            "policy": policy}  # fmt: skip


def evaluation_study(out: str | Path, quick: bool = False,
                     methods: set[str] | None = None) -> Study:  # fmt: skip
    """The paired episodes: every point's policy x world_seed 0..worlds-1 x episodes."""
    plan = PLANS[quick]
    pols = [p["policy"] for p in points(out, quick) if methods is None or p["method"] in methods]
    extra = {"ticks": plan["ticks"]} if plan["ticks"] else {}
    return Study.build(SCENARIO, name=f"capacity-goal{'-quick' if quick else ''}",
                       seeds=plan["episodes"], metrics=["rr", "rf"], overrides=dict(OVERRIDES),
                       sweep={"world_seed": list(range(plan["worlds"])), "policy": pols}, **extra)  # fmt: skip


def evaluate(out: str | Path, *, quick: bool = False, workers: int = 2,
             methods: set[str] | None = None,
             progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:  # fmt: skip
    """Run (or resume) the evaluation episodes under ``out``/store; one row per run."""
    study = evaluation_study(out, quick, methods)
    _, runs = collect(study, Path(out) / "store", workers=workers, progress=progress)
    return _checked(runs)


def _checked(runs: pd.DataFrame) -> pd.DataFrame:
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        raise RuntimeError(f"{len(bad)} episode(s) failed, e.g. {bad['policy'].iloc[0]}: "
                           f"{bad['error'].iloc[0]}")  # fmt: skip
    return runs


# -- the comparison -----------------------------------------------------------------------

FRONT_METHODS = tuple(f"margin-{k}" for k in MARGIN_RECS) + tuple(f"trend-{k}" for k in TREND_RECS) + (
    "lookahead-true", "rl", "hybrid-exact-linear", "rl-stationary", "rl-long")  # fmt: skip
CONSTANT = tuple(f"margin-{k}" for k in MARGIN_RECS)
# (method, baseline) pairs of the paired differences; "best-margin" is the constant-margin
# front with the highest mean RF at RR 0.95 over the worlds (chosen once, on all episodes:
# choosing it again in every resample would favour the baseline by the noise of a maximum)
PAIRS = (("rl", "margin-phi"), ("rl", "trend-phi"), ("rl", "best-margin"), ("rl", "rl-stationary"),
         ("hybrid-exact-linear", "margin-exact-linear"), ("hybrid-exact-linear", "trend-exact-linear"),
         ("hybrid-exact-linear", "best-margin"), ("trend-phi", "margin-phi"),
         ("trend-exact-linear", "margin-exact-linear"), ("trend-phi", "best-margin"),
         ("lookahead-true", "margin-true"), ("lookahead-true", "best-margin"),
         ("rl-long", "margin-phi"), ("rl-long", "trend-phi"), ("rl-long", "best-margin"),
         ("rl-long", "rl-stationary"), ("rl-long", "rl"))  # fmt: skip
RESAMPLES = 1000


def arrays(runs: pd.DataFrame, pts: list[dict], worlds: list[int]) -> dict[str, tuple]:
    """method -> (RR, RF), each (worlds, points, episodes), episodes in seed order."""
    rr, rf = episode_arrays(runs, worlds, [p["policy"] for p in pts])
    out = {}
    for m in dict.fromkeys(p["method"] for p in pts):
        mine = [i for i, p in enumerate(pts) if p["method"] == m]
        out[m] = rr[:, mine], rf[:, mine]
    return out


def _world_figures(fronts: dict[str, tuple], w: int, e: np.ndarray,
                   best: str = "margin-phi") -> dict[str, Any]:  # fmt: skip
    """For world ``w`` and its episodes ``e``: each front's (RF, RR) at RR 0.95 and each
    pair's difference (the baseline read at the RR the method reached, as Table 3 does);
    ``best`` is the constant-margin front that "best-margin" stands for."""
    read = {m: read_front(rr[w][:, e], rf[w][:, e]) for m, (rr, rf) in fronts.items()}
    diffs = {}
    for a, b in PAIRS:
        base = best if b == "best-margin" else b
        if a not in fronts or base not in fronts:  # e.g. the quick plan has no rl-long
            continue
        value, at = read[a]
        rr, rf = fronts[base]
        diffs[f"{a} - {b}"] = value - read_front(rr[w][:, e], rf[w][:, e], at)[0]
    return {"read": read, "diffs": diffs}


def best_constant(fronts: dict[str, tuple], n_worlds: int, n_episodes: int) -> str:
    """The constant-margin front with the highest mean RF at RR 0.95 over the worlds."""
    every = np.arange(n_episodes)
    means = {c: np.nanmean([read_front(fronts[c][0][w][:, every], fronts[c][1][w][:, every])[0]
                            for w in range(n_worlds)]) for c in CONSTANT}  # fmt: skip
    return max(means, key=lambda c: means[c])


def summarise(runs: pd.DataFrame, pts: list[dict], resamples: int = RESAMPLES,
              seed: int = 0) -> pd.DataFrame:  # fmt: skip
    """One row per front (RF at RR 0.95), per threshold figure and per pair (difference):
    mean over worlds, 95 % interval (worlds resampled, then episodes within each), world 0's
    value (where μ was trained), the worlds where a difference is > 0, each world's value."""
    worlds = sorted(int(w) for w in runs["world_seed"].unique())
    data = arrays(runs, pts, worlds)
    fronts = {m: data[m] for m in FRONT_METHODS if m in data}
    n_w, n_e = len(worlds), data["threshold"][0].shape[2]
    every = np.arange(n_e)
    best = best_constant(fronts, n_w, n_e)
    per = [_world_figures(fronts, w, every, best) for w in range(n_w)]
    rng = np.random.default_rng(seed)
    boot: dict[str, list[float]] = {}
    for _ in range(resamples):
        ws = rng.integers(0, n_w, n_w)
        es = rng.integers(0, n_e, (n_w, n_e))
        figs = [_world_figures(fronts, w, e, best) for w, e in zip(ws, es, strict=True)]
        for m in fronts:
            boot.setdefault(m, []).append(np.nanmean([f["read"][m][0] for f in figs]))
        for key in figs[0]["diffs"]:
            boot.setdefault(key, []).append(np.nanmean([f["diffs"][key] for f in figs]))
        rr, rf = data["threshold"]
        for fig, v in (("threshold rr", rr), ("threshold rf", rf)):
            boot.setdefault(fig, []).append(np.nanmean([np.nanmean(v[w, 0, e])
                                                        for w, e in zip(ws, es, strict=True)]))  # fmt: skip
    rows = []

    def row(name: str, kind: str, vals: list[float], rr_at: list[float] | None = None) -> None:
        lo, hi = np.nanquantile(boot[name], [0.025, 0.975])
        v = np.asarray(vals, float)
        rows.append({"name": name, "kind": kind, "mean": float(np.nanmean(v)), "lo": float(lo),
                     "hi": float(hi), "world0": float(v[0]),
                     "positive_in": int(np.sum(v > 0)) if kind == "difference" else None,
                     "rr_at": None if rr_at is None else float(np.nanmean(rr_at)),
                     "best_constant": best,
                     "worlds": n_w, "episodes": n_e,
                     "per_world": json.dumps([round(float(x), 4) for x in v])})  # fmt: skip

    for m in fronts:
        row(m, "rf_at_rr095", [p["read"][m][0] for p in per], [p["read"][m][1] for p in per])
    rr, rf = data["threshold"]
    row("threshold rr", "threshold", list(np.nanmean(rr[:, 0], axis=1)))
    row("threshold rf", "threshold", list(np.nanmean(rf[:, 0], axis=1)))
    for key in per[0]["diffs"]:
        row(key, "difference", [p["diffs"][key] for p in per])
    return pd.DataFrame(rows)


# -- the report ---------------------------------------------------------------------------

NAMES = {
    "margin-exact-linear": "constant margin, exact-linear",
    "margin-estimated": "constant margin, exact-linear on estimated d",
    "margin-true": "constant margin, exact-linear on true d",
    "margin-phi": "constant margin, φ",
    "trend-phi": "trend-threshold (adaptive margin), φ",
    "trend-exact-linear": "trend-threshold (adaptive margin), exact-linear",
    "lookahead-true": "lookahead (privileged: simulates the future), true d",
    "rl": "rl: μ seeing k_t, m_t (trained here) + φ",
    "hybrid-exact-linear": "hybrid: μ seeing k_t, m_t (trained here) + exact-linear",
    "rl-stationary": "rl with Table 3's μ (trained without a recession, blind to k_t) + φ",
    "rl-long": "rl: μ seeing k_t, m_t, trained 21,000 ticks (α:τ 4, 10, 30:1) + φ",
}


def _num(x: float, signed: bool = False) -> str:
    return "n/a" if x != x else (f"{x:+.3f}" if signed else f"{x:.3f}")


def markdown(table: pd.DataFrame) -> str:
    """The tables of the docs page and ``summary.md``: the fronts, then the differences."""
    n_w, n_e = int(table["worlds"].iloc[0]), int(table["episodes"].iloc[0])
    lines = [f"RF at RR 0.95 of each front, mean over {n_w} worlds x {n_e} paired episodes "
             "[95 % interval: worlds resampled, then episodes within each]; world 0 (where μ "
             "was trained) alone; each world's value.", "",
             "| method | RF at RR 0.95 | RR read at | world 0 | per world |", "|---|---|---|---|---|"]  # fmt: skip
    for r in table[table["kind"] == "rf_at_rr095"].itertuples():
        lines.append(f"| {NAMES.get(r.name, r.name)} | {_num(r.mean)} [{_num(r.lo)}, {_num(r.hi)}] "
                     f"| {_num(r.rr_at)} | {_num(r.world0)} | {r.per_world} |")  # fmt: skip
    for r in table[table["kind"] == "threshold"].itertuples():
        lines.append(f"| threshold ({r.name.split()[1].upper()}, not a front) | {_num(r.mean)} "
                     f"[{_num(r.lo)}, {_num(r.hi)}] | | {_num(r.world0)} | {r.per_world} |")  # fmt: skip
    best = NAMES.get(table["best_constant"].iloc[0], table["best_constant"].iloc[0])
    lines += ["", "Paired differences in RF at RR 0.95 (the baseline read at the RR the method "
              "reached); the *best constant margin* is the constant-margin front with the "
              f"highest mean RF at RR 0.95, here {best}. In bold where the interval excludes 0.",
              "",
              "| difference | mean [95 % interval] | worlds > 0 | world 0 | per world |",
              "|---|---|---|---|---|"]  # fmt: skip
    for r in table[table["kind"] == "difference"].itertuples():
        a, b = r.name.split(" - ")
        label = f"{a} − {'best constant margin' if b == 'best-margin' else b}"
        cell = f"{_num(r.mean, True)} [{_num(r.lo, True)}, {_num(r.hi, True)}]"
        if r.lo > 0 or r.hi < 0:
            cell = f"**{cell}**"
        lines.append(f"| {label} | {cell} | {int(r.positive_in)} of {n_w} | {_num(r.world0, True)} "
                     f"| {r.per_world} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def phase_markdown(by_phase: pd.DataFrame) -> str:
    """Mean RR (and RF) per phase of the episode for a few points."""
    if by_phase.empty:
        return ""
    names = [n for n, _, _ in PHASES]
    lines = ["RR and RF per phase of the episode (mean over the phase's ticks, worlds and "
             "episodes) for a few points:", "",
             "| point | " + " | ".join(f"RR {n}" for n in names) + " | "
             + " | ".join(f"RF {n}" for n in names) + " |", "|---" * (1 + 2 * len(names)) + "|"]  # fmt: skip
    for r in by_phase.to_dict("records"):
        cells = [_num(r[f"RR {n}"]) for n in names] + [_num(r[f"RF {n}"]) for n in names]
        lines.append(f"| {r['point']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


STYLES = {"margin": ("tab:grey", "o", ":"), "trend": ("tab:orange", "s", "--"),
          "lookahead": ("tab:green", "^", "-."), "rl": ("tab:blue", "D", "-"),
          "hybrid": ("tab:purple", "v", "-"), "baseline": ("black", "*", "")}  # fmt: skip


def plot_fronts(means: pd.DataFrame, pts: list[dict], path: Path) -> None:
    """RR against RF of every point, one line per method; ``means``: each policy's RR and
    RF over worlds and episodes (index policy, columns rr, rf)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 5.0))
    ax = fig.subplots()
    for method in dict.fromkeys(p["method"] for p in pts):
        mine = [p for p in pts if p["method"] == method]
        colour, marker, line = STYLES[mine[0]["family"]]
        if method == "rl-stationary":
            colour, line = "tab:cyan", "-"
        if method == "rl-long":
            colour, marker = "navy", "P"
        if method == "margin-phi":
            colour = "black"
        if method.startswith("margin-") and method != "margin-phi":
            colour = {"margin-exact-linear": "silver", "margin-estimated": "grey",
                      "margin-true": "dimgrey"}[method]  # fmt: skip
        xy = means.loc[[p["policy"] for p in mine]].to_numpy()
        order = np.argsort(xy[:, 0])
        ax.plot(xy[order, 0], xy[order, 1], color=colour, marker=marker, ls=line or "none",
                ms=4, lw=1, label=NAMES.get(method, method))  # fmt: skip
    ax.axvline(TARGET_RR, color="k", lw=0.6, alpha=0.5)
    ax.set_xlabel("recourse reliability RR (mean over worlds and episodes)")
    ax.set_ylabel("recourse feasibility RF")
    ax.set_title(f"{SCENARIO}, T = 1, β = 0.05: every front", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# the points of the per-tick chart: (method, alpha, margin) -> label
TICK_POINTS = {("margin-phi", None, 0.2): "constant margin 0.2, φ",
               ("trend-phi", None, 0.2): "trend-threshold 0.2, φ",
               ("lookahead-true", 10.0, None): "lookahead α:τ 10:1 (privileged)",
               ("rl", 10.0, None): "rl (7,000 ticks) α:τ 10:1",
               ("rl-long", 30.0, None): "rl (21,000 ticks) α:τ 30:1",
               ("threshold", None, None): "threshold"}  # fmt: skip


# the phases of a recession episode: (label, first tick, last tick)
PHASES = (("before (1-39)", 1, 39), ("recession (40-59)", 40, 59), ("after (60-69)", 60, 69),
          ("late (70-99)", 70, 99))  # fmt: skip


def tick_points(runs: pd.DataFrame, pts: list[dict], out: Path) -> tuple[dict, pd.DataFrame]:
    """({policy: label} of :data:`TICK_POINTS`, their tick rows from the store)."""
    from lab.study.runner import read_ticks

    chosen = {}
    for p in pts:
        label = TICK_POINTS.get((p["method"], p["alpha"], p["margin"]))
        if label is not None:
            chosen[p["policy"]] = label
    mine = runs[runs["policy"].isin(list(chosen))]
    if mine.empty:
        return chosen, pd.DataFrame()
    return chosen, read_ticks(Path(out) / "store", mine["run_id"].tolist())


def phases(chosen: dict, ticks: pd.DataFrame) -> pd.DataFrame:
    """Per chosen point and phase (:data:`PHASES`): mean RR and RF over its ticks (defined
    ticks only), worlds and episodes."""
    rows = []
    for policy, label in chosen.items():
        part = ticks[ticks["policy"] == policy]
        if part.empty:
            continue
        row = {"point": label}
        for name, lo, hi in PHASES:
            inside = part[(part["tick"] >= lo) & (part["tick"] <= hi)]
            row[f"RR {name}"] = float(inside["rr"].mean())
            row[f"RF {name}"] = float(inside["rf"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def plot_ticks(chosen: dict, ticks: pd.DataFrame, path: Path) -> bool:
    """RR per tick, mean over worlds and episodes, of a few points (:data:`TICK_POINTS`),
    with the recession's ticks shaded; False when none of them was run."""
    from matplotlib.figure import Figure

    if ticks.empty:
        return False
    fig = Figure(figsize=(7.5, 3.8))
    ax = fig.subplots()
    ax.axvspan(40, 59.5, color="tab:red", alpha=0.08, lw=0)
    for policy, label in chosen.items():
        part = ticks[ticks["policy"] == policy]
        if part.empty:
            continue
        per_tick = part.groupby("tick")["rr"].mean()
        ax.plot(per_tick.index, per_tick.to_numpy(), lw=1.2, label=label)
    ax.set_xlabel("tick (places halved for ticks 40-59, shaded)")
    ax.set_ylabel("RR of the tick (mean over worlds and episodes)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def write_report(runs: pd.DataFrame, out: str | Path, quick: bool = False) -> dict[str, Any]:
    """table.csv, points.csv, fronts.png, ticks.png and summary.md under ``out``; their
    paths."""
    out = Path(out)
    pts = points(out, quick)
    present = set(runs["policy"])
    pts = [p for p in pts if p["policy"] in present]
    table = summarise(runs, pts, resamples=50 if quick else RESAMPLES)
    table.to_csv(out / "table.csv", index=False)
    means = runs.groupby("policy")[["rr", "rf"]].mean()
    pd.DataFrame([{**{k: p[k] for k in POINT_KEYS}, "rr": means.loc[p["policy"], "rr"],
                   "rf": means.loc[p["policy"], "rf"]} for p in pts]).to_csv(
        out / "points.csv", index=False)  # fmt: skip
    plot_fronts(means, pts, out / "fronts.png")
    chosen, ticks = tick_points(runs, pts, out)
    plot_ticks(chosen, ticks, out / "ticks.png")
    by_phase = phases(chosen, ticks)
    by_phase.to_csv(out / "phases.csv", index=False)
    head = (f"# Where a learned goal pays: {SCENARIO}{' (quick check)' if quick else ''}\n\n"
            "Written by `recourse-abm reproduce capacity-goal`.\n\n")  # fmt: skip
    (out / "summary.md").write_text(head + markdown(table) + "\n" + phase_markdown(by_phase))
    return {"report": out / "summary.md", "table": out / "table.csv", "plot": out / "fronts.png"}


def run(out: str | Path, *, quick: bool = False, workers: int = 2,
        progress: Callable[[int, int], None] | None = None,
        log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Train what is missing, evaluate (resumable) and write the report."""
    train(out, workers=workers, quick=quick, log=log)
    study = evaluation_study(out, quick)
    log(f"{study.name}: {study.n_runs} episodes")
    return write_report(evaluate(out, quick=quick, workers=workers, progress=progress), out, quick)


def read_runs(out: str | Path, quick: bool = False) -> pd.DataFrame:
    """The evaluation episodes as stored under ``out``/store (for a report only)."""
    _, runs = load_runs_of(evaluation_study(out, quick), Path(out) / "store")
    return _checked(runs)
