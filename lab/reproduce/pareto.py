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

Training seeds (issue 48): the study trains μ with one seed, in the plain directory
``predictors/<stem>-a<α>-t<τ>``. Predictors trained with another seed S beside it
(``...-seedS``, :func:`seeds_beside`) are found and evaluated for the methods of
:data:`SEEDED` on the same paired episodes; Table 3 then reads a front per training seed
and treats the seed as a random effect (:func:`rf_at_rr`).
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from abm.provenance import RESULTS_SCHEMA, write_json
from abm.registry import REGISTRY
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError, one_line, problem
from lab.study import Study, load_study, pareto_front, run_id
from lab.study import runner as study_runner
from lab.study.experiments import ParetoParams

# the front read-offs and the margin grid live in lab.study.front (lab.study may not import
# lab.reproduce); capacity_goal and scripts/table3_worlds.py import them from here
from lab.study.front import MARGINS, TARGET_RR, front_rf_at, front_rr_at, margin_policy, read_off
from lab.study.front import episode_arrays as episode_arrays
from lab.study.front import read_front as read_front
from lab.study.stats import MIN_WORLDS_FOR_VERDICT, verdict, world_interval
from policies.rl import HYBRID_RECOMMENDERS

SETTINGS: dict[str, tuple[int, float]] = {
    "T1-b005": (1, 0.05),
    "T1-b001": (1, 0.01),
    "T5-b005": (5, 0.05),
    "T5-b001": (5, 0.01),
}
# durable-recourse-rl Table 3 (T = 1): RF at RR ≈ 0.95
PAPER_TABLE3 = {
    ("rl", 0.05): 0.707,
    ("rl", 0.01): 0.365,
    ("hybrid-ustun", 0.05): 0.625,
    ("hybrid-ustun", 0.01): 0.256,
    ("hybrid-wachter", 0.05): 0.606,
    ("hybrid-wachter", 0.01): 0.303,
    ("hybrid-dice", 0.05): 0.550,
    ("hybrid-dice", 0.01): 0.247,
}
PAPER_TABLE1 = {
    "rl": (1.9e-3, 5.9e-2),
    "ustun": (2.2e-16, 0.30),
    "wachter": (2.6e-3, 0.27),
    "dice": (1.6e-2, 0.36),
}
HYBRID_PREDICTORS = ("shared", "own", "none")
PAPER_PREDICTOR_STEPS = 7000
# the strongest simple baselines (issue 14): goal g = th_t + c for a constant margin c of
# MARGINS, with each recommender; ``{phi}`` is the trained φ of the setting
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
TABLE3_COLUMNS = (
    "method",
    "T",
    "beta",
    "rf_at_rr095",
    "rf_lo",
    "rf_hi",
    "rr",
    "n_predictors",
    "episodes",
    "worlds",
    "training_seeds",
    "trained",
    "vs_margin",
    "diff",
    "diff_lo",
    "diff_hi",
    "rr_diff",
    "rr_diff_lo",
    "rr_diff_hi",
    "outside",
    "verdict",
)
POINT_COLUMNS = (
    "method",
    "family",
    "alpha",
    "tau",
    "margin",
    "training_seed",
    "policy",
    "rr",
    "rr_std",
    "rf",
    "rf_std",
    "gini",
    "cost",
    "n_unadvised",
    "episodes",
    "seconds",
    "results_schema",
    "rr_episodes",
    "rf_episodes",
)
# the evaluations: a study store of the `pareto-eval` experiment, one run per point
EVALUATIONS = "evaluations"
# the methods evaluated with every training seed of their μ found beside the seed-0
# predictor; the other hybrids keep training seed 0 alone (their recommenders cost more)
SEEDED = ("rl", "hybrid-exact-linear")
_PATH = re.compile(r"path=([^,+]+)")
_SEED_SUFFIX = re.compile(r"-seed(\d+)$")
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
    margin_recommenders: tuple[MarginRecommender, ...] = (
        "exact-linear",
        "estimated",
        "true",
        "phi",
    )
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


