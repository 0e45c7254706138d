"""Pareto-front study of durable-recourse-rl §5 (Figure 2, Tables 1 and 3), resumable.

For one setting (T, β): train φ (or reuse one: φ's environment depends on β only), then
for every (α, τ) of the grid a predictor with φ inside (``rl``) and predictors for the
hybrids: with ``hybrid_predictors="shared"`` one trained with ``exact-linear`` inside and
shared by every ``hybrid-<rec>``; with ``"own"`` one per recommender, as in the paper
(each training step is a tick with that recommender inside, so ustun and DiCE predictors
cost 10-100x more); with ``"none"`` no hybrids (a study of ``rl`` alone).

Baselines, hybrids and ``rl`` are evaluated on paired episodes by the study runner: each
point is one run of the ``pareto-eval`` experiment, stored under ``evaluations/`` keyed
by everything that determines it (resumable; ``--workers`` evaluates points in
parallel). The reports (``points.csv``, ``table3.csv``, ``table1.csv``, ``pareto.png``) are
rebuilt from that store; the latest evaluation of a (method, α, τ) is the one used. A
``points.csv`` written by earlier versions (a CSV appended per evaluation) is converted
into the store once. Finished artefacts and evaluated points are skipped when the study
is run again.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from abm.provenance import RESULTS_SCHEMA, write_json
from abm.registry import REGISTRY
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError, one_line, problem
from lab.study import Study, load_study, pareto_front, run_id
from lab.study import runner as study_runner
from lab.study.experiments import ParetoParams
from policies.rl import HYBRID_RECOMMENDERS

if TYPE_CHECKING:
    import pandas as pd

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
# the strongest simple baselines (issue 14): goal g = th_t + c for a constant margin c,
# with each recommender; ``{phi}`` is the trained φ of the setting
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3)
MARGIN_RECOMMENDERS = {
    "exact-linear": "exact-linear",
    "estimated": "exact-linear:weights=estimated",
    "true": "exact-linear:weights=true",
    "phi": "rl:path={phi}",
    "wachter": "wachter",
    "ustun": "ustun",
    "dice": "dice",
}
MarginRecommender = Literal["exact-linear", "estimated", "true", "phi", "wachter", "ustun", "dice"]
# the privileged planner's margin grid for its front (wider than its default 0-0.2: the
# true-difficulty margin front reaches RR 0.95 only above c = 0.2 at β = 0.01)
ORACLE_GRID = "goals=13,max_margin=0.3"
# paired bootstrap over the evaluation episodes (common to every point of a setting)
BOOTSTRAP_RESAMPLES = 2000
TABLE3_COLUMNS = ("method", "T", "beta", "rf_at_rr095", "rf_lo", "rf_hi", "rr", "n_predictors",
                  "episodes", "vs_margin", "diff", "diff_lo", "diff_hi")  # fmt: skip
POINT_COLUMNS = ("method", "family", "alpha", "tau", "margin", "policy", "rr", "rr_std", "rf",
                 "rf_std", "gini", "cost", "n_unadvised", "episodes", "seconds", "results_schema",
                 "rr_episodes", "rf_episodes")  # fmt: skip
# the evaluations: a study store of the `pareto-eval` experiment, one run per point
EVALUATIONS = "evaluations"
# dropout coefficients (rho, chi, omega) of eq. 6: the paper preset's calibrated ones are
# the shipped study's; "spec" runs the whole study under SPEC §1's defaults (issue 14, item 7)
BEHAVIOURS: dict[str, dict[str, float]] = {
    "calibrated": {},
    "spec": {"rho": 2.0, "chi": 0.1, "omega": 1.0},
}

Weight = Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)]
Margin = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]


class StudyConfig(BaseModel):
    """What one run of the study trains and evaluates (defaults: the shipped T = 1 runs).

    Build with :meth:`of` for one-line errors (field, value, allowed range).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    setting: Literal["T1-b005", "T1-b001", "T5-b005", "T5-b001"] = "T1-b005"
    behaviour: Literal["calibrated", "spec"] = "calibrated"
    grid: tuple[tuple[Weight, Weight], ...] = Field(
        ((1.0, 4.0), (1.0, 1.0), (2.0, 1.0), (4.0, 1.0), (10.0, 1.0), (30.0, 1.0)), min_length=1
    )
    recommenders: tuple[str, ...] = Field(("exact-linear", "wachter", "ustun"), min_length=1)
    predictor_steps: int = Field(PAPER_PREDICTOR_STEPS, ge=1)
    # no warm-up: with the default direction mapping the error-only reward is always 0
    rec_warmup_episodes: int = Field(0, ge=0)
    rec_episodes: int = Field(20_000, ge=1)
    episodes: int = Field(10, ge=1, le=100_000)
    seed: int = Field(0, ge=0)
    eval_seed: int = Field(0, ge=0)
    workers: int = Field(1, ge=1)
    hybrid_predictors: Literal["shared", "own", "none"] = "shared"
    lookahead: bool = True
    # constant-margin fronts: every margin c with every recommender named (none: no fronts)
    margins: tuple[Margin, ...] = MARGINS
    margin_recommenders: tuple[MarginRecommender, ...] = ("exact-linear", "estimated", "true",
                                                          "phi")  # fmt: skip
    rl: bool = True  # False: no predictors with φ inside (e.g. to add hybrid predictors only)
    report_only: bool = False
    # evaluate again, from the shipped artefacts, every point points.csv lists (no training)
    reevaluate: bool = False
    # a trained φ to use instead of training one (its β must be the setting's)
    recommender_from: str | None = None

    @classmethod
    def of(cls, **values: Any) -> StudyConfig:
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(one_line(exc, allowed_fields=tuple(cls.model_fields))) from None

    @field_validator("grid")
    @classmethod
    def _not_both_zero(cls, grid: tuple[tuple[float, float], ...]) -> Any:
        if any(a + t == 0 for a, t in grid):
            raise ValueError("every (alpha, tau) must lie in [0, 1e6]^2 and not both be 0")
        return grid

    @field_validator("recommenders")
    @classmethod
    def _hybrid_recommenders(cls, recs: tuple[str, ...]) -> Any:
        bad = [r for r in recs if r not in HYBRID_RECOMMENDERS]
        if bad:
            raise ValueError(
                f"{bad[0]!r} is not allowed; allowed: {', '.join(HYBRID_RECOMMENDERS)}"
            )
        return recs

    @property
    def overrides(self) -> dict[str, Any]:
        T, beta = SETTINGS[self.setting]
        # the calibrated behaviour adds no keys, so the shipped points keep their run ids
        return {"validity": T, "beta": beta, **BEHAVIOURS[self.behaviour]}


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


