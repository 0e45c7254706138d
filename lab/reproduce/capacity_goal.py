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
* reads every front at RR 0.95 world by world (:func:`summarise`): its level, each
  method's distances to the constant-margin front (its own recommender's, and the front
  of every constant margin; :mod:`lab.study.front`) and the paired differences between
  the other fronts, with worlds as the unit (:mod:`lab.study.stats`) and verdicts
  corrected together by Holm (:func:`add_verdicts`).

μ is trained in world 0 with one training seed; the report says so beside every figure
of a learned goal. Predictors trained again with other seeds (``train(seeds=...)``:
directories suffixed ``-seed1``, ``-seed2``, ...) are found and evaluated too, and then
the training seed is a random effect like the world: one value per (training seed,
world), see :func:`summarise`.

Writes under ``out``: ``predictors/`` (the artefacts, shipped), ``store/`` (the episodes,
resumable), ``table.csv``, ``points.csv``, ``phases.csv`` (RR and RF before, during and
after the recession for a few points), ``fronts.png``, ``ticks.png`` and ``summary.md``.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import math
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from lab.reproduce.pareto import (
    MARGINS,
    ORACLE_GRID,
    TARGET_RR,
    StudyConfig,
    episode_arrays,
    read_front,
)
from lab.study import Study, collect, load_runs_of
from lab.study.front import FRONT_BOUND, FRONT_FIGURES, front_distances
from lab.study.stats import (
    BOUNDS,
    MIN_WORLDS_FOR_VERDICT,
    difference_p,
    judge,
    tost_p,
    world_interval,
)

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
    False: {
        "grid": GRID,
        "margins": MARGINS,
        "steps": STEPS,
        "worlds": 10,
        "episodes": 5,
        "ticks": None,
        "long": ((4.0, 1.0), (10.0, 1.0), (30.0, 1.0)),
    },
    True: {
        "grid": ((10.0, 1.0),),
        "margins": (0.0, 0.05, 0.1),
        "steps": 300,
        "worlds": 2,
        "episodes": 2,
        "ticks": 60,
        "long": (),
    },
}


def predictor_dir(
    out: Path, family: str, alpha: float, tau: float, steps: int = STEPS, seed: int = 0
) -> Path:
    """Where the (family, α, τ) predictor lives; ``-sN`` when trained for N ≠ 7,000 ticks,
    ``-seedS`` when trained with training seed S ≠ 0."""
    suffix = ("" if steps == STEPS else f"-s{steps}") + (f"-seed{seed}" if seed else "")
    return Path(out) / "predictors" / f"{family}-a{alpha:g}-t{tau:g}{suffix}"


def training_seeds(
    out: Path, family: str, alpha: float, tau: float, steps: int = STEPS
) -> list[int]:
    """The training seeds of a (family, α, τ) predictor: 0 (the plain directory) and each S
    of a trained ``-seedS`` directory beside it."""
    base = predictor_dir(Path(out), family, alpha, tau, steps)
    found = []
    for d in base.parent.glob(f"{base.name}-seed*"):
        seed = d.name.removeprefix(f"{base.name}-seed")
        if seed.isdigit() and int(seed) > 0 and (d / "manifest.json").is_file():
            found.append(int(seed))
    return [0, *sorted(found)]


def _train_one(job: tuple[str, str, float, float, int, int]) -> tuple[str, float]:
    from abm.mlp import torch_threads
    from lab.training import train_predictor

    directory, family, alpha, tau, steps, seed = job
    with torch_threads(1):
        m = train_predictor(
            directory,
            SCENARIO,
            alpha=alpha,
            tau=tau,
            recommender=FAMILIES[family],
            seed=seed,
            steps=steps,
            capacity_obs=True,
            resume=True,
            world_seed=TRAIN_WORLD,
            **OVERRIDES,
        )
    return directory, float(m["cpu_seconds"])


