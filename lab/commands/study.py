"""``recourse-abm study plan|check|run|report``: studies of any registered experiment
(see :mod:`lab.study`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from abm.validation import ConfigError, problem
from lab.terminal import console, err_console, fmt, output_dir, output_file, progress_bar

# lab.study loads the model (Mesa, scikit-learn, pandas, pyarrow): the commands import it
# when they run, so that `recourse-abm --help` stays fast

FileArg = Annotated[Path, typer.Argument(help="study file (.toml)")]


def _plan_text(study) -> str:
    axes = (
        "; ".join(f"{'+'.join(a.fields)}: {len(a.values)} value(s)" for a in study.axes)
        or "no sweep"
    )
    text = (
        f"{study.name}: {study.n_runs} runs = {axes}; {len(study.seeds)} seed(s); "
        f"{study.base.ticks} ticks; base {study.base.name}"
    )
    if study.experiment != "episode":
        text += f"; experiment {study.experiment}"
    if study.skipped_policies:
        text += f"\nnot registered, skipped: {', '.join(study.skipped_policies)}"
    return text


def plan(file: FileArg) -> None:
    """Validate a study file and print its plan (runs, axes, seeds)."""
    from lab.study import Study

    console.print(_plan_text(Study.from_toml(file)), highlight=False)


def run(
    file: FileArg,
    out: Annotated[Path, typer.Option(help="results directory (rerun the same command to resume)")],
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="local worker processes (default: CPU count; 1 = serial)"),
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Dask scheduler address, e.g. tcp://host:8786")
    ] = None,
    force: Annotated[
        bool, typer.Option(help="replace the results in --out if they are of a different study")
    ] = False,
    retry_errors: Annotated[bool, typer.Option(help="rerun runs recorded as errors")] = False,
    batch_memory: Annotated[
        float,
        typer.Option(
            min=0,
            help="MiB a batch of episodes advanced together may hold (0: each episode alone; "
            "the results are the same bits either way)",
        ),
    ] = 256,
) -> None:
    """Run every unfinished run of a study; results append to partitioned Parquet under --out.

    Exits with status 1 while any run is pending (lost to a dead worker or scheduler: rerun
    to resume) or failed (an error raised by the run; --retry-errors reruns those)."""
    from lab.study import StoreError, Study, run_study

    study = Study.from_toml(file)
    out = output_dir(out)  # a read-only or unusable --out: one line, before anything runs
    console.print(_plan_text(study), highlight=False)
    if scheduler is not None:
        # a lost scheduler makes Dask's client log reconnect tracebacks from its own thread;
        # the summary below names every lost run and what to do, once and plainly
        import distributed  # noqa: F401  (its logging set-up gives child loggers own levels)

        for name in ["distributed", *logging.root.manager.loggerDict]:
            if name.startswith("distributed"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
    with progress_bar(transient=False) as bar:
        task = bar.add_task(study.name, total=study.n_runs)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            status = run_study(
                study,
                out,
                workers=workers,
                scheduler=scheduler,
                force=force,
                retry_errors=retry_errors,
                progress=progress,
                batch_memory=batch_memory,
            )
        except StoreError as exc:  # a full disk: one line, exit 1 (the study resumes)
            bar.stop()
            err_console.print(
                f"[bold red]error:[/] {escape(exc.strerror)}", highlight=False, soft_wrap=True
            )
            raise typer.Exit(1) from None
    rate = status.completed / status.seconds if status.seconds > 0 else math.nan
    console.print(
        f"{status.completed} run(s) done now ({status.backend}, {status.seconds:.1f} s, "
        f"{rate:.1f} runs/s), {status.skipped} already finished, {status.errors} error(s); "
        f"results in [bold]{escape(str(out))}[/]"
    )
    for why in status.quarantined[:5]:
        console.print(f"  [yellow]quarantined[/] {escape(why)}", highlight=False)
    for message in status.error_messages[:5]:
        console.print(f"  [red]error[/] {escape(message)}", highlight=False)
    if status.errors > 5:
        console.print(f"  ... and {status.errors - 5} more (see the `error` column of runs)")
    for message in status.lost[:3]:
        console.print(f"  [yellow]lost[/] {escape(message)}", highlight=False)
    _write_report(out)
    if not status.complete:
        console.print(
            f"[red]incomplete:[/] {status.pending} of {status.total} run(s) pending, "
            f"{status.failed} failed; rerun the same command to run the pending ones"
            + (" (--retry-errors: the failed ones too)" if status.failed else ""),
            highlight=False,
        )
        raise typer.Exit(1)


def _write_report(
    out: Path,
    metrics: list[str] | None = None,
    plots: Path | None = None,
    html: Path | None = None,
    show: Callable | None = None,
) -> None:
    """Write the PNGs, summary.csv and the HTML page of ``out``; ``show(report)`` prints
    before the paths of what was written."""
    from lab.study.analysis import build_report, write_plots
    from lab.study.page import HTML_NAME, write_html

    rep = build_report(out, metrics)
    # both places checked before either is written: a refusal writes nothing
    output_dir(plots if plots is not None else Path(out) / "report", "--plots")
    output_file(html if html is not None else Path(out) / HTML_NAME, "--html")
    written = write_plots(rep, plots)
    page = write_html(rep, html)
    if show is not None:
        show(rep)
    where = plots if plots is not None else Path(out) / "report"
    console.print(f"{len(written)} plot(s) and summary.csv written to [bold]{where}[/]")
    console.print(f"report: [bold]{page}[/]", highlight=False)


def report(
    out: Annotated[Path, typer.Argument(help="study results directory")],
    metrics: Annotated[
        str | None,
        typer.Option(help="comma-separated metrics (default: the study's report_metrics)"),
    ] = None,
    plots: Annotated[
        Path | None, typer.Option(help="folder for the PNGs (default: OUT/report)")
    ] = None,
    html: Annotated[
        Path | None, typer.Option(help="the HTML page (default: OUT/report.html)")
    ] = None,
) -> None:
    """Print mean ± 95 % CI per sweep point; write the plots (PNG), summary.csv and one
    self-contained HTML page (tables, plots, run status, provenance), and print its path."""
    chosen = None if metrics is None else [m.strip() for m in metrics.split(",") if m.strip()]
    if chosen == []:
        raise ConfigError(
            problem(
                "--metrics",
                metrics,
                "comma-separated metric names "
                "(leave the option out for the study's report_metrics)",
                verb="names no metric",
            )
        )
    _write_report(out, chosen, plots, html, show=_print_summary)


def _print_summary(rep) -> None:
    """Run counts, then mean ± CI per policy and sweep point."""
    table, names = rep.table, rep.metrics
    s = rep.status
    console.print(
        f"{s['total']} run(s): {s['completed']} completed, {s['errors']} error(s), "
        f"{s['missing']} missing"
    )
    if table.empty:
        return
    # a [[zip]] group is shown by its first field: the others move with it
    leads = {a[0] for a in rep.manifest["axes"]}
    keys = [c for c in table.columns if c == "policy" or c in leads]
    view = Table(title=f"{rep.manifest['name']}: mean ± 95 % CI over seeds", header_style="bold")
    for k in [*keys, "n"]:
        view.add_column(k, justify="right" if k != "policy" else "left", no_wrap=k == "policy")
    for m in names:
        view.add_column(m, justify="right")
    for _, row in table.iterrows():
        cells = [fmt(row[k]) for k in keys] + [str(int(row["n"]))]
        for m in names:
            mean, ci = row[m], row[f"{m}_ci"]
            text = "n/a" if mean != mean else f"{mean:.3g}"
            cells.append(text if ci != ci else f"{text}±{ci:.2g}")
        view.add_row(*cells)
    console.print(view)


def register(app: typer.Typer) -> None:
    study_app = typer.Typer(
        help="Studies: an experiment over parameter sweeps x seeds from a TOML file, resumable, "
        "local or on Dask.",
        no_args_is_help=True,
    )
    study_app.command("plan")(plan)
    study_app.command("check", help="Same as `plan`.")(plan)
    study_app.command("run")(run)
    study_app.command("report")(report)
    app.add_typer(study_app, name="study")
