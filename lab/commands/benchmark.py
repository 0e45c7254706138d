"""``recourse-abm benchmark POLICY``: enter a recourse method in the dynamic benchmark.

Checks the policy (:func:`abm.testing.check_policy`), runs the protocol's tier
(:mod:`lab.benchmark`) beside the baselines and the constant-margin fronts, resumable,
and writes its report card (``card.json``, ``card.html``); ``--verify CARD`` checks a card,
``--rejudge CARD`` carries a card of an earlier protocol version over
(:func:`lab.benchmark.card.rejudge`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from abm.validation import ConfigError, problem
from lab.terminal import console, err_console, output_dir, progress_bar

TierName = Literal["full", "quick", "smoke"]
QUICK_BUDGET_S = 600.0  # the quick tier's promise on 2 cores, for a policy at most 10x threshold


def _with_params(policy: str, params: list[str]) -> str:
    """``policy`` with each ``--param k=v`` added to its single part."""
    if not params:
        return policy
    if "+" in policy:
        raise ConfigError(
            problem(
                "--param",
                params[0],
                "only with a single-part policy; write GOAL:k=v+RECOMMENDER:k=v instead",
                verb="is not allowed",
            )
        )
    for item in params:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ConfigError(problem("--param", item, "KEY=VALUE"))
    sep = "," if ":" in policy else ":"
    return policy + sep + ",".join(p.strip() for p in params)


def _allowances(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        rule, eq, reason = item.partition("=")
        if not eq or not reason.strip():
            raise ConfigError(problem("--allow", item, "RULE=REASON (a rule of check_policy)"))
        out[rule.strip()] = reason.strip()
    return out


def benchmark(
    policy: Annotated[
        str | None,
        typer.Argument(help="a registered policy (a plug-in's too), e.g. threshold-true"),
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="a policy parameter KEY=VALUE (repeatable)")
    ] = None,
    tier: Annotated[
        TierName, typer.Option(help="full (the leaderboard's), quick (<= 10 min) or smoke")
    ] = "full",
    quick: Annotated[bool, typer.Option("--quick", help="the quick tier (= --tier quick)")] = False,
    out: Annotated[
        Path | None, typer.Option(help="where the card goes (default results/benchmark/NAME/TIER)")
    ] = None,
    store: Annotated[
        Path, typer.Option(help="runs kept between benchmarks (the baselines run once)")
    ] = Path("results/benchmark/store"),
    artefacts: Annotated[
        Path,
        typer.Option(
            help="where a learned entry's artefacts (μ, φ) are trained and kept (its runs name them)"
        ),
    ] = Path("results/benchmark/artefacts"),
    baselines: Annotated[
        Path | None,
        typer.Option(
            help="the baselines' per-run figures from this file instead of running them "
            "(results/benchmark/baselines-full.parquet holds the full and quick tiers')"
        ),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="local worker processes")] = 2,
    scheduler: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786")
    ] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="RULE=REASON: a check_policy rule the policy breaks, stated"),
    ] = None,
    share: Annotated[
        list[Path] | None,
        typer.Option(
            "--share",
            help="a study store whose runs of the baselines are reused (e.g. the five-families "
            "fronts'; repeatable)",
        ),
    ] = None,
    verify: Annotated[
        Path | None, typer.Option(help="check this card.json instead: tables and a rerun sample")
    ] = None,
    rejudge: Annotated[
        Path | None,
        typer.Option(
            help="carry this card.json of an earlier protocol version with the same runs over "
            "to this one, running nothing again: its tables judged again, the check under "
            "this version's rules"
        ),
    ] = None,
) -> None:
    """Run a policy through the dynamic-recourse protocol and write its report card."""
    from lab.benchmark import card
    from lab.benchmark.run import (
        BenchmarkRefused,
        estimate_seconds,
        minutes,
        not_run_presets,
        run_benchmark,
    )

    if verify is not None:
        try:
            card.verify(verify, store=store, log=lambda line: console.print(escape(line)))
        except card.Mismatch as exc:
            err_console.print(f"[bold red]verify failed:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from None
        console.print("[bold green]verified[/]")
        return
    if rejudge is not None:
        doc = card.load(rejudge)
        try:
            outcome, made = card.rejudge(doc, store=store)
        except card.Mismatch as exc:
            err_console.print(f"[bold red]rejudge failed:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from None
        except BenchmarkRefused as exc:
            err_console.print(f"[bold red]refused:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        folder = output_dir(out or rejudge.parent / outcome.protocol.version.replace("/", "-"))
        paths = card.write(outcome, folder, made)
        console.print(
            f"{escape(outcome.policy)}: {made['protocol']['version']} -> "
            f"{outcome.protocol.version}, the same tables; card written to "
            f"[bold]{escape(str(paths['json']))}[/] and card.html",
            highlight=False,
        )
        return
    if policy is None:
        raise ConfigError(
            "policy is missing: recourse-abm benchmark POLICY (or --verify CARD, --rejudge CARD)"
        )
    tier = "quick" if quick else tier
    spec = _with_params(policy, param or [])
    name = re.sub(r"[^A-Za-z0-9._=-]+", "_", spec)
    folder = output_dir(out or Path("results/benchmark") / name / tier)
    from lab.benchmark.protocol import protocol

    proto = protocol(tier)
    console.print(
        f"[bold]{escape(spec)}[/]: {proto.version}, {tier} tier: {len(proto.presets)} presets x "
        f"{proto.worlds} worlds x {proto.episodes} episodes, beside "
        f"{len(proto.baseline_policies())} baseline policies",
        highlight=False,
    )
    from abm.registry import REGISTRY

    REGISTRY.validate(spec)  # one line before anything runs
    table = None
    if baselines is not None:
        if not baselines.is_file():
            raise ConfigError(
                f"baselines = {str(baselines)!r} is not a file; allowed: a file of "
                "card.export_baselines, e.g. results/benchmark/baselines-full.parquet"
            )
        try:
            table = card.read_baselines(baselines)
        except card.CardError as exc:
            raise ConfigError(str(exc)) from None
    try:
        skip = not_run_presets(spec, proto)
    except BenchmarkRefused as exc:
        err_console.print(f"[bold red]refused:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from None
    for preset, why in skip.items():
        console.print(f"{preset}: not run, the entry cannot run in its world ({escape(why)})")
    if share:  # before the estimate: shared runs cost nothing
        from lab.benchmark.run import share_runs

        n = share_runs(share, store, proto, spec, skip)
        console.print(f"{n} runs of the baselines shared from {len(share)} store(s)")
    if tier != "smoke":
        seconds = estimate_seconds(
            spec, proto, store, skip=skip, artefacts=artefacts, entry_only=baselines is not None
        )
        seconds /= workers
        note = ""
        if tier == "quick" and seconds > QUICK_BUDGET_S:
            note = " (more than the quick tier's 10 minutes: the policy is slow)"
        console.print(f"estimate: about {minutes(seconds)} here with {workers} worker(s){note}")
    with progress_bar(transient=False) as bar:
        task = bar.add_task("runs", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        def log(text: str) -> None:
            bar.update(task, description=text)

        try:
            outcome = run_benchmark(
                spec,
                tier=tier,
                store=store,
                workers=workers,
                scheduler=scheduler,
                allow=_allowances(allow or []),
                not_run=skip,
                progress=progress,
                log=log,
                artefacts=artefacts,
                baselines=table,
            )
        except BenchmarkRefused as exc:
            bar.stop()
            err_console.print(f"[bold red]refused:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
    paths = card.write(outcome, folder)
    console.print(_verdicts(outcome))
    console.print(f"card written to [bold]{escape(str(paths['json']))}[/] and card.html")


def _verdicts(outcome) -> Table:
    table = Table(title=f"{outcome.policy} against the constant-margin fronts", header_style="bold")
    for col in ("preset", "front", "RF − front at equal RR", "RR − front at equal RF"):
        table.add_column(col)
    fronts = outcome.fronts
    for (preset, front), g in fronts.groupby(["preset", "front"], sort=False):
        cells = g.set_index("figure")
        row = [preset, front]
        for fig in ("rf_at_equal_rr", "rr_at_equal_rf"):
            r = cells.loc[fig]
            d = r["vs_front"]
            row.append(
                "–"
                if d != d
                else f"{d:+.3f} [{r['vs_front_lo']:+.3f}, {r['vs_front_hi']:+.3f}] "
                f"{r['vs_front_verdict']} (n = {int(r['vs_front_worlds'])})"
            )
        table.add_row(*row)
    return table


def register(app: typer.Typer) -> None:
    # "[OPTIONS] [POLICY]" would read as a Markdown reference link on the CLI's docs page
    app.command("benchmark", options_metavar="[OPTIONS]...")(benchmark)
