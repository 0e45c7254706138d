"""Pareto-front study of durable-recourse-rl §5 (Figure 2, Tables 1 and 3), resumable.

For one setting (T, β): train φ (or reuse one: φ's environment depends on β only), then
for every (α, τ) of the grid a predictor with φ inside (``rl``) and predictors for the
hybrids: with ``hybrid_predictors="shared"`` one trained with ``exact-linear`` inside and
shared by every ``hybrid-<rec>``; with ``"own"`` one per recommender, as in the paper
(each training step is a tick with that recommender inside, so ustun and DiCE predictors
cost 10-100x more); with ``"none"`` no hybrids (a study of ``rl`` alone). Evaluate
baselines, hybrids and ``rl`` on paired episodes; write ``points.csv`` (appended per
evaluation), ``table3.csv``, ``table1.csv`` and ``pareto.png``. Finished artefacts and evaluated (method, α, τ, policy) rows are skipped
when the study is run again; the latest evaluation of a (method, α, τ) is the one used.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from abm.registry import REGISTRY

SETTINGS: dict[str, tuple[int, float]] = {
    "T1-b005": (1, 0.05),
    "T1-b001": (1, 0.01),
    "T5-b005": (5, 0.05),
    "T5-b001": (5, 0.01),
}
# durable-recourse-rl Table 3 (T = 1): RF at RR ≈ 0.95
PAPER_TABLE3 = {
    ("rl", 0.05): 0.707, ("rl", 0.01): 0.365,
    ("hybrid-ustun", 0.05): 0.625, ("hybrid-ustun", 0.01): 0.256,
    ("hybrid-wachter", 0.05): 0.606, ("hybrid-wachter", 0.01): 0.303,
    ("hybrid-dice", 0.05): 0.550, ("hybrid-dice", 0.01): 0.247,
}  # fmt: skip
PAPER_TABLE1 = {"rl": (1.9e-3, 5.9e-2), "ustun": (2.2e-16, 0.30), "wachter": (2.6e-3, 0.27),
                "dice": (1.6e-2, 0.36)}  # fmt: skip
TARGET_RR = 0.95
HYBRID_PREDICTORS = ("shared", "own", "none")
PAPER_PREDICTOR_STEPS = 7000
TABLE3_COLUMNS = ("method", "T", "beta", "rf_at_rr095", "rr", "n_predictors")
POINT_COLUMNS = ("method", "family", "alpha", "tau", "policy", "rr", "rr_std", "rf", "rf_std",
                 "gini", "cost", "n_unadvised", "episodes", "seconds")  # fmt: skip


@dataclass(frozen=True)
class StudyConfig:
    """What one run of the study trains and evaluates (defaults: the shipped T = 1 runs)."""

    setting: str = "T1-b005"
    grid: tuple[tuple[float, float], ...] = ((1.0, 4.0), (1.0, 1.0), (2.0, 1.0), (4.0, 1.0),
                                             (10.0, 1.0), (30.0, 1.0))  # fmt: skip
    recommenders: tuple[str, ...] = ("exact-linear", "wachter", "ustun")
    predictor_steps: int = PAPER_PREDICTOR_STEPS
    # no warm-up: with the default direction mapping the error-only reward is always 0
    rec_warmup_episodes: int = 0
    rec_episodes: int = 20_000
    episodes: int = 10
    seed: int = 0
    eval_seed: int = 0
    workers: int = 1
    hybrid_predictors: str = "shared"
    lookahead: bool = True
    rl: bool = True  # False: no predictors with φ inside (e.g. to add hybrid predictors only)
    report_only: bool = False
    # a trained φ to use instead of training one (its β must be the setting's)
    recommender_from: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from policies.rl import HYBRID_RECOMMENDERS

        if self.setting not in SETTINGS:
            raise ValueError(f"setting must be one of {', '.join(SETTINGS)}, got {self.setting!r}")
        bad = [r for r in self.recommenders if r not in HYBRID_RECOMMENDERS]
        if bad or not self.recommenders:
            raise ValueError(
                f"recommenders must be a non-empty subset of {', '.join(HYBRID_RECOMMENDERS)}, got {bad}"
            )
        if not self.grid or any(
            not (0 <= a <= 1e6 and 0 <= t <= 1e6) or a + t == 0 for a, t in self.grid
        ):
            raise ValueError("grid: every (alpha, tau) must lie in [0, 1e6]^2 and not both be 0")
        if self.hybrid_predictors not in HYBRID_PREDICTORS:
            raise ValueError(f"hybrid_predictors must be one of {', '.join(HYBRID_PREDICTORS)}, "
                             f"got {self.hybrid_predictors!r}")  # fmt: skip

    @property
    def overrides(self) -> dict[str, Any]:
        T, beta = SETTINGS[self.setting]
        return {"validity": T, "beta": beta}


def parse_grid(text: str) -> tuple[tuple[float, float], ...]:
    """``1:4,1:1,4:1`` -> ((1, 4), (1, 1), (4, 1)) as (alpha, tau) pairs."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        a, sep, t = item.partition(":")
        try:
            out.append((float(a), float(t)))
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(
                f"--grid must be comma-separated ALPHA:TAU pairs, e.g. 1:4,1:1; got {item!r}"
            )
    if not out:
        raise ValueError("--grid must name at least one ALPHA:TAU pair")
    return tuple(out)