def parse_numbers(option: str, text: str) -> tuple[float, ...]:
    """``0,0.05,0.1`` -> (0.0, 0.05, 0.1); a ConfigError names ``option`` otherwise."""
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        try:
            out.append(float(item))
        except ValueError:
            raise ConfigError(
                problem(option, item, "comma-separated numbers, e.g. 0,0.05,0.1")
            ) from None
    return tuple(out)


def run_study(
    cfg: StudyConfig,
    out: str | Path,
    log: Callable[[str], None] = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Train, evaluate and summarise; returns {"table3": rows, "table1": rows, "points": path}.

    With ``cfg.report_only`` nothing is trained or evaluated: the reports are rebuilt from
    the evaluations as they stand (e.g. after an interrupted run).
    """
    from lab.experiments.rl_training import train_recommender

    out = Path(out)
    if cfg.report_only and not (
        (out / EVALUATIONS / "manifest.json").is_file() or (out / "points.csv").is_file()
    ):  # checked before anything is written: an empty directory stays empty
        raise ConfigError(problem("--report-only", str(out), "a directory with the evaluations "
                                  f"of an earlier run ({EVALUATIONS}/ or points.csv)",
                                  verb="has nothing to report"))  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    report = progress or (lambda what, done, total: None)
    rec_dir = out / "recommender"
    if cfg.recommender_from is not None:
        rec_dir = Path(cfg.recommender_from)
        _check_reused_recommender(rec_dir, cfg)
    if cfg.report_only:
        return write_reports(cfg, out, rec_dir, log)
    config = cfg.model_dump(mode="json")
    write_json(out / "study.json", config)
    # a setting's points often come from several runs (other recommenders, grids): keep them all
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **config}) + "\n")
    if cfg.reevaluate:
        listed = [j for j in _listed_points(out) if _uses(j[0], cfg.recommenders)]
        extra = oracle_jobs(cfg) if cfg.lookahead else []
        jobs = _with_margins(cfg, listed + extra, _phi_dir(listed, rec_dir))
        log(f"evaluating the {len(listed)} point(s) of points.csv with the artefacts as they are, "
            f"and {len(jobs) - len(listed)} constant-margin and privileged point(s); points "
            "already evaluated under the current rules, with per-episode figures, are kept")  # fmt: skip
        _evaluate_all(cfg, out, rec_dir, jobs, log, report, complete_old=True)
        return write_reports(cfg, out, rec_dir, log)
    if not (rec_dir / "manifest.json").is_file():
        log(f"training φ ({cfg.rec_warmup_episodes} + {cfg.rec_episodes} episodes)")
        train_recommender(rec_dir, "paper", seed=cfg.seed, warmup_episodes=cfg.rec_warmup_episodes,
                          episodes=cfg.rec_episodes, checkpoint_every=5000, resume=True,
                          progress=lambda d, t: report("φ episodes", d, t), **cfg.overrides)  # fmt: skip
    predictors = _train_predictors(cfg, out, rec_dir, log, report)
    _evaluate_all(cfg, out, rec_dir, _jobs(cfg, rec_dir, predictors, log), log, report)
    return write_reports(cfg, out, rec_dir, log)


def _uses(method: str, recommenders: tuple[str, ...]) -> bool:
    """Whether ``method``'s baseline recommender (if any) is among ``recommenders``."""
    if method == "threshold":
        return "exact-linear" in recommenders
    family, _, rec = method.partition("-")
    return family not in ("threshold", "hybrid") or rec in recommenders


def _listed_points(out: Path) -> list[tuple]:
    """(method, family, alpha, tau, margin, policy) of every point in ``out/points.csv``,
    any schema."""
    path = out / "points.csv"
    if not path.is_file():
        raise ConfigError(problem("--reevaluate", str(out), "a directory with a points.csv",
                                  verb="has no points to evaluate"))  # fmt: skip
    jobs: dict[tuple, tuple] = {}
    for r in _read_csv(path):
        job = _job(r)
        jobs[job[:5]] = job
    return list(jobs.values())


def _job(r: dict[str, str]) -> tuple:
    """(method, family, alpha, tau, margin, policy) of a points.csv row (older files have
    no margin column)."""
    return (r["method"], r["family"], _num(r["alpha"]), _num(r["tau"]), _num(r.get("margin")),
            r["policy"])  # fmt: skip


def margin_jobs(cfg: StudyConfig, phi_dir: Path) -> list[tuple]:
    """The constant-margin points: goal th_t + c with each recommender of
    ``cfg.margin_recommenders``, for every c of ``cfg.margins`` (issue 14's baselines)."""
    jobs = []
    for rec in cfg.margin_recommenders:
        spec = MARGIN_RECOMMENDERS[rec].format(phi=phi_dir)
        for c in cfg.margins:
            policy = f"last-threshold:margin={c:g}+{spec}"
            jobs.append((f"margin-{rec}", "margin", None, None, float(c), policy))
    return jobs


def oracle_jobs(cfg: StudyConfig) -> list[tuple]:
    """The privileged front (issue 14, item 4): the lookahead planner, which simulates the
    true model, advising through exact-linear with the true difficulties, once per
    (α, τ) of the grid as its eq. 16 objective; margins 0 to 0.3 in steps of 0.025."""
    return [("lookahead-true", "lookahead", a, t, None,
             f"lookahead:alpha={a:g},tau={t:g},{ORACLE_GRID}+exact-linear:weights=true")
            for a, t in cfg.grid]  # fmt: skip


def _with_margins(cfg: StudyConfig, jobs: list[tuple], phi_dir: Path) -> list[tuple]:
    """``jobs`` and the margin points (a listed point of the same key gives way)."""
    extra = margin_jobs(cfg, phi_dir)
    keys = {j[:5] for j in extra}
    return [j for j in jobs if j[:5] not in keys] + extra


def _phi_dir(jobs: list[tuple], rec_dir: Path) -> Path:
    """The φ the listed ``rl-recommender`` point used (T = 5 settings reuse another
    setting's), else ``rec_dir``."""
    for method, *_, policy in jobs:
        if method == "rl-recommender" and ":path=" in policy:
            return Path(policy.split(":path=", 1)[1])
    return rec_dir


def _train_predictors(cfg: StudyConfig, out: Path, rec_dir: Path, log, report) -> list[tuple]:
    """Train (or find) every predictor of the grid; returns (family, recommender, α, τ, dir)."""
    from lab.experiments.rl_training import PREDICTOR_SAC, train_predictor

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


def _jobs(cfg: StudyConfig, rec_dir: Path, predictors: list[tuple], log) -> list[tuple]:
    """(method, family, alpha, tau, margin, policy) of every point to evaluate."""
    jobs = [("threshold" if r == "exact-linear" else f"threshold-{r}", "baseline", None, None,
             None, "threshold" if r == "exact-linear" else f"threshold-{r}")
            for r in cfg.recommenders]  # fmt: skip
    jobs.append(("rl-recommender", "baseline", None, None, None, f"rl-recommender:path={rec_dir}"))
    for family, rec, alpha, tau, pdir in predictors:
        if family == "rl":
            jobs.append(("rl", "rl", alpha, tau, None, f"rl:path={pdir}"))
        else:
            users = cfg.recommenders if cfg.hybrid_predictors == "shared" else (rec,)
            jobs += [(f"hybrid-{r}", "hybrid", alpha, tau, None, f"hybrid-{r}:path={pdir}")
                     for r in users]  # fmt: skip
    if cfg.lookahead and "lookahead" in REGISTRY:
        jobs.append(("lookahead", "lookahead", None, None, None, "lookahead"))
        jobs += oracle_jobs(cfg)
    elif cfg.lookahead:
        log("policy 'lookahead' is not registered: left out of the fronts")
    return _with_margins(cfg, jobs, rec_dir)


def evaluation_study(
    cfg: StudyConfig, jobs: list[tuple], episodes: list[int] | None = None
) -> Study:
    """The ``pareto-eval`` study of ``jobs`` (method, family, alpha, tau, margin, policy):
    one run per point, its episodes on the paired seeds ``eval_seed + i``."""
    columns: dict[str, list[Any]] = {"method": [], "family": [], "alpha": [], "tau": [],
                                     "margin": [], "policy": []}  # fmt: skip
    for job in jobs:
        for key, value in zip(columns, job, strict=True):
            columns[key].append(value)
    settings: dict[str, Any] = {**cfg.overrides}
    if episodes is None:
        settings["episodes"] = cfg.episodes
    else:  # points converted from an older points.csv keep their own episode counts
        columns["episodes"] = episodes
    return Study.build(resolve_scenario("paper"), name=f"pareto-{cfg.setting}",
                       experiment="pareto-eval", overrides=settings, seeds=[cfg.eval_seed],
                       zip=[columns])  # fmt: skip


def _evaluate_all(
    cfg: StudyConfig, out: Path, rec_dir: Path, jobs: list[tuple], log, report,
    complete_old: bool = False,
) -> None:  # fmt: skip
    """Evaluate ``jobs`` (baselines, hybrids, rl, lookahead, margins): the points not yet in
    the store (and those that failed before) run on the study runner, ``cfg.workers`` at a
    time. With ``complete_old``, points stored without per-episode RR and RF (evaluated
    before those were kept) run again, so that they get paired intervals."""
    study = evaluation_study(cfg, jobs)
    store = out / EVALUATIONS
    convert_points_csv(out, cfg)
    mine = {r.run_id for r in study.runs()}
    rerun = _without_episodes(store, mine) if complete_old else set()
    # every invocation adds its grid to the same (shared) store, and failures run again
    status = study_runner.run_study(study, store, workers=cfg.workers, shared=True, retry_errors=True,
                       rerun=rerun, progress=lambda done, total: report("evaluations", done, total))  # fmt: skip
    _, runs = load_study(store)
    for r in runs[runs["run_id"].isin(mine)].itertuples():
        where = f"{r.method:22s} α={_fmt(_none(r.alpha)):>4} τ={_fmt(_none(r.tau)):>4}"
        if r.status != "ok":
            # a policy that cannot run here (e.g. lookahead with other parameters) is logged
            log(f"{where}  could not be evaluated: {r.error}")
        else:
            log(f"{where}  RR {r.rr:.3f}  RF {r.rf:.3f}  ({r.seconds:.0f} s)")
    log(f"{status.completed} point(s) evaluated now, {status.skipped} already in {store}")


def _without_episodes(store: Path, run_ids: set[str]) -> set[str]:
    """Those of ``run_ids`` stored as finished but without per-episode RR and RF."""
    if not (store / "manifest.json").is_file():
        return set()
    _, runs = load_study(store)
    if runs.empty:
        return set()
    runs = runs[runs["run_id"].isin(run_ids) & (runs["status"] == "ok")]
    if "rr_episodes" not in runs:
        return set(runs["run_id"])
    return set(runs.loc[runs["rr_episodes"].isna(), "run_id"])


def convert_points_csv(out: Path, cfg: StudyConfig) -> int:
    """Move the points of an older ``points.csv`` (a CSV appended per evaluation) into
    the evaluation store, once: each row becomes the finished run of its point, in file
    order (``finished_at`` = its line number, so a later line still wins). Returns the
    number of points converted; 0 when the store exists already or there is no file."""
    path = out / "points.csv"
    if (out / EVALUATIONS / "manifest.json").is_file() or not path.is_file():
        return 0
    rows = [r for r in _read_csv(path) if _defined(r)]  # a failed evaluation is no result
    # points of another results schema were evaluated under other rules: never current
    rows = [r for r in rows if r.get("results_schema") == str(RESULTS_SCHEMA)]
    if not rows:
        return 0
    seed = _eval_seed(out, cfg)
    config = resolve_scenario("paper").replace(**cfg.overrides, seed=seed).to_dict()
    by_id: dict[str, tuple[int, dict]] = {}
    jobs, episodes = [], []
    for line, r in enumerate(rows, start=2):
        job = _job(r)
        params = ParetoParams(method=job[0], family=job[1], alpha=job[2], tau=job[3],
                              margin=job[4], episodes=int(r["episodes"])).model_dump(mode="json")  # fmt: skip
        rid = run_id(config, job[5], "pareto-eval", params)
        if rid not in by_id:
            jobs.append(job)
            episodes.append(int(r["episodes"]))
        by_id[rid] = (line, r)  # the same point evaluated twice: the later line wins
    study = evaluation_study(cfg.model_copy(update={"eval_seed": seed}), jobs, episodes)
    results = {}
    for rid, (line, r) in by_id.items():
        row = {c: float(r[c]) for c in ("rr", "rr_std", "rf", "rf_std", "gini", "cost", "seconds")}
        row.update(n_unadvised=int(r["n_unadvised"]), episodes=int(r["episodes"]))
        if r.get("rr_episodes"):  # written since per-episode figures are kept
            row.update(rr_episodes=r["rr_episodes"], rf_episodes=r["rf_episodes"])
        results[rid] = {"run_id": rid, "status": "ok", "error": "", "traceback": "",
                        "elapsed_s": row["seconds"], "rows": [row], "finished_at": float(line)}  # fmt: skip
    study_runner.record_runs(study, out / EVALUATIONS, results)
    return len(results)


def _eval_seed(out: Path, cfg: StudyConfig) -> int:
    # the seed the converted points were evaluated on: study.json records it
    try:
        return int(json.loads((out / "study.json").read_text()).get("eval_seed", cfg.eval_seed))
    except (OSError, ValueError):
        return cfg.eval_seed


def _num(text: str) -> float | None:
    return None if text in ("", None) else float(text)


def _none(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


def _defined(r: dict[str, Any]) -> bool:
    rr, rf = float(r["rr"]), float(r["rf"])
    return rr == rr or rf == rf


def read_points(out: Path) -> list[dict[str, Any]]:
    """The evaluated points: one per (method, alpha, tau, margin), the latest evaluation
    wins, in the order each was first evaluated.

    A failed evaluation (an error, or RR and RF both undefined) is left out. ``alpha``,
    ``tau`` and ``margin`` are texts ("" where they do not apply), as in ``points.csv``;
    ``rr_episodes`` and ``rf_episodes`` are JSON lists ("" for points evaluated before
    they were kept).
    """
    store = out / EVALUATIONS
    if not (store / "manifest.json").is_file():
        return []
    _, runs = load_study(store)
    if runs.empty:
        return []
    schema = study_runner.read_manifest(store).get("results_schema")
    runs = runs[runs["status"] == "ok"].sort_values("finished_at", kind="stable")
    latest: dict[tuple, dict[str, Any]] = {}
    for r in runs.to_dict("records"):
        r["results_schema"] = schema
        row = {c: r.get(c) for c in POINT_COLUMNS}
        for c in ("alpha", "tau", "margin"):
            row[c] = _fmt(_none(row[c]))
        for c in ("rr_episodes", "rf_episodes"):
            row[c] = row[c] if isinstance(row[c], str) else ""
        row["n_unadvised"], row["episodes"] = int(row["n_unadvised"]), int(row["episodes"])
        if _defined(row):
            latest[(row["method"], row["alpha"], row["tau"], row["margin"])] = row
    return list(latest.values())


def write_reports(
    cfg: StudyConfig, out: Path, rec_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """points.csv, table3.csv, table1.csv (when φ exists) and pareto.png from the
    evaluations as they stand (an older points.csv is converted first)."""
    convert_points_csv(out, cfg)
    rows = read_points(out)
    if not rows and cfg.report_only:
        rows = earlier_points(out, log)
    if not rows:
        raise ConfigError(problem("--out", str(out), "a directory with evaluated points of "
                                  f"results schema {RESULTS_SCHEMA}", verb="has none"))  # fmt: skip
    points_path = out / "points.csv"
    _write(points_path, rows, POINT_COLUMNS)
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
        f"{cfg.setting}: T={T}, β={beta:g}, {cfg.episodes} episodes per point"
        + ("" if cfg.behaviour == "calibrated" else f", {cfg.behaviour} behaviour"),
    )
    return {"table3": table3, "table1": table1, "points": points_path}


def earlier_points(out: Path, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """The points of ``points.csv`` evaluated under the newest earlier results schema it
    holds, labelled with it (``results_schema``), for ``--report-only`` only: such points
    are never read back as current (nor converted into the evaluation store), but the
    tables they gave can be rebuilt as they were. The latest evaluation of a point wins."""
    rows = [r for r in _read_csv(out / "points.csv") if _defined(r)]
    schemas = sorted({int(r["results_schema"]) for r in rows if r.get("results_schema")})
    if not schemas:
        return []
    latest: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        if r.get("results_schema") == str(schemas[-1]):
            row = {c: r.get(c, "") for c in POINT_COLUMNS}
            row["n_unadvised"], row["episodes"] = int(row["n_unadvised"]), int(row["episodes"])
            latest[(row["method"], row["alpha"], row["tau"], row["margin"])] = row
    log(f"{out}: the points were evaluated under results schema {schemas[-1]} (this is "
        f"{RESULTS_SCHEMA}): the reports are theirs; evaluate again for current figures")  # fmt: skip
    return list(latest.values())


def read_off(rr: np.ndarray, rf: np.ndarray, target: float = TARGET_RR) -> tuple[float, float]:
    """(RF, RR) of a method's points rr, rf (p,) read off its Pareto front at RR = ``target``.

    If the front spans ``target``, RF is interpolated linearly between the two front points
    around it (and RR is ``target``); otherwise the front point with RR closest to
    ``target`` is taken, with its own RR. (NaN, NaN) when no point is defined.
    """
    front = pareto_front(rr, rf)
    if front.size == 0:
        return math.nan, math.nan
    fr, ff = rr[front], rf[front]
    if fr[0] <= target <= fr[-1] and front.size > 1:
        return float(np.interp(target, fr, ff)), target
    j = int(np.argmin(np.abs(fr - target)))
    return float(ff[j]), float(fr[j])


def read_front(rr: np.ndarray, rf: np.ndarray, at: float = TARGET_RR) -> tuple[float, float]:
    """:func:`read_off` of points whose per-episode RR and RF are rr, rf (p, e): each point
    is its episode mean (NaN episodes left out)."""
    with np.errstate(invalid="ignore"):
        return read_off(np.nanmean(rr, axis=1), np.nanmean(rf, axis=1), at)


def episode_arrays(
    runs: pd.DataFrame, worlds: list[int], policies: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """RR and RF of a study's ``runs`` (one row per run: world_seed, policy, seed, rr, rf),
    each (worlds, policies, episodes), episodes in seed order: every policy of a world on
    the same seeds, as a paired study runs them."""
    idx = runs.sort_values(["world_seed", "policy", "seed"]).set_index(["world_seed", "policy"])
    return tuple(np.array([[idx.loc[(w, p), fig].to_numpy(float) for p in policies]
                           for w in worlds]) for fig in ("rr", "rf"))  # fmt: skip


def _episodes(pts: list[dict]) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-episode RR and RF of a method's points, each (p, e); None unless every point
    kept them for the same number of episodes."""
    if any(not p.get("rr_episodes") for p in pts):
        return None
    rr = [json.loads(p["rr_episodes"]) for p in pts]
    rf = [json.loads(p["rf_episodes"]) for p in pts]
    if len({len(x) for x in rr + rf}) != 1:
        return None
    return np.array(rr, dtype=float), np.array(rf, dtype=float)


def _resampled_means(
    rr: np.ndarray, rf: np.ndarray, draws: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each point's RR and RF in each resample: rr, rf (p, e) per episode, ``draws`` (b, e)
    episode indices; means over a point's defined episodes, as for the point itself.
    Returns two (p, b) arrays (NaN where a resample has no defined episode)."""

    def means(x: np.ndarray) -> np.ndarray:
        sub = x[:, draws]  # (p, b, e)
        ok = np.isfinite(sub)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ok, sub, 0.0).sum(axis=2) / ok.sum(axis=2)

    return means(rr), means(rf)


def margin_baseline(method: str) -> str | None:
    """The constant-margin method with the same recommender as ``method`` (None for the
    margin methods themselves): the strongest simple baseline it is compared with."""
    if method.startswith("margin-"):
        return None
    if method in ("rl", "rl-recommender"):
        return "margin-phi"
    if method in ("threshold", "hybrid-exact-linear", "lookahead"):
        return "margin-exact-linear"  # lookahead advises with uniform exact-linear
    if method == "lookahead-true":
        return "margin-true"
    rec = method.split("-", 1)[1] if "-" in method else ""
    return f"margin-{rec}" if rec else None


def rf_at_rr(rows: list[dict], T: int, beta: float, target: float = TARGET_RR,
             resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> list[dict]:  # fmt: skip
    """Table 3: RF at RR ≈ ``target`` per method (:func:`read_off`), with a 95% interval,
    and the paired difference to the constant-margin front of the same recommender read
    off at the RR the method reached (``target`` when its front spans it).

    The intervals come from one paired bootstrap over the evaluation episodes: every point
    of a setting is evaluated on the same seeds, so each resample of episode indices is
    applied to every point of every method (common random numbers), each front is read off
    again, and the 2.5 / 97.5 percentiles of the resampled values (and of the resampled
    differences) are reported. Methods whose points lack per-episode figures get none.
    """
    by_method: dict[str, list[dict]] = {}
    for r in rows:
        by_method.setdefault(r["method"], []).append(r)
    draws: dict[int, np.ndarray] = {}  # episodes -> (resamples, episodes) indices, shared
    boot: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # method -> resampled (p, b) RR, RF
    points: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    out: dict[str, dict[str, Any]] = {}
    for method, pts in by_method.items():
        rr = np.array([float(r["rr"]) for r in pts])
        rf = np.array([float(r["rf"]) for r in pts])
        value, at = read_off(rr, rf, target)
        if value != value:
            continue
        points[method] = rr, rf
        row = {"method": method, "T": T, "beta": beta, "rf_at_rr095": round(value, 4),
               "rf_lo": "", "rf_hi": "", "rr": round(at, 4),
               "n_predictors": len(pts) if pts[0]["alpha"] != "" else 0, "episodes": "",
               "vs_margin": "", "diff": "", "diff_lo": "", "diff_hi": "", "_at": at,
               "_value": value}  # fmt: skip
        per = _episodes(pts)
        if per is not None and resamples > 0:
            e = per[0].shape[1]
            if e not in draws:
                draws[e] = np.random.default_rng(seed).integers(0, e, size=(resamples, e))
            boot[method] = _resampled_means(*per, draws[e])
            # (b, 2): RF and the RR it was read at, per resample
            row["_boot"] = np.array(
                [read_off(*_column(boot[method], b), target) for b in range(resamples)]
            )
            lo, hi = np.nanpercentile(row["_boot"][:, 0], [2.5, 97.5])
            row.update(rf_lo=round(float(lo), 4), rf_hi=round(float(hi), 4), episodes=e)
        out[method] = row
    for method, row in out.items():
        base = margin_baseline(method)
        if base not in out:
            continue
        row["vs_margin"] = base
        # + 0.0: a tie reads 0.0, not -0.0
        row["diff"] = round(row["_value"] - read_off(*points[base], row["_at"])[0], 4) + 0.0
        mine, theirs = row.get("_boot"), boot.get(base)
        if mine is not None and theirs is not None and out[base]["episodes"] == row["episodes"]:
            diffs = [mine[b, 0] - read_off(*_column(theirs, b), mine[b, 1])[0]
                     for b in range(mine.shape[0])]  # fmt: skip
            lo, hi = np.nanpercentile(diffs, [2.5, 97.5])
            row.update(diff_lo=round(float(lo), 4) + 0.0, diff_hi=round(float(hi), 4) + 0.0)
    for row in out.values():
        for key in ("_at", "_value", "_boot"):
            row.pop(key, None)
    return list(out.values())


def _column(pair: tuple[np.ndarray, np.ndarray], b: int) -> tuple[np.ndarray, np.ndarray]:
    """Resample ``b`` of a method's resampled (p, b) RR and RF: two (p,) arrays."""
    return pair[0][:, b], pair[1][:, b]


def recommender_table(rec_dir: Path, cfg: StudyConfig, n: int = 200) -> list[dict]:
    """Table 1 protocol (same draws as ``bench-recommenders``) for φ and the chosen
    baselines: a ``recommender-bench`` study with φ as the recommender ``rl:path=DIR``."""
    from lab.evaluation import benchmark_recommenders
    from policies.rl.artefacts import read_manifest

    phi = f"rl:path={rec_dir}"
    bench = benchmark_recommenders(n=n, seed=cfg.seed, names=[*cfg.recommenders, phi],
                                   workers=cfg.workers, **cfg.overrides)  # fmt: skip
    learned = next(b for b in bench if b["recommender"] == phi)
    rows = [{"recommender": b["recommender"], "error": b["error"], "cost": b["cost"],
             "paper_error": PAPER_TABLE1.get(b["recommender"], ("", ""))[0],
             "paper_cost": PAPER_TABLE1.get(b["recommender"], ("", ""))[1], "d_error": "",
             "n_failed": b["n_failed"]} for b in bench if b is not learned]  # fmt: skip
    manifest = read_manifest(rec_dir, "recommender")
    rows.insert(0, {"recommender": "rl (learned φ)", "error": learned["error"], "cost": learned["cost"],
                    "paper_error": PAPER_TABLE1["rl"][0], "paper_cost": PAPER_TABLE1["rl"][1],
                    "d_error": manifest["d_error"], "n_failed": learned["n_failed"]})  # fmt: skip
    return rows


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
        if method == "lookahead-true":
            return "tab:purple", "P", "lookahead-true (privileged: simulator + true d)"
        return "tab:purple", "P", f"{method} (privileged)"
    if family == "margin":  # the recommender's own hue: its threshold + c front
        rec = method.split("-", 1)[1]
        colour = {"phi": "tab:blue", "estimated": "tab:brown", "true": "tab:olive"}.get(
            rec, REC_COLOURS.get(rec, "black")
        )
        return colour, ".", f"{method} (th + c, c swept)"
    rec = method.split("-", 1)[1] if "-" in method else "exact-linear"
    return REC_COLOURS.get(rec, "black"), REC_MARKERS.get(rec, "v"), method


def plot_fronts(rows: list[dict], path: Path, title: str) -> None:
    """RR (x) vs RF (y): one line per learned method's front (dotted: constant margins),
    one marker per baseline."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 5.5))
    ax = fig.subplots()
    for method in dict.fromkeys(r["method"] for r in rows):
        pts = [r for r in rows if r["method"] == method]
        family = pts[0]["family"]
        colour, marker, label = _style(method, family)
        rr = np.array([float(r["rr"]) for r in pts])
        rf = np.array([float(r["rf"]) for r in pts])
        if family in ("rl", "hybrid", "margin") or (family == "lookahead" and len(pts) > 1):
            front = pareto_front(rr, rf)
            ax.scatter(rr, rf, color=colour, marker=marker, alpha=0.35, s=18)
            style = {"rl": "-", "hybrid": "--", "margin": ":", "lookahead": "-."}[family]
            ax.plot(rr[front], rf[front], color=colour, marker=marker, label=label,
                    linestyle=style)  # fmt: skip
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


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


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


def _write(path: Path, rows: list[dict], columns: tuple[str, ...]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
