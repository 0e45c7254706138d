"""``recourse-abm reproduce robust``: robust recourse under model change.

``--case german-lr``: Table 1, a thin wrapper: the study
(:func:`lab.reproduce.robust.table1_study`) runs on the one experiment runner; this
module prints and writes what it returns. ``--case retrain``: the report of a finished
``studies/robust-retrain.toml`` run (table with CIs, paired differences, validity vs cost).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape

from lab.terminal import console, output_dir, progress_bar

RobustCase = Literal["german-lr", "retrain"]


def robust(
    case: Annotated[RobustCase, typer.Option(help="which reproduction")] = "german-lr",
    out: Annotated[
        Path | None,
        typer.Option(help="output directory (default results/robust; retrain: docs/studies)"),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="parallel worker processes")] = 1,
    store: Annotated[
        Path | None,
        typer.Option(help="keep the study's runs here (resumable); default: a temporary directory"),
    ] = None,
    study: Annotated[
        Path, typer.Option(help="retrain: the finished study directory to report")
    ] = Path("results/robust-retrain"),
) -> None:
    """optimal-robust-recourse-lp Table 1 (German Credit, LR), or the retraining study's report."""
    from lab.reproduce.robust import reproduce_german_lr, table1_checks

    if case == "retrain":
        _retrain_report(study, out)
        return
    out = output_dir(out or Path("results/robust"))
    if store is not None:
        store = output_dir(store, "--store")
    with progress_bar() as bar:
        task = bar.add_task(f"Table 1 ({case}) runs", total=None)
        table = reproduce_german_lr(
            out,
            workers=workers,
            store=store,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    shown = table[
        [
            "method",
            "alpha",
            "lam",
            "J",
            "J_sd",
            "J_paper",
            "diff",
            "within",
            "cost",
            "n_changed",
            "valid_wc",
            "valid_current",
        ]
    ].round(3)
    console.print("[bold]Table 1, German Credit (LR): price J, ours vs paper[/]")
    console.print(shown.to_string(index=False), highlight=False, soft_wrap=True)
    for check, ok in table1_checks(table).items():
        console.print(f"{check}: {'yes' if ok else '[bold red]NO[/]'}")
    console.print(f"results written to [bold]{escape(str(out))}[/]")


def _retrain_report(study: Path, out: Path | None) -> None:
    from lab.reproduce.robust.retrain import write_retrain_report
    from lab.study import read_manifest

    name = read_manifest(study)["name"]  # a one-line error unless a study directory
    out = output_dir(out or Path("docs/studies"))
    for path in write_retrain_report(study, out, name):
        console.print(f"wrote [bold]{escape(str(path))}[/]")


def register(app: typer.Typer) -> None:
    """No top-level command: :func:`robust` sits under ``reproduce`` (registered by
    :func:`lab.commands.reproduce.register`)."""
