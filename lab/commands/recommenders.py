"""Commands ``evaluate``, ``bench-recommenders`` and ``calibrate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from abm.config import parse_overrides
from abm.provenance import write_json
from abm.registry import REGISTRY, parse_spec
from abm.validation import ConfigError, problem
from lab.terminal import console, fmt, output_dir, progress_bar

# lab.evaluation loads the model (Mesa, scikit-learn, pandas): the commands import it
# when they run, so that `recourse-abm --help` stays fast

ScenarioOpt = Annotated[str, typer.Option("--scenario", "-s", help="preset or .toml")]
SeedsOpt = Annotated[
    str | None,
    typer.Option(help="episode seeds instead of --seed/--episodes: N (0..N-1), A-B or A,B,C"),
]
FirstSeedOpt = Annotated[int | None, typer.Option(min=0, help="first episode seed S [default: 0]")]
EPISODES, FIRST_SEED = 10, 0


def episode_seeds(seed: int | None, episodes: int | None, seeds: str | None) -> tuple[int, int]:
    """(first seed, episodes), their defaults filled in; ``--seeds`` replaces both, so
    either given with it would be ignored: refused, naming both options."""
    if seeds is not None:
        for name, value in (("--seed", seed), ("--episodes", episodes)):
            if value is not None:
                raise ConfigError(
                    problem(
                        name,
                        value,
                        "--seeds alone, or --seed and --episodes",
                        verb=f"conflicts with --seeds = {seeds!r}",
                    )
                )
    return (FIRST_SEED if seed is None else seed), (EPISODES if episodes is None else episodes)


WorkersOpt = Annotated[int, typer.Option(min=1, help="parallel processes")]


def _mean_std(result: dict[str, Any], key: str) -> str:
    mean, std = result[f"{key}_mean"], result[f"{key}_std"]
    return "n/a" if mean != mean else f"{mean:.3g} ± {std:.2g}"


def _evaluation_table(scenario: str, results: list[dict[str, Any]]) -> Table:
    """One row per policy: mean ± std over the paired episodes."""
    used = results[0]["seeds"]
    span = f"{used[0]}..{used[-1]}" if used == list(range(used[0], used[-1] + 1)) else "listed"
    table = Table(title=f"{scenario} · {len(used)} episodes · seeds {span}", header_style="bold")
    for col in ("policy", "RR", "RF", "Gini", "cost", "unadvised"):
        table.add_column(
            col, justify="left" if col == "policy" else "right", no_wrap=col == "policy"
        )
    for r in results:
        table.add_row(
            r["policy"],
            _mean_std(r, "rr"),
            _mean_std(r, "rf"),
            _mean_std(r, "gini"),
            _mean_std(r, "cost"),
            str(r["n_unadvised"]),
        )
    return table


def _interval(cell: dict[str, Any]) -> str:
    """mean [95 % interval] (n worlds) of a card or difference cell."""
    if cell["mean"] != cell["mean"]:
        return "–"
    n = cell.get("worlds")
    worlds = "" if n is None else f" ({n} world{'' if n == 1 else 's'})"
    if cell["lo"] == cell["hi"]:
        return f"{cell['mean']:.3g}{worlds}"
    return f"{cell['mean']:.3g} [{cell['lo']:.3g}, {cell['hi']:.3g}]{worlds}"


def _p(value: float | None) -> str:
    return "–" if value is None or value != value else f"{value:.2g}"


CORRECTIONS = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def _difference(d: dict[str, Any]) -> str:
    """A paired difference: its interval, then the verdict (bold where it survives), then
    the corrected p-value and TOST p-value with the bound; "–" where it is undefined."""
    if d["mean"] != d["mean"]:
        return "–"
    said = d["verdict"] if d["verdict"].startswith("inconclusive") else f"[bold]{d['verdict']}[/]"
    tost = "" if d["bound"] is None else f", TOST p {_p(d['tost_p_adj'])} (±{d['bound']:g})"
    return f"{_interval(d)}\n{said}\np {_p(d['p_adj'])}{tost}"


def card_tables(results: list[dict[str, Any]]) -> list[Table]:
    """The outcome card of each policy (a column each: mean [95 % interval] and the worlds
    it rests on), then the paired differences to the baseline policy, where it was
    evaluated too (:func:`_difference`)."""
    from abm.mechanisms import FIGURES
    from lab.study.stats import MIN_WORLDS_FOR_VERDICT

    worlds = results[0]["worlds"]
    where = f"{len(worlds)} worlds" if len(worlds) > 1 else f"one world (world_seed {worlds[0]})"
    reasons = results[0]["card_reasons"]
    shown = [f for f in FIGURES if f.name not in reasons]
    tables = []
    card = Table(
        title=f"outcome card · {where} · mean [95 % interval] (worlds with the figure defined)",
        header_style="bold",
    )
    card.add_column("figure")
    for r in results:
        card.add_column(r["policy"], justify="right")
    for f in shown:
        card.add_row(f.label, *(_interval(r["card"][f.name]) for r in results))
    tables.append(card)
    paired = [r for r in results if "vs_baseline" in r]
    if paired:
        vs = paired[0]["vs_baseline"]
        base, how = vs["policy"], CORRECTIONS.get(vs.get("correction"), vs.get("correction"))
        diff = Table(
            title=f"difference from {base} on the same worlds and episodes: mean "
            f"[95 % interval] (worlds), verdict, p and TOST p ({how})",
            header_style="bold",
        )
        diff.add_column("figure")
        for r in paired:
            diff.add_column(f"{r['policy']} - {base}", justify="right")
        for f in shown:
            diff.add_row(f.label, *(_difference(r["vs_baseline"]["card"][f.name]) for r in paired))
        diff.caption = (
            f"p-values corrected together ({how}) over the {vs['family']} differences with at "
            f"least {MIN_WORLDS_FOR_VERDICT} worlds; level: TOST within ±bound survives (0.02 "
            f"for RR, RF and shares); no verdict below {MIN_WORLDS_FOR_VERDICT} worlds"
        )
        tables.append(diff)
    if reasons:
        off = ", ".join(sorted({why.removeprefix("needs ") for why in reasons.values()}))
        note = f"not shown: the figures of mechanisms off here ({off})"
        tables[-1].caption = f"{tables[-1].caption}; {note}" if tables[-1].caption else note
    return tables


def evaluate(
    scenario: ScenarioOpt = "paper",
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", "-p", help="policy (repeat to compare side by side)"),
    ] = None,
    episodes: Annotated[
        int | None,
        typer.Option(min=1, max=100_000, help="episodes; episode i uses seed S+i [default: 10]"),
    ] = None,
    seed: FirstSeedOpt = None,
    seeds: SeedsOpt = None,
    world_seeds: Annotated[
        str | None,
        typer.Option(help="world seeds, each with every episode seed: N (0..N-1), A-B or A,B,C"),
    ] = None,
    baseline: Annotated[
        str, typer.Option(help="policy the others are paired against, when evaluated too")
    ] = "none",
    workers: WorkersOpt = 1,
    scheduler: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="write DIR/evaluation.json; the episodes stay in DIR/episodes (resumable)"
        ),
    ] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override")] = None,
) -> None:
    """Mean ± std of RR, RF, Gini and cost over paired episodes, per policy, and the outcome
    card with 95 % intervals (worlds as a random effect) and paired differences to the
    baseline with Holm-corrected verdicts (with --out: evaluation.json and evaluation.png)."""
    from lab.evaluation import evaluate_many, plot_evaluation

    seed, episodes = episode_seeds(seed, episodes, seeds)
    out = None if out is None else output_dir(out)
    policies = policy or ["threshold"]
    with progress_bar() as bar:
        task = bar.add_task("episodes", total=None)
        results = evaluate_many(
            scenario,
            policies,
            episodes,
            seed,
            workers,
            seeds=seeds,
            scheduler=scheduler,
            world_seeds=world_seeds,
            baseline=baseline,
            store=None if out is None else out / "episodes",
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            **parse_overrides(set_),
        )
    console.print(_evaluation_table(scenario, results))
    for table in card_tables(results):
        console.print(table)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        payload = results[0] if len(results) == 1 else {"results": results, **results[0]}
        write_json(out / "evaluation.json", payload)
        plot_evaluation(results, out / "evaluation.png")
        console.print(
            f"written to [bold]{escape(str(out / 'evaluation.json'))}[/] and evaluation.png"
        )


def bench_recommenders(
    n: Annotated[
        int, typer.Option(min=1, max=1_000_000, help="candidates (one recommendation each)")
    ] = 200,
    seed: Annotated[int, typer.Option(min=0, help="seed of the draws")] = 0,
    out: Annotated[Path, typer.Option(help="write DIR/recommenders.csv")] = Path("results/bench"),
    recommender: Annotated[
        list[str] | None, typer.Option("--recommender", "-r", help="only these (repeatable)")
    ] = None,
    goal_max: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="goals drawn in (M(x), goal_max)")
    ] = 0.95,
    workers: WorkersOpt = 1,
) -> None:
    """Table 1 protocol: error |M(x_cf) - g| and true cost of each recommender
    (recommenders.csv and recommenders.png)."""
    import pandas as pd

    from lab.evaluation import BENCH_RECOMMENDERS, benchmark_recommenders, plot_recommenders

    out = output_dir(out)
    known = {x for label, name, _ in BENCH_RECOMMENDERS for x in (label, name)}
    for spec in recommender or ():
        if spec not in known:  # any other recommender spec must name a registered one
            check_recommender(spec)
    rows = benchmark_recommenders(
        n=n, seed=seed, goal_max=goal_max, names=recommender, workers=workers
    )
    table = Table(title=f"recommenders · {n} candidates · seed {seed}", header_style="bold")
    for col in ("recommender", "error", "cost", "s / recommendation", "failed"):
        table.add_column(col, justify="left" if col == "recommender" else "right")
    for r in rows:
        table.add_row(
            r["recommender"],
            f"{r['error']:.2e}",
            f"{r['cost']:.3f}",
            f"{r['seconds_per_recommendation']:.2e}",
            str(r["n_failed"]),
        )
    console.print(table)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "recommenders.csv", index=False)
    plot_recommenders(rows, out / "recommenders.png")
    console.print(
        f"written to [bold]{escape(str(out / 'recommenders.csv'))}[/] and recommenders.png"
    )


def check_recommender(spec: str) -> str:
    """``spec`` if it names one registered recommender with valid parameters (``-r``)."""
    parts = parse_spec(spec)
    if len(parts) != 1:
        allowed = "a recommender name or spec: " + ", ".join(REGISTRY.entries("recommender"))
        raise ConfigError(problem("--recommender", spec, allowed))
    REGISTRY.typed_params(REGISTRY.get("recommender", parts[0].name), parts[0].params)
    return spec


def parse_calibration_grid(text: str) -> dict[str, list[Any]]:
    """``--grid``'s JSON object: scenario field -> non-empty list of values."""
    allowed = 'a JSON object of field -> non-empty list, e.g. {"rho": [1, 4]}'

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # json keeps the last silently: the first would be read and ignored
            raise ConfigError(
                problem(
                    "--grid",
                    text,
                    allowed + " (each field once)",
                    verb=f"names {', '.join(twice)} twice",
                )
            )
        return dict(pairs)

    try:
        points = json.loads(text, object_pairs_hook=no_repeats)
    except json.JSONDecodeError:
        raise ConfigError(problem("--grid", text, allowed)) from None
    if not isinstance(points, dict) or not all(isinstance(v, list) and v for v in points.values()):
        raise ConfigError(problem("--grid", text, allowed))
    if not points:
        raise ConfigError(problem("--grid", text, allowed, verb="is empty"))
    return points


