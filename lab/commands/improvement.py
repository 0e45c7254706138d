"""``recourse-abm reproduce improvement``: the ARLIM reproduction (recourse for long-term
improvement; specs/improvement-bandits.md §4).

A thin wrapper over :func:`lab.reproduce.improvement.reproduce`, which runs the
paired trials as a study of the ``arlim-trial`` experiment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from lab.terminal import console, output_dir, progress_bar

# the experiment loads scikit-learn, pandas and matplotlib: imported when the command runs


def improvement(
    trials: Annotated[int, typer.Option(min=1, help="paired trials (seeds 0..N-1)")] = 10,
    quick: Annotated[
        bool, typer.Option(help="2 trials, ξ in {0, 0.25}: orderings only (a few minutes)")
    ] = False,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("results/improvement"),
    dataset: Annotated[
        str, typer.Option(help="compas (the paper's figures) or german (stand-in, orderings)")
    ] = "compas",
    rounds: Annotated[int, typer.Option(min=1, help="rounds T per trial (paper 1000)")] = 1000,
    synthetic: Annotated[
        bool, typer.Option(help="also the synthetic regret check (COMPAS runs only)")
    ] = True,
    store: Annotated[
        Path | None, typer.Option(help="keep the study's runs here: a rerun resumes")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="parallel worker processes")] = 1,
    methods: Annotated[
        str | None, typer.Option(help="only these, comma-separated (ProtoAR,TAP,LinUCB,BwO-UCB)")
    ] = None,
    xis: Annotated[
        str | None, typer.Option(help="only these noise levels ξ, comma-separated (e.g. 0,0.25)")
    ] = None,
) -> None:
    """ARLIM (Kanamori et al., ICML 2025): ProtoAR, TAP, LinUCB and BwO-UCB on COMPAS."""
    from abm.validation import ConfigError, problem
    from lab.reproduce.improvement.reproduce import checks_frame, reproduce

    chosen = None if methods is None else tuple(m.strip() for m in methods.split(","))
    levels = None
    if xis is not None:
        try:
            levels = tuple(float(x) for x in xis.split(","))
        except ValueError:
            raise ConfigError(problem("--xis", xis, "numbers in [0, 1], comma-separated")) from None
    out = output_dir(out)
    if store is not None:
        output_dir(store, "--store")
    with progress_bar() as bar:
        tasks: dict[str, int] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done, total=total)

        res = reproduce(
            out,
            trials=trials,
            quick=quick,
            task=dataset,
            rounds=rounds,
            synthetic=synthetic,
            store=store,
            workers=workers,
            progress=progress,
            methods=chosen,
            xis=levels,
        )
    cols = [
        "method",
        "xi",
        "trials",
        "mer",
        "mer_sd",
        "improvement",
        "improvement_sd",
        "cost",
        "cost_sd",
        "ms_per_round",
    ]
    cols += [c for c in ("mer_paper", "improvement_paper", "cost_paper") if c in res.table]
    console.print(f"[bold]{escape(dataset)}: ours (mean, sd over trials) beside the paper[/]")
    console.print(
        res.table[cols].round(3).to_string(index=False, na_rep="-"), highlight=False, soft_wrap=True
    )
    if res.synthetic is not None:
        console.print("[bold]synthetic regret check[/]")
        console.print(res.synthetic.round(3).to_string(index=False), highlight=False)
    frame = checks_frame(res.checks)
    frame["value"] = frame["value"].round(3)
    console.print("[bold]checks[/]")
    console.print(frame.to_string(index=False), highlight=False, soft_wrap=True)
    verdict = "all checks hold" if res.ok else f"{(~frame['ok']).sum()} check(s) fail"
    console.print(f"{verdict}; results written to [bold]{escape(str(out))}[/]")


def register(app: typer.Typer) -> None:
    """No top-level command: :func:`improvement` sits under ``reproduce`` (registered by
    :func:`lab.commands.reproduce.register`)."""
