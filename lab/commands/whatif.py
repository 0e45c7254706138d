"""``recourse-abm whatif -s my.toml``: which policies reach a target RR on one's own world,
with which RF and at what cost (:mod:`lab.whatif`), as one HTML page and a JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from lab.terminal import console, output_dir, progress_bar


def whatif(
    scenario: Annotated[
        str, typer.Option("--scenario", "-s", help="preset name or path to a .toml scenario file")
    ],
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy", "-p", help="a policy to try (repeatable; default: the quick list)"
        ),
    ] = None,
    target_rr: Annotated[float, typer.Option(help="the RR to reach, in (0, 1]")] = 0.9,
    tier: Annotated[
        Literal["quick", "full", "smoke"],
        typer.Option(help="the benchmark tier's worlds and episodes: quick (10 worlds) or full"),
    ] = "quick",
    out: Annotated[
        Path | None, typer.Option(help="where the report goes (default results/whatif/NAME)")
    ] = None,
    store: Annotated[
        Path, typer.Option(help="runs kept between what-ifs (a rerun resumes)")
    ] = Path("results/whatif/store"),
    workers: Annotated[int, typer.Option(min=1, help="local worker processes")] = 2,
) -> None:
    """Try recourse policies on one world: which reach the target RR, with the best RF and
    the cheapest advice, against the baselines and the constant-margin fronts."""
    from lab.whatif import (
        QUICK_POLICIES,
        check_policies,
        check_target,
        run_whatif,
        scenario_config,
        summary_lines,
        write,
    )

    # one line before anything runs or is written
    check_target(target_rr)
    chosen = check_policies(policy or QUICK_POLICIES)
    scenario_config(scenario)
    folder = output_dir(out or Path("results/whatif") / Path(scenario).stem)
    console.print(
        f"[bold]what if[/] on {escape(scenario)}: {len(chosen)} policies beside the "
        f"baselines, {tier} tier, target RR {target_rr:g}",
        highlight=False,
    )
    with progress_bar(transient=False) as bar:
        task = bar.add_task("runs", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        def log(text: str) -> None:
            bar.update(task, description=text[:60])
            if "not run" in text:
                bar.console.print(escape(text), highlight=False)

        result = run_whatif(
            scenario,
            policies=chosen,
            target_rr=target_rr,
            tier=tier,
            store=store,
            workers=workers,
            progress=progress,
            log=log,
        )
    console.print(_table(result))
    for line in summary_lines(result):
        console.print(escape(line), highlight=False)
    paths = write(result, folder)
    console.print(f"report written to [bold]{escape(str(paths['html']))}[/] and whatif.json")


def _table(result) -> Table:
    from lab.whatif import HEADLINE, cell

    table = Table(title=f"target RR {result.target_rr:g}", header_style="bold")
    for col in ("policy", "target RR", "RR", "RF", "cost of advice", "vs threshold (RR, RF, cost)"):
        table.add_column(col)
    for _, r in result.table.iterrows():
        words = [str(r.get(f"{f}_vs_threshold") or "–").split(" (")[0] for f in HEADLINE]
        table.add_row(
            r["policy"],
            r["reach"],
            *(cell(r, f, verdict=False) for f in HEADLINE),
            ", ".join(words),
        )
    return table


def register(app: typer.Typer) -> None:
    app.command("whatif")(whatif)
