"""``recourse-abm reproduce fairness``: the SCARF synthetic SCM reproduction (long-term
fairness through sequential recourse; specs/long-term-fairness.md §2-§3).

A thin wrapper over :func:`lab.reproduce.fairness.reproduce.reproduce`, which runs
the paired trials as a study of the ``fairness-trial`` experiment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from lab.terminal import console, output_dir, progress_bar

# the experiment loads torch, POT, pandas and matplotlib: imported when the command runs


def fairness(
    seeds: Annotated[
        str, typer.Option(help="paired trials' seeds: N (0..N-1), A-B or A,B,C")
    ] = "0-4",
    out: Annotated[Path, typer.Option(help="output directory")] = Path("results/fairness"),
    epochs: Annotated[int, typer.Option(min=0, help="generator training epochs")] = 150,
    quick: Annotated[
        bool, typer.Option(help="check the orderings only (for a reduced run)")
    ] = False,
    store: Annotated[
        Path | None, typer.Option(help="keep the study's runs here: a rerun resumes")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="parallel worker processes")] = 1,
) -> None:
    """SCARF (Gumucio & Zhang): none, DP, EI, noLSTM and SCARF on the synthetic SCM."""
    from lab.reproduce.fairness.reproduce import reproduce
    from lab.study import parse_seeds

    run_seeds = parse_seeds(seeds, "--seeds")
    out = output_dir(out)
    if store is not None:
        output_dir(store, "--store")
    with progress_bar() as bar:
        task = bar.add_task("fairness trials", total=len(run_seeds))
        res = reproduce(
            out,
            run_seeds,
            store=store,
            workers=workers,
            quick=quick,
            epochs=epochs,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    cols = [
        "method",
        "seeds",
        "accuracy",
        "accuracy_sd",
        "short",
        "short_sd",
        "long",
        "long_sd",
        "short_first",
        "short_last",
        "long_first",
        "long_last",
        "spend",
    ]
    console.print("[bold]synthetic SCM: means over steps (sd over seeds)[/]")
    console.print(res.table[cols].round(3).to_string(index=False), highlight=False, soft_wrap=True)
    for c in res.checks:
        mark = "ok " if c.ok else "FAIL"
        console.print(
            f"{mark} {escape(c.name)}: {c.value:.4g} (target {escape(c.target)})", highlight=False
        )
    verdict = "all checks hold" if res.ok else f"{sum(not c.ok for c in res.checks)} check(s) fail"
    console.print(f"{verdict}; results written to [bold]{escape(str(out))}[/]")


def register(app: typer.Typer) -> None:
    """No top-level command: :func:`fairness` sits under ``reproduce``."""