def calibrate(
    policy: Annotated[str, typer.Option("--policy", "-p")] = "threshold-ustun",
    target_rr: Annotated[float, typer.Option(min=0.0, max=1.0, help="RR to aim for")] = 0.4,
    episodes: Annotated[
        int | None, typer.Option(min=1, max=100_000, help="episodes per grid point [default: 10]")
    ] = None,
    seed: FirstSeedOpt = None,
    seeds: SeedsOpt = None,
    workers: WorkersOpt = 2,
    grid: Annotated[
        str | None,
        typer.Option(help="JSON object field -> list of values, e.g. '{\"rho\": [1, 4]}'"),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="write DIR/calibration.csv and DIR/calibration.png")
    ] = None,
) -> None:
    """Grid search of the unreported parameters so that POLICY lands at RR ≈ target."""
    import pandas as pd

    from lab.evaluation import CALIBRATION_GRID, plot_calibration
    from lab.evaluation import calibrate as run_calibration

    seed, episodes = episode_seeds(seed, episodes, seeds)
    out = None if out is None else output_dir(out)
    points = CALIBRATION_GRID if grid is None else parse_calibration_grid(grid)
    with progress_bar() as bar:
        task = bar.add_task(f"calibrating {policy}", total=None)
        rows = run_calibration(
            points,
            policy,
            target_rr,
            episodes,
            seed,
            workers=workers,
            seeds=seeds,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    df = pd.DataFrame(rows)
    table = Table(title=f"{policy}: closest to RR = {target_rr} first", header_style="bold")
    for col in df.columns:
        table.add_column(col, justify="right")
    for _, r in df.iterrows():
        table.add_row(*(fmt(v) if isinstance(v, float) else str(v) for v in r))
    console.print(table)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        df.to_csv(out / "calibration.csv", index=False)
        plot_calibration(rows, target_rr, out / "calibration.png")
        console.print(
            f"written to [bold]{escape(str(out / 'calibration.csv'))}[/] and calibration.png"
        )


def register(app: typer.Typer) -> None:
    app.command("evaluate")(evaluate)
    app.command("bench-recommenders")(bench_recommenders)
    app.command("calibrate")(calibrate)