def train(
    out: str | Path,
    *,
    workers: int = 2,
    quick: bool = False,
    families=tuple(FAMILIES),
    seeds: tuple[int, ...] = (0,),
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Train every (family, α, τ) predictor not yet under ``out``/predictors, once per
    training seed of ``seeds`` (the shipped ones: seed 0 only); their dirs."""
    plan = PLANS[quick]
    wanted = [(f, a, t, plan["steps"]) for f in families for a, t in plan["grid"]]
    if "rl" in families:
        wanted += [("rl", a, t, LONG_STEPS) for a, t in plan["long"]]
    jobs, dirs = [], []
    for (family, alpha, tau, steps), seed in itertools.product(wanted, seeds):
        d = predictor_dir(Path(out), family, alpha, tau, steps, seed)
        dirs.append(d)
        if not (d / "manifest.json").is_file():
            jobs.append((str(d), family, alpha, tau, steps, seed))
    jobs.sort(key=lambda job: -job[4])  # the longest first: they set the wall time
    log(f"training {len(jobs)} predictor(s) of {len(dirs)} ({workers} at a time)")
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for directory, cpu in pool.map(_train_one, jobs):
            log(f"  {directory}: {cpu:.0f} CPU s")
    return dirs


# -- evaluation ---------------------------------------------------------------------------

POINT_KEYS = ("method", "family", "alpha", "tau", "margin", "training_seed", "policy")


def points(out: str | Path, quick: bool = False) -> list[dict[str, Any]]:
    """Every point to evaluate: method, family, alpha, tau, margin, training_seed (of a μ
    trained here, :func:`training_seeds`; None for the others), policy (a registry spec)."""
    out, plan = Path(out), PLANS[quick]
    rows: list[dict[str, Any]] = [_point("threshold", "baseline", policy="threshold")]
    for key, rec in MARGIN_RECS.items():
        rows += [
            _point(f"margin-{key}", "margin", margin=c, policy=f"last-threshold:margin={c:g}+{rec}")
            for c in plan["margins"]
        ]
    for key in TREND_RECS:
        rows += [
            _point(
                f"trend-{key}",
                "trend",
                margin=c,
                policy=f"trend-threshold:margin={c:g}+{MARGIN_RECS[key]}",
            )
            for c in plan["margins"]
        ]
    for a, t in plan["grid"]:
        rows.append(
            _point(
                "lookahead-true",
                "lookahead",
                a,
                t,
                policy=f"lookahead:alpha={a:g},tau={t:g},{ORACLE_GRID}+exact-linear:weights=true",
            )
        )
        for seed in training_seeds(out, "rl", a, t, plan["steps"]):
            policy = _mu_policy("rl", predictor_dir(out, "rl", a, t, plan["steps"], seed))
            rows.append(_point("rl", "rl", a, t, seed=seed, policy=policy))
        for seed in training_seeds(out, "hybrid", a, t, plan["steps"]):
            pdir = predictor_dir(out, "hybrid", a, t, plan["steps"], seed)
            policy = _mu_policy("hybrid-exact-linear", pdir)
            rows.append(_point("hybrid-exact-linear", "hybrid", a, t, seed=seed, policy=policy))
        stationary = SHIPPED / "predictors" / f"rl-a{a:g}-t{t:g}"
        rows.append(
            _point("rl-stationary", "rl", a, t, policy=f"rl:path={stationary},allow_mismatch=true")
        )
    for a, t in plan["long"]:
        for seed in training_seeds(out, "rl", a, t, LONG_STEPS):
            policy = _mu_policy("rl", predictor_dir(out, "rl", a, t, LONG_STEPS, seed))
            rows.append(_point("rl-long", "rl", a, t, seed=seed, policy=policy))
    return rows


def _mu_policy(name: str, pdir: Path) -> str:
    """Policy ``name`` with the μ in ``pdir``, outside the world it was trained in."""
    return f"{name}:path={pdir},allow_mismatch=true"


def _point(
    method: str,
    family: str,
    alpha: float | None = None,
    tau: float | None = None,
    *,
    margin: float | None = None,
    seed: int | None = None,
    policy: str,
) -> dict[str, Any]:
    keys = ("method", "family", "alpha", "tau", "margin", "training_seed", "policy")
    return dict(zip(keys, (method, family, alpha, tau, margin, seed, policy), strict=True))


def evaluation_study(
    out: str | Path, quick: bool = False, methods: set[str] | None = None
) -> Study:
    """The paired episodes: every point's policy x world_seed 0..worlds-1 x episodes."""
    plan = PLANS[quick]
    pols = [p["policy"] for p in points(out, quick) if methods is None or p["method"] in methods]
    extra = {"ticks": plan["ticks"]} if plan["ticks"] else {}
    return Study.build(
        SCENARIO,
        name=f"capacity-goal{'-quick' if quick else ''}",
        seeds=plan["episodes"],
        metrics=["rr", "rf"],
        overrides=dict(OVERRIDES),
        sweep={"world_seed": list(range(plan["worlds"])), "policy": pols},
        **extra,
    )


def evaluate(
    out: str | Path,
    *,
    quick: bool = False,
    workers: int = 2,
    methods: set[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Run (or resume) the evaluation episodes under ``out``/store; one row per run."""
    study = evaluation_study(out, quick, methods)
    _, runs = collect(study, Path(out) / "store", workers=workers, progress=progress)
    return _checked(runs)


def _checked(runs: pd.DataFrame) -> pd.DataFrame:
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        raise RuntimeError(
            f"{len(bad)} episode(s) failed, e.g. {bad['policy'].iloc[0]}: {bad['error'].iloc[0]}"
        )
    return runs


# -- the comparison -----------------------------------------------------------------------

FRONT_METHODS = (
    tuple(f"margin-{k}" for k in MARGIN_RECS)
    + tuple(f"trend-{k}" for k in TREND_RECS)
    + ("lookahead-true", "rl", "hybrid-exact-linear", "rl-stationary", "rl-long")
)
CONSTANT = tuple(f"margin-{k}" for k in MARGIN_RECS)
# the front of every constant-margin point, of any recommender: the best a constant goal
# does in each world (where issue 39 once took the one front with the best mean)
EVERY_MARGIN = "margin-every"
# method -> the constant-margin front of its own recommender
OWN_FRONT = {
    "rl": "margin-phi",
    "hybrid-exact-linear": "margin-exact-linear",
    "trend-phi": "margin-phi",
    "trend-exact-linear": "margin-exact-linear",
    "lookahead-true": "margin-true",
    "rl-stationary": "margin-phi",
    "rl-long": "margin-phi",
}
# paired differences in RF at RR 0.95 between fronts that are not constant margins (the
# baseline read at the RR the method reached); a margin is only compared as a front
PAIRS = (
    ("rl", "trend-phi"),
    ("rl", "rl-stationary"),
    ("hybrid-exact-linear", "trend-exact-linear"),
    ("rl-long", "trend-phi"),
    ("rl-long", "rl-stationary"),
    ("rl-long", "rl"),
)
# the methods whose μ is trained here, in world TRAIN_WORLD (training seeds: training_seeds)
LEARNED = ("rl", "hybrid-exact-linear", "rl-long")
# the report's family (every front distance and paired difference) is corrected by Holm
CORRECTION = "holm"
# "level" and "matches": within ±0.02 of RF (and of RR at equal RF)
BOUND = BOUNDS["rf"]
TABLE_COLUMNS = tuple(
    """name kind figure against mean lo hi worlds units training_seeds episodes world0
    positive_in rr_at p tost_p bound p_adj tost_p_adj verdict outside_below outside_above
    undefined trained per_world""".split()
)
_FRONT_WORDS = {"better": "beats", "worse": "trails", "level": "matches"}


def arrays(runs: pd.DataFrame, pts: list[dict], worlds: list[int]) -> dict[str, dict]:
    """method -> training seed (None where no μ is trained here) -> (RR, RF), each
    (worlds, points, episodes), episodes in seed order."""
    rr, rf = episode_arrays(runs, worlds, [p["policy"] for p in pts])
    where: dict[str, dict[Any, list[int]]] = {}
    for i, p in enumerate(pts):
        where.setdefault(p["method"], {}).setdefault(p.get("training_seed"), []).append(i)
    return {m: {s: (rr[:, i], rf[:, i]) for s, i in seeds.items()} for m, seeds in where.items()}


def read_worlds(rr: np.ndarray, rf: np.ndarray) -> np.ndarray:
    """(W, P, E) RR and RF of a front's points -> (W, 2): each world's front read off at
    RR 0.95 (:func:`read_front`): its RF and the RR it was read at."""
    return np.array([read_front(rr[w], rf[w]) for w in range(rr.shape[0])]).reshape(-1, 2)


def seed_pairs(a: list, b: list) -> list[tuple]:
    """The (training seed of a, of b) a contrast runs over: every seed of the one with
    several against the other's only one, matching seeds where both have several."""
    if len(a) == 1:
        return [(a[0], s) for s in b]
    if len(b) == 1:
        return [(s, b[0]) for s in a]
    return [(s, s) for s in a if s in b]


def trained(*methods: str, seeds: int = 1) -> str:
    """Where the μ of ``methods`` was trained, with how many training seeds ("" for none)."""
    notes = []
    for m in methods:
        if m in LEARNED:
            many = f"{seeds} training seeds (a random effect)" if seeds > 1 else "one training seed"
            notes.append(f"μ trained in world {TRAIN_WORLD}, {many}")
        elif m == "rl-stationary":
            notes.append("Table 3's μ, trained in the paper's world 0, one training seed")
    return "; ".join(dict.fromkeys(notes))


def _units(values: list[np.ndarray], bound: float = math.nan) -> dict[str, Any]:
    """The interval of one value per (training seed, world), ``values`` a (W,) array per
    training seed: these units are what :func:`lab.study.stats.world_interval` treats as
    worlds; ``worlds`` counts the distinct worlds with a defined value (no verdict below
    10 of them, whatever the seeds). The cells of one world share its draw, so with several
    seeds treating them alike is a first approximation to crossed world and seed effects.
    With ``bound``, the uncorrected t-test of 0 and TOST."""
    d = np.concatenate(values)
    world = np.tile(np.arange(values[0].size), len(values))
    zero = d[world == 0]
    mean, lo, hi, n = world_interval(d[:, None])
    per = [[round(float(x), 4) for x in v] for v in values]
    out = {
        "mean": mean,
        "lo": lo,
        "hi": hi,
        "units": n,
        "training_seeds": len(values),
        "worlds": int(np.unique(world[np.isfinite(d)]).size),
        "world0": float(np.nanmean(zero)) if np.isfinite(zero).any() else math.nan,
        "per_world": json.dumps(per[0] if len(per) == 1 else per),
    }
    if bound == bound:
        out.update(p=difference_p(d[:, None]), tost_p=tost_p(d[:, None], bound=bound), bound=bound)
        out["positive_in"] = int(np.sum(d > 0))
    return out


def summarise(
    runs: pd.DataFrame,
    pts: list[dict],
    *,
    fronts: dict[str, tuple[str, ...]] | None = None,
    pairs: tuple[tuple[str, str], ...] = PAIRS,
    front_methods: tuple[str, ...] = FRONT_METHODS,
    note: Callable[..., str] = trained,
) -> pd.DataFrame:
    """The comparison, world by world, each front read off at RR 0.95 (Table 3's rule: on
    the front, or at its point nearest 0.95 when it stops short); rows of
    :data:`TABLE_COLUMNS`, by ``kind``:

    * ``rf_at_rr095``: each front's RF (and ``rr_at``, the RR read at); ``threshold``: the
      threshold policy's RR and RF;
    * ``front``: each method's read point against the constant-margin front of its own
      recommender (:data:`OWN_FRONT`) and against the front of every constant margin
      (:data:`EVERY_MARGIN`): RF at equal RR and RR at equal RF
      (:func:`lab.study.front.front_distances`; worlds where the point lies outside the
      range the front spans are counted, not extrapolated);
    * ``difference``: the paired differences of :data:`PAIRS` in RF at RR 0.95, the
      baseline read at the RR the method reached.

    Worlds are the unit (:mod:`lab.study.stats`): the interval is over each world's value,
    ``world0`` is world 0's (where μ was trained). A μ trained with several training seeds
    gives one value per (training seed, world), and the interval is over those
    (:func:`_units`): the training seed is a random effect too. The verdicts of the
    ``front`` and ``difference`` rows are corrected together (:func:`add_verdicts`).

    Another study passes its own ``fronts`` (method -> the fronts it is measured against;
    default: :data:`OWN_FRONT` and :data:`EVERY_MARGIN`), ``pairs``, ``front_methods`` and
    ``note`` (where a method's μ was trained: ``note(*methods, seeds=n)``)."""
    if fronts is None:
        fronts = {m: (own, EVERY_MARGIN) for m, own in OWN_FRONT.items()}
    worlds = sorted(int(w) for w in runs["world_seed"].unique())
    data = arrays(runs, pts, worlds)
    n_e = data["threshold"][None][0].shape[2]
    constant = [data[c][None] for c in CONSTANT if c in data]
    data[EVERY_MARGIN] = {
        None: tuple(np.concatenate(x, axis=1) for x in zip(*constant, strict=True))
    }
    reads = {
        m: {s: read_worlds(*v) for s, v in data[m].items()} for m in front_methods if m in data
    }
    rows = []

    def row(name: str, kind: str, figure: str, stats: dict, **extra: Any) -> None:
        rows.append(
            {"name": name, "kind": kind, "figure": figure, "episodes": n_e, **stats, **extra}
        )

    for m, by_seed in reads.items():
        rf = [r[:, 0] for r in by_seed.values()]
        at = np.concatenate([r[:, 1] for r in by_seed.values()])
        row(
            m,
            "rf_at_rr095",
            "rf_at_rr095",
            _units(rf),
            rr_at=float(np.nanmean(at)),
            trained=note(m, seeds=len(rf)),
        )
    rr, rf = data["threshold"][None]
    for fig, v in (("rr", rr), ("rf", rf)):
        mean, lo, hi, n = world_interval(v[:, 0])
        per = np.nanmean(v[:, 0], axis=1)
        row(
            f"threshold {fig}",
            "threshold",
            fig,
            {
                "mean": mean,
                "lo": lo,
                "hi": hi,
                "worlds": n,
                "units": n,
                "training_seeds": 1,
                "world0": float(per[0]),
                "per_world": json.dumps([round(float(x), 4) for x in per]),
            },
        )
    for m, against in fronts.items():
        if m not in reads:
            continue
        for front in against:
            if front not in data:
                continue
            grid = data[front][None]
            dist = [front_distances(r[:, 1:], r[:, :1], *grid) for r in reads[m].values()]
            for fig in FRONT_FIGURES:
                note_ = np.concatenate(
                    [getattr(d, "rf_note" if fig == "rf_at_equal_rr" else "rr_note") for d in dist]
                )
                row(
                    m,
                    "front",
                    fig,
                    _units([getattr(d, fig) for d in dist], FRONT_BOUND),
                    against=front,
                    rr_at=float(np.nanmean(np.concatenate([r[:, 1] for r in reads[m].values()]))),
                    outside_below=int(np.sum(note_ == "below")),
                    outside_above=int(np.sum(note_ == "above")),
                    undefined=int(np.sum(note_ == "undefined")),
                    trained=note(m, seeds=len(dist)),
                )
    for a, b in pairs:
        if a not in reads or b not in data:
            continue
        diffs = []
        for sa, sb in seed_pairs(list(reads[a]), list(data[b])):
            value, at = reads[a][sa][:, 0], reads[a][sa][:, 1]
            base_rr, base_rf = data[b][sb]
            base = [read_front(base_rr[w], base_rf[w], at[w])[0] for w in range(len(worlds))]
            diffs.append(value - np.array(base))
        seeds = max(len(reads[a]), len(data[b]))
        row(
            f"{a} - {b}",
            "difference",
            "rf_at_rr095",
            _units(diffs, BOUND),
            against=b,
            rr_at=float(np.nanmean(np.concatenate([r[:, 1] for r in reads[a].values()]))),
            trained=note(a, b, seeds=seeds),
        )
    return add_verdicts(pd.DataFrame(rows, columns=TABLE_COLUMNS))


def add_verdicts(table: pd.DataFrame, method: str = CORRECTION) -> pd.DataFrame:
    """``table`` (of :func:`summarise`) with ``p_adj``, ``tost_p_adj`` and ``verdict`` on
    its ``front`` and ``difference`` rows, the report's family: their difference and TOST
    p-values are each corrected together by ``method`` (rows with fewer than
    :data:`lab.study.stats.MIN_WORLDS_FOR_VERDICT` worlds stay out of it and read
    "inconclusive (n worlds)"). A front row "beats", "trails" or "matches" the front; a
    difference is "better", "worse" (more RF is better) or "level"."""
    out = table.copy()
    tested = out["kind"].isin(["front", "difference"])
    rows = out.loc[tested]
    p_adj, tost_adj, said = judge(
        rows["mean"],
        rows["p"],
        rows["tost_p"],
        rows["worlds"],
        True,
        method,
        lo=rows["lo"],
        hi=rows["hi"],
    )
    out["p_adj"], out["tost_p_adj"], out["verdict"] = np.nan, np.nan, ""
    out.loc[tested, "p_adj"], out.loc[tested, "tost_p_adj"] = p_adj, tost_adj
    out.loc[tested, "verdict"] = [
        _FRONT_WORDS.get(v, v) if kind == "front" else v
        for v, kind in zip(said, rows["kind"], strict=True)
    ]
    return out


# -- the report ---------------------------------------------------------------------------

NAMES = {
    "margin-exact-linear": "constant margin, exact-linear",
    "margin-estimated": "constant margin, exact-linear on estimated d",
    "margin-true": "constant margin, exact-linear on true d",
    "margin-phi": "constant margin, φ",
    EVERY_MARGIN: "every constant margin (any recommender)",
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


def _on(r: Any) -> str:
    """What an interval rests on: "5 worlds", or "3 training seeds x 5 worlds"."""
    worlds = f"{int(r.worlds)} world{'' if int(r.worlds) == 1 else 's'}"
    seeds = int(r.training_seeds)
    return worlds if seeds <= 1 else f"{seeds} training seeds x {worlds}, {int(r.units)} values"


def _interval(r: Any, signed: bool = False) -> str:
    """mean [95 % interval] (what it rests on) of a row; no interval on one world."""
    if r.lo != r.lo:
        return f"{_num(r.mean, signed)} ({_on(r)})"
    return f"{_num(r.mean, signed)} [{_num(r.lo, signed)}, {_num(r.hi, signed)}] ({_on(r)})"


def _outside(rf: Any, rr: Any) -> str:
    """Where a method's point has no distance to a front, from its two rows (RF at equal
    RR: its RR outside the front's range; RR at equal RF: its RF outside it)."""
    parts = [
        f"{coord} {side} the front's range in {int(getattr(r, f'outside_{side}'))}"
        for r, coord in ((rf, "RR"), (rr, "RF"))
        for side in ("below", "above")
        if getattr(r, f"outside_{side}")
    ]
    if rf.undefined or rr.undefined:
        parts.append(f"no point in {int(max(rf.undefined, rr.undefined))}")
    return "; ".join(parts)


def _said(r: Any) -> str:
    """The verdict of a row, in bold where it survives the correction, and its corrected
    p-values (difference, TOST)."""
    v = r.verdict if isinstance(r.verdict, str) else ""
    bold = v if v.startswith("inconclusive") else f"**{v}**"
    p = "" if r.p_adj != r.p_adj else f" (p {r.p_adj:.2g}, TOST p {r.tost_p_adj:.2g})"
    return bold + p


def _trained(r: Any) -> str:
    return r.trained if isinstance(r.trained, str) else ""


_WORLD0 = "world 0 (where μ was trained) alone"
_FRONTS_TEXT = (
    "Each method against the constant-margin front of its own recommender and the front "
    "of every constant margin (any recommender)"
)


def markdown(
    table: pd.DataFrame,
    names: dict[str, str] = NAMES,
    world0: str = _WORLD0,
    fronts_text: str = _FRONTS_TEXT,
) -> str:
    """The tables of the docs page and ``summary.md``: the fronts, their distances to the
    constant-margin fronts, then the paired differences (another study passes its own
    ``names``, what world 0 is, and which fronts each method meets)."""
    missing = [c for c in TABLE_COLUMNS if c not in table]
    if missing:
        raise ValueError(
            f"the table has no {', '.join(missing)}: it was written before the comparison "
            "took worlds as the unit (issue 48); write it again (recourse-abm reproduce "
            "capacity-goal, --report-only where the store is at hand)"
        )
    levels = table[table["kind"] == "rf_at_rr095"]
    n_w, n_e = int(levels["worlds"].max()), int(table["episodes"].iloc[0])
    lines = [
        f"RF at RR 0.95 of each front, mean over {n_w} worlds x {n_e} paired episodes "
        "[95 % interval] with the worlds it rests on (worlds as the unit: Hall-corrected t "
        f"on each world's value, lab/study/stats.py); {world0}; "
        "each world's value. φ, the recommender of every φ row, was trained in the "
        "paper's world 0 with one training seed.",
        "",
        "| method | RF at RR 0.95 | RR read at | world 0 | μ | per world |",
        "|---|---|---|---|---|---|",
    ]
    for r in levels.itertuples():
        lines.append(
            f"| {names.get(r.name, r.name)} | {_interval(r)} | {_num(r.rr_at)} "
            f"| {_num(r.world0)} | {_trained(r)} | {r.per_world} |"
        )
    for r in table[table["kind"] == "threshold"].itertuples():
        lines.append(
            f"| threshold ({r.figure.upper()}, not a front) | {_interval(r)} | "
            f"| {_num(r.world0)} | | {r.per_world} |"
        )
    tested = table[table["kind"].isin(["front", "difference"])]
    family = int(tested["p_adj"].notna().sum())
    lines += [
        "",
        f"Verdicts: the {len(tested)} contrasts below (each method's distances to the "
        "constant-margin fronts and the paired differences) are one family, corrected "
        f"together by Holm ({family} with at least {MIN_WORLDS_FOR_VERDICT} worlds); "
        f'"matches" and "level" where TOST within ±{BOUND:g} survives; no verdict below '
        f"{MIN_WORLDS_FOR_VERDICT} worlds. In bold: the verdicts that survive.",
        "",
        f"{fronts_text}, at the point it was read at (RR 0.95, "
        "or its point nearest to it): RF at equal RR and RR at equal RF, world by world; "
        "worlds where the point lies outside the range the front spans are counted, not "
        "compared.",
        "",
        "| method | front | RF at equal RR | verdict | RR at equal RF | verdict "
        "| outside the front | μ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fronts = table[table["kind"] == "front"]
    for (name, against), pair in fronts.groupby(["name", "against"], sort=False):
        by = {r.figure: r for r in pair.itertuples()}
        rf, rr = by["rf_at_equal_rr"], by["rr_at_equal_rf"]
        outside = _outside(rf, rr)
        lines.append(
            f"| {name} | {names.get(against, against)} | {_interval(rf, True)} | "
            f"{_said(rf)} | {_interval(rr, True)} | {_said(rr)} | {outside} | "
            f"{_trained(rf)} |"
        )
    lines += [
        "",
        "Paired differences in RF at RR 0.95 between fronts that are not constant "
        "margins (the baseline read at the RR the method reached).",
        "",
        "| difference | mean [95 % interval] | verdict | > 0 in | world 0 | μ | per world |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table[table["kind"] == "difference"].itertuples():
        a, b = r.name.split(" - ")
        lines.append(
            f"| {a} − {b} | {_interval(r, True)} | {_said(r)} | "
            f"{int(r.positive_in)} of {int(r.units)} | {_num(r.world0, True)} | "
            f"{_trained(r)} | {r.per_world} |"
        )
    return "\n".join(lines) + "\n"


def phase_markdown(by_phase: pd.DataFrame) -> str:
    """Mean RR (and RF) per phase of the episode for a few points."""
    if by_phase.empty:
        return ""
    names = [n for n, _, _ in PHASES]
    lines = [
        "RR and RF per phase of the episode (mean over the phase's ticks, worlds and "
        "episodes) for a few points:",
        "",
        "| point | "
        + " | ".join(f"RR {n}" for n in names)
        + " | "
        + " | ".join(f"RF {n}" for n in names)
        + " |",
        "|---" * (1 + 2 * len(names)) + "|",
    ]
    for r in by_phase.to_dict("records"):
        cells = [_num(r[f"RR {n}"]) for n in names] + [_num(r[f"RF {n}"]) for n in names]
        lines.append(f"| {r['point']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


STYLES = {
    "margin": ("tab:grey", "o", ":"),
    "trend": ("tab:orange", "s", "--"),
    "lookahead": ("tab:green", "^", "-."),
    "rl": ("tab:blue", "D", "-"),
    "hybrid": ("tab:purple", "v", "-"),
    "baseline": ("black", "*", ""),
}


def plot_fronts(means: pd.DataFrame, pts: list[dict], path: Path) -> None:
    """RR against RF of every point, one line per method (a μ of its first training seed);
    ``means``: each policy's RR and RF over worlds and episodes (index policy, columns rr,
    rf)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 5.0))
    ax = fig.subplots()
    pts = [p for p in pts if not p.get("training_seed")]
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
            colour = {
                "margin-exact-linear": "silver",
                "margin-estimated": "grey",
                "margin-true": "dimgrey",
            }[method]
        xy = means.loc[[p["policy"] for p in mine]].to_numpy()
        order = np.argsort(xy[:, 0])
        ax.plot(
            xy[order, 0],
            xy[order, 1],
            color=colour,
            marker=marker,
            ls=line or "none",
            ms=4,
            lw=1,
            label=NAMES.get(method, method),
        )
    ax.axvline(TARGET_RR, color="k", lw=0.6, alpha=0.5)
    ax.set_xlabel("recourse reliability RR (mean over worlds and episodes)")
    ax.set_ylabel("recourse feasibility RF")
    ax.set_title(f"{SCENARIO}, T = 1, β = 0.05: every front", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# the points of the per-tick chart: (method, alpha, margin) -> label
TICK_POINTS = {
    ("margin-phi", None, 0.2): "constant margin 0.2, φ",
    ("trend-phi", None, 0.2): "trend-threshold 0.2, φ",
    ("lookahead-true", 10.0, None): "lookahead α:τ 10:1 (privileged)",
    ("rl", 10.0, None): "rl (7,000 ticks) α:τ 10:1",
    ("rl-long", 30.0, None): "rl (21,000 ticks) α:τ 30:1",
    ("threshold", None, None): "threshold",
}


# the phases of a recession episode: (label, first tick, last tick)
PHASES = (
    ("before (1-39)", 1, 39),
    ("recession (40-59)", 40, 59),
    ("after (60-69)", 60, 69),
    ("late (70-99)", 70, 99),
)


def tick_points(runs: pd.DataFrame, pts: list[dict], out: Path) -> tuple[dict, pd.DataFrame]:
    """({policy: label} of :data:`TICK_POINTS`, their tick rows from the store)."""
    from lab.study.runner import read_ticks

    chosen = {}
    for p in pts:
        if p.get("training_seed"):  # a μ's first training seed stands for it
            continue
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
    table = summarise(runs, pts)
    table.assign(results_schema=RESULTS_SCHEMA).to_csv(out / "table.csv", index=False)
    means = runs.groupby("policy")[["rr", "rf"]].mean()
    pd.DataFrame(
        [
            {
                **{k: p[k] for k in POINT_KEYS},
                "rr": means.loc[p["policy"], "rr"],
                "rf": means.loc[p["policy"], "rf"],
            }
            for p in pts
        ]
    ).to_csv(out / "points.csv", index=False)
    plot_fronts(means, pts, out / "fronts.png")
    chosen, ticks = tick_points(runs, pts, out)
    plot_ticks(chosen, ticks, out / "ticks.png")
    by_phase = phases(chosen, ticks)
    by_phase.assign(results_schema=RESULTS_SCHEMA).to_csv(out / "phases.csv", index=False)
    head = (
        f"# Where a learned goal pays: {SCENARIO}{' (quick check)' if quick else ''}\n\n"
        f"Written by `recourse-abm reproduce capacity-goal` (results schema "
        f"{RESULTS_SCHEMA}).\n\n"
    )
    (out / "summary.md").write_text(head + markdown(table) + "\n" + phase_markdown(by_phase))
    return {"report": out / "summary.md", "table": out / "table.csv", "plot": out / "fronts.png"}


def run(
    out: str | Path,
    *,
    quick: bool = False,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train what is missing, evaluate (resumable) and write the report."""
    train(out, workers=workers, quick=quick, log=log)
    study = evaluation_study(out, quick)
    log(f"{study.name}: {study.n_runs} episodes")
    return write_report(evaluate(out, quick=quick, workers=workers, progress=progress), out, quick)


def read_runs(out: str | Path, quick: bool = False) -> pd.DataFrame:
    """The evaluation episodes as stored under ``out``/store (for a report only)."""
    _, runs = load_runs_of(evaluation_study(out, quick), Path(out) / "store")
    return _checked(runs)