def predictor_dir(
    out: Path,
    stem: str,
    alpha: float,
    tau: float,
    steps: int = PAPER_PREDICTOR_STEPS,
    seed: int = 0,
) -> Path:
    """Where the (stem, α, τ) predictor lives: ``-sN`` when trained for N ≠ 7,000 steps,
    ``-seedS`` when trained with training seed S ≠ 0 (capacity_goal's naming)."""
    budget = "" if steps == PAPER_PREDICTOR_STEPS else f"-s{steps}"
    suffix = budget + (f"-seed{seed}" if seed else "")
    return Path(out) / "predictors" / f"{stem}-a{alpha:g}-t{tau:g}{suffix}"


def seeds_beside(base: Path) -> list[int]:
    """The training seeds of the predictor whose seed-0 directory is ``base``: 0 and each S
    of a trained ``base-seedS`` directory beside it (as capacity_goal's ``training_seeds``).
    A ``-seedS`` directory whose manifest records another seed is refused."""
    base = Path(base)
    found = []
    for d in base.parent.glob(f"{base.name}-seed*"):
        seed = d.name.removeprefix(f"{base.name}-seed")
        if not (seed.isdigit() and int(seed) > 0 and (d / "manifest.json").is_file()):
            continue
        recorded = json.loads((d / "manifest.json").read_text()).get("seed", int(seed))
        if recorded != int(seed):
            where = f"{d / 'manifest.json'}: seed"
            raise ConfigError(problem(where, recorded, f"{seed}, as the directory's name says"))
        found.append(int(seed))
    return [0, *sorted(found)]


def policy_seed(policy: str) -> int | None:
    """The training seed of the μ a policy spec uses (``rl`` or ``hybrid-*``): the
    ``-seedS`` suffix of its path, 0 without one; None for policies without a μ."""
    name = policy.split(":", 1)[0]
    if name != "rl" and not name.startswith("hybrid-"):
        return None
    path = _PATH.search(policy)
    suffix = _SEED_SUFFIX.search(path.group(1).rstrip("/")) if path else None
    return int(suffix.group(1)) if suffix else 0


def training_seed(row: Mapping[str, Any]) -> int | None:
    """A point's training seed: its ``training_seed`` (points.csv), else its policy's
    (:func:`policy_seed`); None for points without a μ."""
    given = row.get("training_seed")
    if given not in (None, ""):
        return int(float(given))
    return policy_seed(str(row.get("policy") or ""))


def with_seeds(jobs: Iterable[tuple]) -> list[tuple]:
    """``jobs`` with, after each point of :data:`SEEDED` on a seed-0 predictor, the same
    point on every predictor trained with another seed beside it (:func:`seeds_beside`);
    no point twice. The seed-0 points, and so their run ids, are unchanged."""
    out = []
    for job in jobs:
        out.append(job)
        path = _PATH.search(job[5])
        if job[0] not in SEEDED or policy_seed(job[5]) != 0 or path is None:
            continue
        for seed in seeds_beside(Path(path.group(1)))[1:]:
            policy = f"{job[5][: path.end(1)]}-seed{seed}{job[5][path.end(1) :]}"
            out.append((*job[:5], policy))
    return list(dict.fromkeys(out))


def not_evaluated(rows: list[dict]) -> list[tuple[str, int, str, str]]:
    """(method, training seed, alpha, tau) of each point of :data:`SEEDED` whose μ was
    trained with another seed (found beside the seed-0 predictor of a row) but which is
    not among ``rows``."""
    have = {(r["method"], training_seed(r), r["alpha"], r["tau"]) for r in rows}
    missing = []
    for r in rows:
        path = _PATH.search(str(r.get("policy") or ""))
        if r["method"] not in SEEDED or training_seed(r) != 0 or path is None:
            continue
        for seed in seeds_beside(Path(path.group(1)))[1:]:
            if (r["method"], seed, r["alpha"], r["tau"]) not in have:
                missing.append((r["method"], seed, r["alpha"], r["tau"]))
    return list(dict.fromkeys(missing))