def run_study(
    cfg: StudyConfig,
    out: str | Path,
    log: Callable[[str], None] = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Train, evaluate and summarise; returns {"table3": rows, "table1": rows, "points": path}.

    With ``cfg.report_only`` nothing is trained or evaluated: the reports are rebuilt from
    ``points.csv`` as it stands (e.g. after an interrupted run).
    """
    from abm.app.experiments.rl_training import train_recommender

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = progress or (lambda what, done, total: None)
    rec_dir = out / "recommender"
    if cfg.recommender_from is not None:
        rec_dir = Path(cfg.recommender_from)
        _check_reused_recommender(rec_dir, cfg)
    if cfg.report_only:
        return write_reports(cfg, out, rec_dir)
    config = {**cfg.__dict__, "grid": [list(g) for g in cfg.grid]}
    (out / "study.json").write_text(json.dumps(config, indent=2))
    # a setting's points often come from several runs (other recommenders, grids): keep them all
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **config}) + "\n")
    if not (rec_dir / "manifest.json").is_file():
        log(f"training φ ({cfg.rec_warmup_episodes} + {cfg.rec_episodes} episodes)")
        train_recommender(rec_dir, "paper", seed=cfg.seed, warmup_episodes=cfg.rec_warmup_episodes,
                          episodes=cfg.rec_episodes, checkpoint_every=5000, resume=True,
                          progress=lambda d, t: report("φ episodes", d, t), **cfg.overrides)  # fmt: skip
    predictors = _train_predictors(cfg, out, rec_dir, log, report)
    _evaluate_all(cfg, out, rec_dir, predictors, log, report)
    return write_reports(cfg, out, rec_dir)


def _train_predictors(cfg: StudyConfig, out: Path, rec_dir: Path, log, report) -> list[tuple]:
    """Train (or find) every predictor of the grid; returns (family, recommender, α, τ, dir)."""
    from abm.app.experiments.rl_training import PREDICTOR_SAC, train_predictor

    ov = cfg.overrides
    # (family, recommender inside, directory stem): the hybrid's own recommender, or
    # exact-linear for every hybrid when shared (exact-linear's own is that shared one)
    trainings = [("rl", f"rl:path={rec_dir}", "rl")] if cfg.rl else []
    if cfg.hybrid_predictors == "own":
        trainings += [
            ("hybrid", r, "hybrid" if r == "exact-linear" else f"hybrid-{r}")
            for r in cfg.recommenders
        ]
    elif cfg.hybrid_predictors == "shared":
        trainings.append(("hybrid", "exact-linear", "hybrid"))
    # other budgets than the paper's live beside its predictors, never in their place
    budget = "" if cfg.predictor_steps == PAPER_PREDICTOR_STEPS else f"-s{cfg.predictor_steps}"
    predictors = []
    for alpha, tau in cfg.grid:
        for family, rec, stem in trainings:
            pdir = out / "predictors" / f"{stem}-a{alpha:g}-t{tau:g}{budget}"
            predictors.append((family, rec, alpha, tau, pdir))
            if (pdir / "manifest.json").is_file():
                continue
            log(
                f"training μ for {stem} (α={alpha:g}, τ={tau:g}, {cfg.predictor_steps} steps, {rec} inside)"
            )
            train_predictor(pdir, "paper", alpha=alpha, tau=tau, recommender=rec, seed=cfg.seed,
                            steps=cfg.predictor_steps, sac=PREDICTOR_SAC, resume=True,
                            progress=lambda d, t, a=alpha, b=tau, f=stem: report(f"μ {f} α={a:g} τ={b:g}", d, t),
                            **ov)  # fmt: skip
    return predictors


def _evaluate_all(
    cfg: StudyConfig, out: Path, rec_dir: Path, predictors: list[tuple], log, report
) -> None:
    """Evaluate baselines, hybrids, rl and lookahead; each new row is appended to points.csv."""
    jobs = [("threshold" if r == "exact-linear" else f"threshold-{r}", "baseline", None, None,
             "threshold" if r == "exact-linear" else f"threshold-{r}") for r in cfg.recommenders]  # fmt: skip
    jobs.append(("rl-recommender", "baseline", None, None, f"rl-recommender:path={rec_dir}"))
    for family, rec, alpha, tau, pdir in predictors:
        if family == "rl":
            jobs.append(("rl", "rl", alpha, tau, f"rl:path={pdir}"))
        else:
            users = cfg.recommenders if cfg.hybrid_predictors == "shared" else (rec,)
            jobs += [
                (f"hybrid-{r}", "hybrid", alpha, tau, f"hybrid-{r}:path={pdir}") for r in users
            ]
    if cfg.lookahead and "lookahead" in REGISTRY:
        jobs.append(("lookahead", "lookahead", None, None, "lookahead"))
    elif cfg.lookahead:
        log("policy 'lookahead' is not registered: left out of the fronts")
    points_path = out / "points.csv"
    done = {
        (r["method"], r["alpha"], r["tau"], r["policy"])
        for r in _read_rows(points_path, latest=False)
    }
    for i, (method, family, alpha, tau, policy) in enumerate(jobs):
        key = (method, _fmt(alpha), _fmt(tau), policy)
        report("evaluations", i, len(jobs))
        if key in done:
            continue
        row = _evaluate(cfg, method, family, alpha, tau, policy, log)
        _append(points_path, row)
    report("evaluations", len(jobs), len(jobs))


def write_reports(cfg: StudyConfig, out: Path, rec_dir: Path) -> dict[str, Any]:
    """table3.csv, table1.csv (when φ exists) and pareto.png from points.csv as it stands."""
    points_path = out / "points.csv"
    rows = _read_rows(points_path)
    T, beta = SETTINGS[cfg.setting]
    table3 = rf_at_rr(rows, T, beta)
    _write(out / "table3.csv", table3, TABLE3_COLUMNS)
    table1 = recommender_table(rec_dir, cfg) if (rec_dir / "manifest.json").is_file() else []
    if table1:
        _write(
            out / "table1.csv",
            table1,
            ("recommender", "error", "cost", "paper_error", "paper_cost", "d_error", "n_failed"),
        )
    plot_fronts(
        rows,
        out / "pareto.png",
        f"{cfg.setting}: T={T}, β={beta:g}, {cfg.episodes} episodes per point",
    )
    return {"table3": table3, "table1": table1, "points": points_path}


def _evaluate(cfg, method, family, alpha, tau, policy, log) -> dict[str, Any]:
    from abm.app.evaluation import evaluate

    start = time.perf_counter()
    try:
        r = evaluate("paper", policy, episodes=cfg.episodes, seed=cfg.eval_seed, workers=cfg.workers,
                     **cfg.overrides)  # fmt: skip
    except (ValueError, TypeError, RuntimeError) as exc:
        # a policy that cannot run here (e.g. lookahead with other parameters) is logged, not fatal
        log(f"{method} could not be evaluated: {exc}")
        r = {
            k: float("nan")
            for k in ("rr_mean", "rr_std", "rf_mean", "rf_std", "gini_mean", "cost_mean")
        }
        r["n_unadvised"] = 0
    seconds = time.perf_counter() - start
    log(
        f"{method:22s} α={_fmt(alpha):>4} τ={_fmt(tau):>4}  RR {r['rr_mean']:.3f}  RF {r['rf_mean']:.3f}  ({seconds:.0f} s)"
    )
    return {"method": method, "family": family, "alpha": _fmt(alpha), "tau": _fmt(tau), "policy": policy,
            "rr": r["rr_mean"], "rr_std": r["rr_std"], "rf": r["rf_mean"], "rf_std": r["rf_std"],
            "gini": r["gini_mean"], "cost": r["cost_mean"], "n_unadvised": r["n_unadvised"],
            "episodes": cfg.episodes, "seconds": round(seconds, 2)}  # fmt: skip


def pareto_front(rr: np.ndarray, rf: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points (higher RR and RF are better), by increasing RR."""
    keep = [i for i in range(rr.shape[0])
            if np.isfinite(rr[i]) and np.isfinite(rf[i])
            and not np.any((rr >= rr[i]) & (rf >= rf[i]) & ((rr > rr[i]) | (rf > rf[i])))]  # fmt: skip
    return np.array(sorted(keep, key=lambda i: rr[i]), dtype=int)


def rf_at_rr(rows: list[dict], T: int, beta: float, target: float = TARGET_RR) -> list[dict]:
    """RF at RR ≈ ``target`` per method, read off its Pareto front.

    If the front spans ``target``, RF is interpolated linearly between the two front
    points around it (``rr`` = target); otherwise the front point with RR closest to
    ``target`` is taken and its own RR is reported.
    """
    out = []
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = [r for r in rows if r["method"] == method]
        rr = np.array([float(r["rr"]) for r in pts])
        rf = np.array([float(r["rf"]) for r in pts])
        front = pareto_front(rr, rf)
        if front.size == 0:
            continue
        fr, ff = rr[front], rf[front]
        if fr[0] <= target <= fr[-1] and front.size > 1:
            value, at = float(np.interp(target, fr, ff)), target
        else:
            j = int(np.argmin(np.abs(fr - target)))
            value, at = float(ff[j]), float(fr[j])
        out.append(
            {
                "method": method,
                "T": T,
                "beta": beta,
                "rf_at_rr095": round(value, 4),
                "rr": round(at, 4),
                "n_predictors": len(pts) if pts[0]["alpha"] != "" else 0,
            }
        )
    return out


def recommender_table(rec_dir: Path, cfg: StudyConfig, n: int = 200) -> list[dict]:
    """Table 1 protocol (same draws as ``bench-recommenders``) for φ and the chosen baselines."""
    from abm.app.evaluation import benchmark_recommenders
    from policies.rl.artefacts import read_manifest

    ov = cfg.overrides
    names = list(cfg.recommenders)
    base = benchmark_recommenders(n=n, seed=cfg.seed, names=names, **ov)
    rows = [{"recommender": b["recommender"], "error": b["error"], "cost": b["cost"],
             "paper_error": PAPER_TABLE1.get(b["recommender"], ("", ""))[0],
             "paper_cost": PAPER_TABLE1.get(b["recommender"], ("", ""))[1], "d_error": "",
             "n_failed": b["n_failed"]} for b in base]  # fmt: skip
    learned = benchmark_learned(rec_dir, n=n, seed=cfg.seed, **ov)
    manifest = read_manifest(rec_dir, "recommender")
    rows.insert(0, {"recommender": "rl (learned φ)", "error": learned["error"], "cost": learned["cost"],
                    "paper_error": PAPER_TABLE1["rl"][0], "paper_cost": PAPER_TABLE1["rl"][1],
                    "d_error": manifest["d_error"], "n_failed": 0})  # fmt: skip
    return rows


def benchmark_learned(rec_dir: Path, n: int = 200, seed: int = 0, goal_max: float = 0.95,
                      **overrides: Any) -> dict[str, float]:  # fmt: skip
    """Error and true cost of φ on the draws of :func:`abm.app.evaluation.benchmark_recommenders`.

    The draws are rebuilt exactly as there (same stream, same rejection loop), so the
    numbers sit in one table with the baselines'.
    """
    from abm.model import RecourseModel
    from abm.rng import stream
    from policies.rl.learned import LearnedRecommender

    model = RecourseModel(
        "paper", "none", seed=seed, agents=False, record_events=False, **overrides
    )
    ctx, world = model.context, model.world
    rng = stream(seed, "bench-recommenders")
    X = np.empty((0, ctx.n_features))
    while X.shape[0] < n:
        draw = world.generator.sample(n, rng)
        X = np.concatenate([X, draw[ctx.decision_model.score(draw) < goal_max]])[:n]
    s = ctx.decision_model.score(X)
    goals = s + rng.uniform(0.0, 1.0, n) * (goal_max - s)
    rec = LearnedRecommender(rec_dir)
    rec.prepare(ctx)
    X_cf = rec.recommend(X, goals, stream(seed, "bench-rl"))
    return {"error": float(np.abs(ctx.decision_model.score(X_cf) - goals).mean()),
            "cost": float((np.abs(X_cf - X) @ ctx.difficulty).mean())}  # fmt: skip


# one hue per recommender: a baseline (marker) and its hybrid (dashed front) share it
REC_COLOURS = {
    "exact-linear": "tab:grey",
    "ustun": "tab:orange",
    "wachter": "tab:green",
    "dice": "tab:red",
}
REC_MARKERS = {"exact-linear": "o", "ustun": "s", "wachter": "^", "dice": "D"}


def _style(method: str, family: str) -> tuple[str, str, str]:
    """(colour, marker, legend label) of a method in the front plots."""
    if method == "rl":
        return "tab:blue", "o", "rl (learned μ + φ)"
    if method == "rl-recommender":
        return "tab:blue", "X", "rl-recommender (threshold + φ)"
    if family == "lookahead":
        # lookahead knows the behaviour model: a yardstick, not a competitor
        return "tab:purple", "P", f"{method} (privileged)"
    rec = method.split("-", 1)[1] if "-" in method else "exact-linear"
    return REC_COLOURS.get(rec, "black"), REC_MARKERS.get(rec, "v"), method


def plot_fronts(rows: list[dict], path: Path, title: str) -> None:
    """RR (x) vs RF (y): one line per learned method's front, one marker per baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 5.5))
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = [r for r in rows if r["method"] == method]
        family = pts[0]["family"]
        colour, marker, label = _style(method, family)
        rr = np.array([float(r["rr"]) for r in pts])
        rf = np.array([float(r["rf"]) for r in pts])
        if family in ("rl", "hybrid"):
            front = pareto_front(rr, rf)
            ax.scatter(rr, rf, color=colour, marker=marker, alpha=0.35, s=18)
            ax.plot(rr[front], rf[front], color=colour, marker=marker, label=label,
                    linestyle="-" if family == "rl" else "--")  # fmt: skip
        else:
            ax.scatter(
                rr, rf, color=colour, marker=marker, s=70, label=label, edgecolor="black", zorder=3
            )
    ax.axvline(TARGET_RR, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("recourse reliability RR (mean of 10 episodes)")
    ax.set_ylabel("recourse feasibility RF")
    ax.set_title(title)
    ax.legend(
        fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0)
    )  # outside: never over a point
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


def _read_rows(path: Path, latest: bool = True) -> list[dict]:
    """The evaluated points: one per (method, alpha, tau), the latest appended wins
    (``latest=False``: one per (method, alpha, tau, policy)).

    A failed evaluation (RR and RF both NaN) is not a result: it is left out, so the
    next run of the study tries that point again.
    """
    rows = {}
    for r in _read_csv(path):
        if float(r["rr"]) == float(r["rr"]) or float(r["rf"]) == float(r["rf"]):
            rows[(r["method"], r["alpha"], r["tau"]) + (() if latest else (r["policy"],))] = r
    return list(rows.values())


def _check_reused_recommender(rec_dir: Path, cfg: StudyConfig) -> None:
    from policies.rl.artefacts import read_manifest

    beta = read_manifest(rec_dir, "recommender")["scenario"]["beta"]
    if beta != cfg.overrides["beta"]:
        raise ValueError(f"--phi: {rec_dir} was trained at beta={beta:g}, the setting {cfg.setting} "
                         f"has beta={cfg.overrides['beta']:g}")  # fmt: skip


def merge_table3(path: Path, rows: list[dict]) -> list[dict]:
    """Write ``rows`` into the combined Table 3 at ``path``, replacing its rows of the
    same (T, beta) and keeping the other settings'; returns the merged rows (by T, beta desc)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {(int(r["T"]), float(r["beta"])) for r in rows}
    kept = [r for r in _read_csv(path) if (int(r["T"]), float(r["beta"])) not in settings]
    merged = sorted(kept + list(rows), key=lambda r: (int(r["T"]), -float(r["beta"])))
    _write(path, merged, TABLE3_COLUMNS)
    return merged


def _read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _append(path: Path, row: dict[str, Any]) -> None:
    new = not path.is_file()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=POINT_COLUMNS)
        if new:
            w.writeheader()
        w.writerow(row)


def _write(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
