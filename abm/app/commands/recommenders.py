"""Commands ``evaluate``, ``bench-recommenders`` and ``calibrate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table


def register(app: typer.Typer) -> None:
    from abm.app.cli import fmt, friendly_errors, parse_overrides
    from abm.provenance import write_json

    @app.command()
    @friendly_errors
    def evaluate(
        scenario: Annotated[
            str, typer.Option("--scenario", "-s", help="preset or .toml")
        ] = "paper",
        policy: Annotated[
            list[str] | None,
            typer.Option("--policy", "-p", help="policy (repeat to compare side by side)"),
        ] = None,  # fmt: skip
        episodes: Annotated[
            int, typer.Option(min=1, max=100_000, help="episodes; episode i uses seed S+i")
        ] = 10,
        seed: Annotated[int, typer.Option(min=0, help="first episode seed S")] = 0,
        seeds: Annotated[
            str | None,
            typer.Option(
                help="episode seeds instead of --seed/--episodes: N (0..N-1), A-B or A,B,C"
            ),
        ] = None,  # fmt: skip
        workers: Annotated[int, typer.Option(min=1, help="parallel processes")] = 1,
        scheduler: Annotated[
            str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786")
        ] = None,
        out: Annotated[
            Path | None,
            typer.Option(
                help="write DIR/evaluation.json; the episodes stay in DIR/episodes (resumable)"
            ),
        ] = None,  # fmt: skip
        set_: Annotated[list[str] | None, typer.Option("--set", help="KEY=VALUE override")] = None,
    ) -> None:
        """Mean ± std of RR, RF, Gini and cost over paired episodes, per policy."""
        from abm.app.cli import console, progress_bar
        from abm.app.evaluation import evaluate_many

        policies = policy or ["threshold"]
        with progress_bar() as bar:
            task = bar.add_task("episodes", total=None)
            results = evaluate_many(
                scenario, policies, episodes, seed, workers, seeds=seeds, scheduler=scheduler,
                store=None if out is None else out / "episodes",
                progress=lambda done, total: bar.update(task, completed=done, total=total),
                **parse_overrides(set_),
            )  # fmt: skip
        used = results[0]["seeds"]
        span = f"{used[0]}..{used[-1]}" if used == list(range(used[0], used[-1] + 1)) else "listed"
        table = Table(title=f"{scenario} · {len(used)} episodes · seeds {span}",
                      header_style="bold")  # fmt: skip
        for col in ("policy", "RR", "RF", "Gini", "cost", "unadvised"):
            table.add_column(col, justify="left" if col == "policy" else "right",
                             no_wrap=col == "policy")  # fmt: skip

        def pm(r: dict, key: str) -> str:
            mean, std = r[f"{key}_mean"], r[f"{key}_std"]
            return "n/a" if mean != mean else f"{mean:.3g} ± {std:.2g}"

        for r in results:
            table.add_row(r["policy"], pm(r, "rr"), pm(r, "rf"), pm(r, "gini"), pm(r, "cost"),
                          str(r["n_unadvised"]))  # fmt: skip
        console.print(table)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            payload = results[0] if len(results) == 1 else {"results": results, **results[0]}
            write_json(out / "evaluation.json", payload)
            console.print(f"written to [bold]{out / 'evaluation.json'}[/]")

    @app.command("bench-recommenders")
    @friendly_errors
    def bench_recommenders(
        n: Annotated[
            int, typer.Option(min=1, max=1_000_000, help="candidates (one recommendation each)")
        ] = 200,
        seed: Annotated[int, typer.Option(min=0, help="seed of the draws")] = 0,
        out: Annotated[Path, typer.Option(help="write DIR/recommenders.csv")] = Path(
            "results/bench"
        ),
        recommender: Annotated[
            list[str] | None, typer.Option("--recommender", "-r", help="only these (repeatable)")
        ] = None,  # fmt: skip
        goal_max: Annotated[
            float, typer.Option(min=0.0, max=1.0, help="goals drawn in (M(x), goal_max)")
        ] = 0.95,
        workers: Annotated[int, typer.Option(min=1, help="parallel processes")] = 1,
    ) -> None:
        """Table 1 protocol: error |M(x_cf) - g| and true cost of each recommender."""
        import pandas as pd

        from abm.app.cli import console
        from abm.app.evaluation import benchmark_recommenders

        rows = benchmark_recommenders(n=n, seed=seed, goal_max=goal_max, names=recommender,
                                      workers=workers)  # fmt: skip
        table = Table(title=f"recommenders · {n} candidates · seed {seed}", header_style="bold")
        for col in ("recommender", "error", "cost", "s / recommendation", "failed"):
            table.add_column(col, justify="left" if col == "recommender" else "right")
        for r in rows:
            table.add_row(r["recommender"], f"{r['error']:.2e}", f"{r['cost']:.3f}",
                          f"{r['seconds_per_recommendation']:.2e}", str(r["n_failed"]))  # fmt: skip
        console.print(table)
        out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(out / "recommenders.csv", index=False)
        console.print(f"written to [bold]{out / 'recommenders.csv'}[/]")

    @app.command()
    @friendly_errors
    def calibrate(
        policy: Annotated[str, typer.Option("--policy", "-p")] = "threshold-ustun",
        target_rr: Annotated[float, typer.Option(help="RR to aim for")] = 0.4,
        episodes: Annotated[
            int, typer.Option(min=1, max=100_000, help="episodes per grid point")
        ] = 10,
        seed: Annotated[int, typer.Option(min=0, help="first episode seed S")] = 0,
        seeds: Annotated[
            str | None,
            typer.Option(
                help="episode seeds instead of --seed/--episodes: N (0..N-1), A-B or A,B,C"
            ),
        ] = None,  # fmt: skip
        workers: Annotated[int, typer.Option(min=1, help="parallel processes")] = 2,
        grid: Annotated[
            str | None,
            typer.Option(help="JSON object field -> list of values, e.g. '{\"rho\": [1, 4]}'"),
        ] = None,  # fmt: skip
        out: Annotated[Path | None, typer.Option(help="write DIR/calibration.csv")] = None,
    ) -> None:
        """Grid search of the unreported parameters so that POLICY lands at RR ≈ target."""
        import pandas as pd

        from abm.app.cli import console, progress_bar
        from abm.app.evaluation import CALIBRATION_GRID
        from abm.app.evaluation import calibrate as run_calibration

        if grid is None:
            points = CALIBRATION_GRID
        else:
            try:
                points = json.loads(grid)
            except json.JSONDecodeError as exc:
                raise ValueError(f"--grid must be a JSON object, got {grid!r}: {exc}") from None
            if not isinstance(points, dict) or not all(
                isinstance(v, list) and v for v in points.values()
            ):
                raise ValueError("--grid must map scenario fields to non-empty lists of values")
        with progress_bar() as bar:
            task = bar.add_task(f"calibrating {policy}", total=None)
            rows = run_calibration(points, policy, target_rr, episodes, seed, workers=workers,
                                   seeds=seeds,
                                   progress=lambda done, total: bar.update(task, completed=done,
                                                                           total=total))  # fmt: skip
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