def run_pareto(
    cfg: StudyConfig,
    out: str | Path,
    log: Callable[[str], None] = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Train, evaluate and summarise; returns {"table3": rows, "table1": rows, "points": path}.

    With ``cfg.report_only`` nothing is trained or evaluated: the reports are rebuilt from
    the evaluations as they stand (e.g. after an interrupted run).
    """
    from lab.training import train_recommender

    out = Path(out)
    if cfg.report_only and not (
        (out / EVALUATIONS / "manifest.json").is_file() or (out / "points.csv").is_file()
    ):  # checked before anything is written: an empty directory stays empty
        raise ConfigError(
            problem(
                "--report-only",
                str(out),
                "a directory with the evaluations "
                f"of an earlier run ({EVALUATIONS}/ or points.csv)",
                verb="has nothing to report",
            )
        )
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
        listed = with_seeds(j for j in _listed_points(out) if _uses(j[0], cfg.recommenders))
        extra = oracle_jobs(cfg) if cfg.lookahead else []
        jobs = _with_margins(cfg, listed + extra, _phi_dir(listed, rec_dir))
        log(
            f"evaluating the {len(listed)} point(s) of points.csv with the artefacts as they are, "
            f"and {len(jobs) - len(listed)} constant-margin and privileged point(s); points "
            "already evaluated under the current rules, with per-episode figures, are kept"
        )
        _evaluate_all(cfg, out, rec_dir, jobs, log, report, complete_old=True)
        return write_reports(cfg, out, rec_dir, log)
    if not (rec_dir / "manifest.json").is_file():
        log(f"training φ ({cfg.rec_warmup_episodes} + {cfg.rec_episodes} episodes)")
        train_recommender(
            rec_dir,
            "paper",
            seed=cfg.seed,
            warmup_episodes=cfg.rec_warmup_episodes,
            episodes=cfg.rec_episodes,
            checkpoint_every=5000,
            resume=True,
            progress=lambda d, t: report("φ episodes", d, t),
            **cfg.overrides,
        )
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
    any schema (one per training seed)."""
    path = out / "points.csv"
    if not path.is_file():
        raise ConfigError(
            problem(
                "--reevaluate",
                str(out),
                "a directory with a points.csv",
                verb="has no points to evaluate",
            )
        )
    jobs: dict[tuple, tuple] = {}
    for r in _read_csv(path):
        job = _job(r)
        jobs[(*job[:5], policy_seed(job[5]))] = job
    return list(jobs.values())


def _job(r: dict[str, str]) -> tuple:
    """(method, family, alpha, tau, margin, policy) of a points.csv row (older files have
    no margin column)."""
    return (
        r["method"],
        r["family"],
        _num(r["alpha"]),
        _num(r["tau"]),
        _num(r.get("margin")),
        r["policy"],
    )


def margin_jobs(cfg: StudyConfig, phi_dir: Path) -> list[tuple]:
    """The constant-margin points: goal th_t + c with each recommender of
    ``cfg.margin_recommenders``, for every c of ``cfg.margins`` (issue 14's baselines)."""
    jobs = []
    for rec in cfg.margin_recommenders:
        spec = MARGIN_RECOMMENDERS[rec].format(phi=phi_dir)
        for c in cfg.margins:
            policy = margin_policy(c, spec)
            jobs.append((f"margin-{rec}", "margin", None, None, float(c), policy))
    return jobs


def oracle_jobs(cfg: StudyConfig) -> list[tuple]:
    """The privileged front (issue 14, item 4): the lookahead planner, which simulates the
    true model, advising through exact-linear with the true difficulties, once per
    (α, τ) of the grid as its eq. 16 objective; margins 0 to 0.3 in steps of 0.025."""
    return [
        (
            "lookahead-true",
            "lookahead",
            a,
            t,
            None,
            f"lookahead:alpha={a:g},tau={t:g},{ORACLE_GRID}+exact-linear:weights=true",
        )
        for a, t in cfg.grid
    ]


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
    from lab.training import PREDICTOR_SAC, train_predictor

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
    predictors = []
    for alpha, tau in cfg.grid:
        for family, rec, stem in trainings:
            pdir = predictor_dir(out, stem, alpha, tau, cfg.predictor_steps)
            predictors.append((family, rec, alpha, tau, pdir))
            if (pdir / "manifest.json").is_file():
                continue
            log(
                f"training μ for {stem} (α={alpha:g}, τ={tau:g}, {cfg.predictor_steps} steps, {rec} inside)"
            )
            train_predictor(
                pdir,
                "paper",
                alpha=alpha,
                tau=tau,
                recommender=rec,
                seed=cfg.seed,
                steps=cfg.predictor_steps,
                sac=PREDICTOR_SAC,
                resume=True,
                progress=lambda d, t, a=alpha, b=tau, f=stem: report(
                    f"μ {f} α={a:g} τ={b:g}", d, t
                ),
                **ov,
            )
    return predictors


def _jobs(cfg: StudyConfig, rec_dir: Path, predictors: list[tuple], log) -> list[tuple]:
    """(method, family, alpha, tau, margin, policy) of every point to evaluate, the points
    of :data:`SEEDED` once per training seed found (:func:`with_seeds`)."""
    jobs = [
        (
            "threshold" if r == "exact-linear" else f"threshold-{r}",
            "baseline",
            None,
            None,
            None,
            "threshold" if r == "exact-linear" else f"threshold-{r}",
        )
        for r in cfg.recommenders
    ]
    jobs.append(("rl-recommender", "baseline", None, None, None, f"rl-recommender:path={rec_dir}"))
    for family, rec, alpha, tau, pdir in predictors:
        if family == "rl":
            jobs.append(("rl", "rl", alpha, tau, None, f"rl:path={pdir}"))
        else:
            users = cfg.recommenders if cfg.hybrid_predictors == "shared" else (rec,)
            jobs += [
                (f"hybrid-{r}", "hybrid", alpha, tau, None, f"hybrid-{r}:path={pdir}")
                for r in users
            ]
    if cfg.lookahead and "lookahead" in REGISTRY:
        jobs.append(("lookahead", "lookahead", None, None, None, "lookahead"))
        jobs += oracle_jobs(cfg)
    elif cfg.lookahead:
        log("policy 'lookahead' is not registered: left out of the fronts")
    return _with_margins(cfg, with_seeds(jobs), rec_dir)


def evaluation_study(
    cfg: StudyConfig, jobs: list[tuple], episodes: list[int] | None = None
) -> Study:
    """The ``pareto-eval`` study of ``jobs`` (method, family, alpha, tau, margin, policy):
    one run per point, its episodes on the paired seeds ``eval_seed + i``, whatever the
    point's training seed. That seed is the ``-seedS`` of the predictor's path in the
    policy (:func:`policy_seed`), so it is in the run id already and the seed-0 points
    keep theirs."""
    columns: dict[str, list[Any]] = {
        "method": [],
        "family": [],
        "alpha": [],
        "tau": [],
        "margin": [],
        "policy": [],
    }
    for job in jobs:
        for key, value in zip(columns, job, strict=True):
            columns[key].append(value)
    settings: dict[str, Any] = {**cfg.overrides}
    if episodes is None:
        settings["episodes"] = cfg.episodes
    else:  # points converted from an older points.csv keep their own episode counts
        columns["episodes"] = episodes
    return Study.build(
        resolve_scenario("paper"),
        name=f"pareto-{cfg.setting}",
        experiment="pareto-eval",
        overrides=settings,
        seeds=[cfg.eval_seed],
        zip=[columns],
    )


def _evaluate_all(
    cfg: StudyConfig,
    out: Path,
    rec_dir: Path,
    jobs: list[tuple],
    log,
    report,
    complete_old: bool = False,
) -> None:
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
    status = study_runner.run_study(
        study,
        store,
        workers=cfg.workers,
        shared=True,
        retry_errors=True,
        rerun=rerun,
        progress=lambda done, total: report("evaluations", done, total),
    )
    _, runs = load_study(store)
    for r in runs[runs["run_id"].isin(mine)].itertuples():
        seed = policy_seed(r.policy)
        where = f"{r.method:22s} α={_fmt(_none(r.alpha)):>4} τ={_fmt(_none(r.tau)):>4}"
        where += f" seed {seed}" if seed else ""
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
        params = ParetoParams(
            method=job[0],
            family=job[1],
            alpha=job[2],
            tau=job[3],
            margin=job[4],
            episodes=int(r["episodes"]),
        ).model_dump(mode="json")
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
        results[rid] = {
            "run_id": rid,
            "status": "ok",
            "error": "",
            "traceback": "",
            "elapsed_s": row["seconds"],
            "rows": [row],
            "finished_at": float(line),
        }
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
    """The evaluated points: one per (method, alpha, tau, margin, training seed), the latest
    evaluation wins, in the order each was first evaluated.

    A failed evaluation (an error, or RR and RF both undefined) is left out. ``alpha``,
    ``tau``, ``margin`` and ``training_seed`` are texts ("" where they do not apply), as in
    ``points.csv``;
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
            latest[_key(row)] = row
    return list(latest.values())


def _key(row: dict[str, Any]) -> tuple:
    """A point's key (method, alpha, tau, margin, training seed); fills in its
    ``training_seed`` ("" for points without a μ)."""
    seed = training_seed(row)
    row["training_seed"] = "" if seed is None else str(seed)
    return row["method"], row["alpha"], row["tau"], row["margin"], row["training_seed"]


def write_reports(
    cfg: StudyConfig, out: Path, rec_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """points.csv, table3.csv, table1.csv (when φ exists) and pareto.png from the
    evaluations as they stand (an older points.csv is converted first). The points of
    training seeds whose predictors exist but which are not evaluated yet are logged, and
    their seeds left out of Table 3 (:func:`not_evaluated`)."""
    convert_points_csv(out, cfg)
    rows = read_points(out)
    if not rows and cfg.report_only:
        rows = earlier_points(out, log)
    if not rows:
        raise ConfigError(
            problem(
                "--out",
                str(out),
                f"a directory with evaluated points of results schema {RESULTS_SCHEMA}",
                verb="has none",
            )
        )
    points_path = out / "points.csv"
    _write(points_path, rows, POINT_COLUMNS)
    T, beta = SETTINGS[cfg.setting]
    pending: dict[str, set[int]] = {}
    missing = not_evaluated(rows)
    if missing:
        log(
            f"not yet evaluated: {len(missing)} point(s) of μ trained with other training "
            "seeds; Table 3 leaves those seeds out until they are (a run of the study "
            "without --report-only evaluates them):"
        )
    for method, seed in dict.fromkeys((m, s) for m, s, _, _ in missing):
        pending.setdefault(method, set()).add(seed)
        grid = ", ".join(f"{a}:{t}" for m, s, a, t in missing if (m, s) == (method, seed))
        log(f"  {method}, training seed {seed}: α:τ {grid}")
    table3 = rf_at_rr(rows, T, beta, pending=pending)
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
            latest[_key(row)] = row
    log(
        f"{out}: the points were evaluated under results schema {schemas[-1]} (this is "
        f"{RESULTS_SCHEMA}): the reports are theirs; evaluate again for current figures"
    )
    return list(latest.values())


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


def _leave_one_out(x: np.ndarray) -> np.ndarray:
    """(p, e) per-episode values -> (e, p): row i holds each point's mean over its defined
    episodes with episode i left out (NaN where none is left)."""
    ok = np.isfinite(x)
    v = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (v.sum(axis=1) - v.T) / (ok.sum(axis=1) - ok.T)


def _jackknife(value: float, loo: np.ndarray) -> tuple[float, float]:
    """(lo, hi): 95 % interval of a statistic ``value`` of one world's e episodes, from its
    values with each episode left out, ``loo`` (e,).

    The statistic (a front read off) is not an episode mean, so the episodes' own values
    are its jackknife pseudo-values e·value − (e − 1)·loo (for a mean they are the episode
    values themselves); the interval is :func:`lab.study.stats.world_interval`'s for one
    world on them, centred on ``value``."""
    e = loo.size
    pseudo = e * value - (e - 1) * np.asarray(loo, dtype=float)
    mean, lo, hi, _ = world_interval(pseudo[None, :])
    return value - (mean - lo), value + (hi - mean)


def _distances(value: float, at: float, rr: np.ndarray, rf: np.ndarray) -> tuple[float, float]:
    """A method read at (RR ``at``, RF ``value``) against the front of points rr, rf (p,):
    RF minus the front's RF at equal RR, RR minus its RR at equal RF (NaN outside the
    range the front spans: no extrapolation)."""
    return value - front_rf_at(rr, rf, at), at - front_rr_at(rr, rf, value)


def _outside(value: float, at: float, rr: np.ndarray, rf: np.ndarray) -> str:
    """Why a distance of :func:`_distances` is undefined: "" where both are defined."""
    d_rf, d_rr = _distances(value, at, rr, rf)
    why = [
        f"RR {at:.3g} outside the front" if d_rf != d_rf else "",
        f"RF {value:.3g} outside the front" if d_rr != d_rr else "",
    ]
    return "; ".join(w for w in why if w)


def _round(x: float) -> float | str:
    # + 0.0: a tie reads 0.0, not -0.0; "" where undefined, as the CSV has always had
    return "" if x != x else round(float(x), 4) + 0.0


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


def rf_at_rr(
    rows: list[dict],
    T: int,
    beta: float,
    target: float = TARGET_RR,
    pending: Mapping[str, Iterable[int]] | None = None,
) -> list[dict]:
    """Table 3: RF at RR ≈ ``target`` per method (:func:`read_off`), with a 95 % interval,
    and its distances to the constant-margin front of the same recommender
    (:func:`margin_baseline`) at the point the method was read at: ``diff`` = RF minus the
    front's RF at equal RR (``target``, or the method's own RR where its front stops short),
    ``rr_diff`` = RR minus the front's RR at equal RF; none outside the range the front
    spans (``outside`` says which), as in :mod:`lab.study.front`.

    The study runs in one world (``worlds`` = 1): the intervals speak of that world alone.
    A method read with one training seed, or with nothing trained, is read off once and its
    intervals come from the evaluation episodes, which every point shares (common random
    numbers): each front is read off again with one episode left out of every point, and
    :func:`_jackknife` turns those into a t interval. Points without per-episode figures
    give no interval.

    A method whose points carry several training seeds (:func:`training_seed`; the methods
    of :data:`SEEDED`) has one front per seed S, over α, τ of μ trained with S. Each is read
    off and compared with the margin front on its own; the row gives the mean over seeds of
    the read-offs (``rf_at_rr095``, ``rr``) and of the distances, each with
    :func:`lab.study.stats.world_interval` on a (seeds, 1) array: the seed is the unit. One
    value per seed, not (seeds, episodes): a read-off is a statistic of a whole front, not
    an episode mean, and with several units world_interval uses only each unit's mean. The
    seeds share world 0 and its episodes, so the interval covers μ's training variance, not
    φ's (one training seed) nor the episode noise all seeds share. A seed is read only with
    a point at every (α, τ) of the method's first seed and when not in ``pending`` (method
    -> seeds not yet evaluated); ``trained`` names the seeds left out. ``training_seeds``
    counts the seeds read (1 for the methods using φ alone, "" where nothing is trained).

    ``verdict`` stays inconclusive: no test is run here, and a verdict needs at least
    :data:`lab.study.stats.MIN_WORLDS_FOR_VERDICT` units. One world is 1 unit ("inconclusive
    (1 world)"); one world with 3 training seeds is 3 ("inconclusive (1 world, 3 training
    seeds)"). scripts/table3_worlds.py gives Table 3's orderings over 10 worlds.
    """
    pending = {m: set(seeds) for m, seeds in (pending or {}).items()}
    groups: dict[str, dict[int | None, list[dict]]] = {}
    for r in rows:
        groups.setdefault(r["method"], {}).setdefault(training_seed(r), []).append(r)
    points: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    loo: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # method -> (e, p) RR, RF, one left out
    out: dict[str, dict[str, Any]] = {}
    for method, by_seed in groups.items():
        used, left_out = _seeds_used(by_seed, pending.get(method, set()))
        reads = {s: read_off(*_rr_rf(by_seed[s]), target) for s in used}
        reads = {s: r for s, r in reads.items() if r[0] == r[0]}
        if not reads:
            continue
        pts = by_seed[next(iter(reads))]
        points[method] = _rr_rf(pts)
        value = float(np.mean([v for v, _ in reads.values()]))
        at = float(np.mean([a for _, a in reads.values()]))
        row: dict[str, Any] = dict.fromkeys(TABLE3_COLUMNS, "")
        row.update(method=method, T=T, beta=beta, rf_at_rr095=round(value, 4), rr=round(at, 4))
        row.update(
            n_predictors=len(pts) if pts[0]["alpha"] != "" else 0,
            worlds=1,
            training_seeds=_n_seeds(method, len(reads)),
            trained=trained(method, len(reads), left_out),
            _at=at,
            _value=value,
            _reads=reads,
        )
        per = _episodes(pts)
        if len(reads) > 1:
            _, lo, hi, _ = world_interval(np.array([[v] for v, _ in reads.values()]))
            row.update(rf_lo=_round(lo), rf_hi=_round(hi))
            row["episodes"] = per[0].shape[1] if per is not None else ""
        elif per is not None and per[0].shape[1] > 1:
            loo[method] = _leave_one_out(per[0]), _leave_one_out(per[1])
            # (e, 2): RF and the RR it was read at, with each episode left out
            row["_loo"] = np.array(
                [read_off(a, b, target) for a, b in zip(*loo[method], strict=True)]
            )
            lo, hi = _jackknife(value, row["_loo"][:, 0])
            row.update(rf_lo=_round(lo), rf_hi=_round(hi), episodes=per[0].shape[1])
        out[method] = row
    for method, row in out.items():
        base = margin_baseline(method)
        if base not in out:
            continue
        if len(row["_reads"]) > 1:
            _compare_seeds(row, base, points[base])
            continue
        value, at = row["_value"], row["_at"]
        d_rf, d_rr = _distances(value, at, *points[base])
        row.update(vs_margin=base, diff=_round(d_rf), rr_diff=_round(d_rr))
        row["outside"] = _outside(value, at, *points[base])
        row["verdict"] = verdict(d_rf, math.nan, math.nan, n_worlds=1)
        mine, theirs = row.get("_loo"), loo.get(base)
        if mine is None or theirs is None or len(mine) != len(theirs[0]):
            continue
        left_out = np.array(
            [_distances(v, a, r, f) for (v, a), r, f in zip(mine, *theirs, strict=True)]
        )
        for key, d, col in (("diff", d_rf, 0), ("rr_diff", d_rr, 1)):
            if d == d:
                lo, hi = _jackknife(d, left_out[:, col])
                row.update({f"{key}_lo": _round(lo), f"{key}_hi": _round(hi)})
    for row in out.values():
        for key in ("_at", "_value", "_loo", "_reads"):
            row.pop(key, None)
    return list(out.values())


def _rr_rf(pts: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([float(r["rr"]) for r in pts]), np.array([float(r["rf"]) for r in pts])


def _seeds_used(
    by_seed: dict[int | None, list[dict]], pending: set[int]
) -> tuple[list[int | None], list[int]]:
    """(seeds read, seeds left out) of a method's points by training seed: a seed is read
    when it has the first seed's (α, τ) grid and is not ``pending``."""
    order = sorted(by_seed, key=lambda s: -1 if s is None else s)
    grid = {s: sorted((r["alpha"], r["tau"]) for r in by_seed[s]) for s in order}
    used = [s for s in order if s == order[0] or (grid[s] == grid[order[0]] and s not in pending)]
    return used, sorted(pending | {s for s in order if s not in used})


def _compare_seeds(row: dict[str, Any], base: str, front: tuple[np.ndarray, np.ndarray]) -> None:
    """Fill ``row``'s distances to the margin front ``base`` (points ``front``) for a method
    of several training seeds: each seed's read point against it, then the mean over seeds
    with an interval over seeds (see :func:`rf_at_rr`)."""
    reads = row["_reads"]
    d = np.array([_distances(v, a, *front) for v, a in reads.values()])  # (seeds, 2)
    row["vs_margin"] = base
    for key, col in (("diff", 0), ("rr_diff", 1)):
        mean, lo, hi, _ = world_interval(d[:, col : col + 1])
        row.update({key: _round(mean), f"{key}_lo": _round(lo), f"{key}_hi": _round(hi)})
    notes = {s: _outside(v, a, *front) for s, (v, a) in reads.items()}
    row["outside"] = "; ".join(f"seed {s}: {why}" for s, why in notes.items() if why)
    row["verdict"] = verdict_of_seeds(len(reads))


def verdict_of_seeds(n_seeds: int) -> str:
    """The verdict on a row of one world and ``n_seeds`` training seeds: inconclusive, with
    the units it rests on (no test is run on Table 3's rows)."""
    if n_seeds < MIN_WORLDS_FOR_VERDICT:
        return f"inconclusive (1 world, {n_seeds} training seeds)"
    return "inconclusive"


def _uses_mu(method: str) -> bool:
    return method == "rl" or method.startswith("hybrid-")


def _n_seeds(method: str, n: int) -> int | str:
    if _uses_mu(method):
        return n
    return 1 if method in ("rl-recommender", "margin-phi") else ""


def trained(method: str, n_seeds: int, left_out: Iterable[int] = ()) -> str:
    """What ``method``'s figure rests on: its μ's training seeds (several: a random
    effect; ``left_out``: seeds not yet evaluated) and φ's one seed; "" for methods with
    nothing trained."""
    notes = []
    if _uses_mu(method):
        seeds = (
            f"{n_seeds} training seeds (a random effect)" if n_seeds > 1 else "one training seed"
        )
        left = ", ".join(map(str, left_out))
        notes.append(f"μ: {seeds}" + (f", seeds {left} not yet evaluated" if left else ""))
    if method in ("rl", "rl-recommender", "margin-phi"):
        notes.append("φ: one training seed")
    return "; ".join(notes)


def recommender_table(rec_dir: Path, cfg: StudyConfig, n: int = 200) -> list[dict]:
    """Table 1 protocol (same draws as ``bench-recommenders``) for φ and the chosen
    baselines: a ``recommender-bench`` study with φ as the recommender ``rl:path=DIR``."""
    from lab.evaluation import benchmark_recommenders
    from policies.rl.artefacts import read_manifest

    phi = f"rl:path={rec_dir}"
    bench = benchmark_recommenders(
        n=n, seed=cfg.seed, names=[*cfg.recommenders, phi], workers=cfg.workers, **cfg.overrides
    )
    learned = next(b for b in bench if b["recommender"] == phi)
    rows = [
        {
            "recommender": b["recommender"],
            "error": b["error"],
            "cost": b["cost"],
            "paper_error": PAPER_TABLE1.get(b["recommender"], ("", ""))[0],
            "paper_cost": PAPER_TABLE1.get(b["recommender"], ("", ""))[1],
            "d_error": "",
            "n_failed": b["n_failed"],
        }
        for b in bench
        if b is not learned
    ]
    manifest = read_manifest(rec_dir, "recommender")
    rows.insert(
        0,
        {
            "recommender": "rl (learned φ)",
            "error": learned["error"],
            "cost": learned["cost"],
            "paper_error": PAPER_TABLE1["rl"][0],
            "paper_cost": PAPER_TABLE1["rl"][1],
            "d_error": manifest["d_error"],
            "n_failed": learned["n_failed"],
        },
    )
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
    """RR (x) vs RF (y): one line per learned method's front (dotted: constant margins;
    one per training seed, the later seeds paler and unlabelled), one marker per baseline."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 5.5))
    ax = fig.subplots()
    labelled: set[str] = set()
    for method, seed in dict.fromkeys((r["method"], training_seed(r)) for r in rows):
        pts = [r for r in rows if r["method"] == method and training_seed(r) == seed]
        family = pts[0]["family"]
        colour, marker, label = _style(method, family)
        rr = np.array([float(r["rr"]) for r in pts])
        rf = np.array([float(r["rf"]) for r in pts])
        if family in ("rl", "hybrid", "margin") or (family == "lookahead" and len(pts) > 1):
            front = pareto_front(rr, rf)
            first = method not in labelled
            labelled.add(method)
            ax.scatter(rr, rf, color=colour, marker=marker, alpha=0.35, s=18)
            style = {"rl": "-", "hybrid": "--", "margin": ":", "lookahead": "-."}[family]
            ax.plot(
                rr[front],
                rf[front],
                color=colour,
                marker=marker,
                label=label if first else None,
                linestyle=style,
                alpha=1.0 if first else 0.5,
            )
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
        raise ValueError(
            f"--phi: {rec_dir} was trained at beta={beta:g}, the setting {cfg.setting} "
            f"has beta={cfg.overrides['beta']:g}"
        )


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
