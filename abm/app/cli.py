"""The ``recourse-abm`` command line."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from abm.config import parse_overrides
from abm.registry import REGISTRY
from abm.validation import ConfigError

app = typer.Typer(
    help="Agent-based simulation of algorithmic recourse in competitive top-k settings.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    """Print a one-line error and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def friendly_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn bad-input exceptions into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ConfigError, ValueError, TypeError, FileNotFoundError) as exc:
            fail(str(exc))

    return wrapper


def progress_bar(transient: bool = True) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=transient,
        disable=not err_console.is_terminal,
    )


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.4g}"
    return str(value)


def summary_table(summary: dict[str, Any], title: str) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    labels = {
        "rr": "recourse reliability RR (mean over defined ticks)",
        "rf": "recourse feasibility RF (mean over defined ticks)",
        "gini": "Gini of goal scores (mean)",
        "mean_cost": "mean recommended cost (true d)",
        "n_accepted": "accepted",
        "n_dropped": "dropped out",
        "n_reapplied": "reapplications",
        "n_succ": "reapplied after full implementation",
        "effort": "effort spent (sum |dx| d)",
        "wasted_effort": "effort of those who dropped out",
        "mean_time_to_accept": "mean ticks from entry to acceptance",
    }
    for key, label in labels.items():
        if key in summary:
            table.add_row(label, fmt(summary[key]))
    return table


ScenarioOpt = Annotated[
    str, typer.Option("--scenario", "-s", help="preset name or path to a .toml scenario file")
]
PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="policy name (see `policies`)")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="override a scenario field, KEY=VALUE (repeatable), e.g. beta=0.01"),
]


@app.command()
@friendly_errors
def run(
    scenario: ScenarioOpt = "paper",
    policy: PolicyOpt = "threshold",
    ticks: Annotated[int | None, typer.Option(help="number of ticks (default: scenario's)")] = None,
    seed: Annotated[int | None, typer.Option(help="episode seed (default: scenario's)")] = None,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("results/run"),
    events: Annotated[bool, typer.Option(help="write the per-application candidate table")] = True,
    set_: SetOpt = None,
) -> None:
    """Run one episode, print a summary and write tables, summary.json and metrics.png."""
    from abm.app.results import write_run
    from abm.model import RecourseModel
    from abm.scenarios import resolve_scenario

    overrides = parse_overrides(set_)
    if ticks is not None:
        overrides["ticks"] = ticks
    config = resolve_scenario(scenario)
    model = RecourseModel(
        config, policy, seed=seed, agents=False, record_events=events, **overrides
    )
    with progress_bar() as bar:
        task = bar.add_task(f"{model.config.name} · {policy}", total=model.config.ticks)
        model.run(progress=lambda: bar.advance(task))
    summary = write_run(model, out)
    title = f"{model.config.name} · {policy} · seed {model.config.seed} · {model.tick} ticks"
    console.print(summary_table(summary, title))
    console.print(f"results written to [bold]{out}[/] (ticks.parquet, summary.json, metrics.png"
                  + (", candidates.parquet)" if events else ")"))  # fmt: skip


@app.command()
def scenarios() -> None:
    """List the scenario presets."""
    from abm.scenarios import PRESETS

    table = Table(title="scenario presets", header_style="bold")
    table.add_column("name", no_wrap=True)
    for col in ("N0", "k", "m", "T", "beta", "ticks"):
        table.add_column(col, justify="right")
    table.add_column("description", overflow="fold")
    for name, c in PRESETS.items():
        table.add_row(name, str(c.n_initial), str(c.k), str(c.m), str(c.validity), fmt(c.beta),
                      str(c.ticks), c.description)  # fmt: skip
    console.print(table)


@app.command()
def policies() -> None:
    """List the recourse policies (and the parts composite policies are built from)."""
    table = Table(title="policies", header_style="bold")
    table.add_column("name", no_wrap=True)
    table.add_column("description", overflow="fold")
    for name, text in REGISTRY.describe("policy").items():
        table.add_row(name, text)
    console.print(table)
    parts = Table(
        title="composite parts: --policy 'GOAL+RECOMMENDER[:key=value,...]'", header_style="bold"
    )
    parts.add_column("kind")
    parts.add_column("name")
    parts.add_column("description", overflow="fold")
    for kind in ("goal", "recommender"):
        for name, text in REGISTRY.describe(kind).items():
            parts.add_row(kind, name, text)
    console.print(parts)


def _register_subcommands() -> None:
    import importlib
    import pkgutil

    import abm.app.commands

    for info in sorted(pkgutil.iter_modules(abm.app.commands.__path__), key=lambda i: i.name):
        importlib.import_module(f"abm.app.commands.{info.name}").register(app)


_register_subcommands()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
