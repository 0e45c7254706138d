"""The ``recourse-abm`` command line.

Every user-facing error, typer's own (bounds, choices, unknown options) as well as ours
(:class:`~abm.validation.ConfigError`, pydantic), prints one line ``error: FIELD = VALUE
... allowed: ...`` and exits with status 2; a bug (``TypeError``, ...) keeps its traceback.
The commands are plain functions: called from Python they raise instead of exiting.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import annotated_types
import typer
from rich import box
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from abm.config import ScenarioConfig, parse_overrides
from abm.mechanisms import card_figures, episode_figures, registered
from abm.registry import REGISTRY
from abm.validation import ConfigError, interval, problem
from lab.terminal import (
    USER_ERRORS,
    console,
    describe,
    err_console,
    fail,
    fmt,
    friendly_errors,
    output_dir,
    progress_bar,
    refusal_leaves_no_output,
)

__all__ = [
    "app",
    "console",
    "err_console",
    "fail",
    "fmt",
    "friendly_errors",
    "main",
    "parse_overrides",
    "progress_bar",
]


# -- typer's errors in the same one-line style ---------------------------------------------
class _Typed(str):
    """A command-line token, shown as typed (no quotes) in an error message."""

    def __repr__(self) -> str:
        return str(self)


def _param_allowed(param: Any) -> str | None:
    """What a typer option accepts (its ``min``/``max``, choices or type), in
    :func:`abm.validation.interval`'s words; None when typer says nothing more."""
    kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    choices = getattr(getattr(param, "type_descriptor", None), "choices", None)
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if choices:
        return "one of " + ", ".join(str(getattr(c, "value", c)) for c in choices)
    if kind in (int, float) and (low is not None or high is not None):
        return interval(low, high, integer=kind is int)
    return {int: "an integer", float: "a number", bool: "true or false"}.get(kind)


def _typed_value(param: Any, argv: list[str]) -> str | None:
    """The text given to option ``param`` in ``argv`` (the last one wins, as in typer)."""
    value = None
    names = [*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())]
    for i, token in enumerate(argv):
        for name in names:
            if token == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif token.startswith(name + "="):
                value = token[len(name) + 1 :]
    return value


def usage_message(exc: typer.TyperException, argv: list[str]) -> str:
    """A typer usage error as one line: option, value, what is allowed."""
    param, ctx = getattr(exc, "param", None), getattr(exc, "ctx", None)
    if param is not None and getattr(param, "opts", None):
        name = max(param.opts, key=len)
        allowed, value = _param_allowed(param), _typed_value(param, argv)
        if allowed is not None and value is not None:
            return problem(name, _Typed(value), allowed)
        return f"{name}: {' '.join(exc.format_message().split())}"
    option = getattr(exc, "option_name", None)
    if option is not None and ctx is not None and getattr(exc, "possibilities", None) is not None:
        # an unknown option: list the command's own
        options = [o for p in ctx.command.params for o in p.opts if o.startswith("--")]
        verb = f"is not an option of `{ctx.info_name}`"
        return problem("option", _Typed(option), ", ".join(options), verb=verb)
    return " ".join(exc.format_message().split())


@contextlib.contextmanager
def _one_line_errors(argv: list[str]) -> Iterator[None]:
    try:
        with refusal_leaves_no_output():  # a refused command leaves no empty --out behind
            yield
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            raise  # prints the help, as asked
        fail(usage_message(exc, argv))
    except USER_ERRORS as exc:
        fail(describe(exc))
    except MemoryError as exc:  # sizes past this machine's memory (n_initial, m, n_features)
        fail(f"out of memory ({exc or 'MemoryError'}); allowed: smaller scenario sizes")


def _check_empty_out(argv: list[str]) -> None:
    """``--out ''`` is refused: typer reads an empty path as ``.``, the current directory."""
    for i, token in enumerate(argv):
        if token == "--out=" or (token == "--out" and i + 1 < len(argv) and not argv[i + 1]):
            output_dir("", "--out")


class OneLineErrorGroup(TyperGroup):
    """typer's command group, reporting every user-facing error on one line (exit 2)."""

    def make_context(self, info_name: str | None, args: list[str], parent=None, **extra: Any):
        argv = list(args)
        with _one_line_errors(argv):
            _check_empty_out(argv)
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        ctx.meta["recourse_abm.argv"] = argv
        return ctx

    def invoke(self, ctx: typer.Context) -> Any:
        with _one_line_errors(ctx.meta.get("recourse_abm.argv", [])):
            return super().invoke(ctx)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        name = args[0] if args else None
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            allowed = ", ".join(self.list_commands(ctx))
            raise ConfigError(problem("command", _Typed(name), allowed, verb="is unknown"))
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=OneLineErrorGroup,
    help="Agent-based simulation of algorithmic recourse in competitive top-k settings.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        from abm import __version__
        from abm.provenance import RESULTS_SCHEMA

        console.print(f"recourse-abm {__version__} (results schema {RESULTS_SCHEMA})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    """Agent-based simulation of algorithmic recourse in competitive top-k settings."""


def summary_table(summary: dict[str, Any], title: str) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    # the summary's catalogue: the world's own figures, then each extension's (shown when on)
    labels = {f.column: f.label for f in episode_figures() if f.label}
    for key, label in labels.items():
        if key in summary:
            table.add_row(label, fmt(summary[key]))
    return table


def turn_on() -> dict[str, str]:
    """Extension -> a preset that switches it on (docs/world.md names its fields)."""
    return {m.name: m.preset for m in registered() if m.preset}


def _off(value: float, reason: str) -> bool:
    """Whether a card figure is undefined because its world extension is off."""
    return value != value and reason.startswith("needs ")


def off_mechanisms(card: Any) -> dict[str, int]:
    """Mechanism -> how many of the card's figures are undefined because it is off."""
    out: dict[str, int] = {}
    for _, _, value, reason in card.rows():
        if _off(value, reason):
            mech = reason.removeprefix("needs ")
            out[mech] = out.get(mech, 0) + 1
    return out


def card_table(card: Any, title: str, full: bool = True) -> Table:
    """The outcome card (abm.card), and why a figure is undefined; ``full`` False leaves
    out the figures whose mechanism is off (:func:`off_line` names them)."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("undefined because", style="dim")
    for _, label, value, reason in card.rows():
        if not full and _off(value, reason):
            continue
        table.add_row(label, fmt(value) if value == value else "–", reason)
    return table


def off_line(card: Any) -> str | None:
    """One line naming the mechanisms whose figures are off and how to switch each on
    (None when every figure's mechanism is on)."""
    off = off_mechanisms(card)
    if not off:
        return None
    names = ", ".join(f"{m} {n}" for m, n in off.items())
    preset = turn_on()
    presets = ", ".join(f"-s {preset[m]}" for m in off if m in preset)
    n = sum(off.values())
    return f"{n} figures need a world extension that is off ({names}): try {presets}; --card prints them"


def _option_bounds(field: str) -> dict[str, Any]:
    """typer's ``min``/``max`` for an option that sets a scenario field (bounds live in
    :class:`ScenarioConfig`, once)."""
    out: dict[str, Any] = {}
    for meta in ScenarioConfig.model_fields[field].metadata:
        if isinstance(meta, annotated_types.Ge):
            out["min"] = meta.ge
        elif isinstance(meta, annotated_types.Le):
            out["max"] = meta.le
    return out


ScenarioOpt = Annotated[
    str, typer.Option("--scenario", "-s", help="preset name or path to a .toml scenario file")
]
PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="policy name (see `policies`)")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="override a scenario field, KEY=VALUE (repeatable), e.g. beta=0.01"),
]
TicksOpt = Annotated[
    int | None,
    typer.Option(**_option_bounds("ticks"), help="number of ticks (default: scenario's)"),
]
SeedOpt = Annotated[
    int | None, typer.Option(**_option_bounds("seed"), help="episode seed (default: scenario's)")
]


@app.command()
def run(
    scenario: ScenarioOpt = "paper",
    policy: PolicyOpt = "threshold",
    ticks: TicksOpt = None,
    seed: SeedOpt = None,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("results/run"),
    events: Annotated[bool, typer.Option(help="write the per-application candidate table")] = True,
    set_: SetOpt = None,
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            help="use trained artefacts made for another world, beta or population (recorded)"
        ),
    ] = False,
    card: Annotated[
        bool,
        typer.Option(
            "--card", help="print every figure of the outcome card, those of the mechanisms off too"
        ),
    ] = False,
) -> None:
    """Run one episode, print a summary and write tables, summary.json and metrics.png."""
    # the model (Mesa, scikit-learn) loads only when a command needs it: listings stay fast
    from abm.card import Card
    from abm.model import RecourseModel
    from abm.scenarios import resolve_scenario
    from lab.results import write_run

    out = output_dir(out)
    overrides = parse_overrides(set_)
    # --ticks and --seed win over --set ticks=/seed=; the value they replace is still checked
    for key, value in (("ticks", ticks), ("seed", seed)):
        if value is not None:
            if key in overrides:
                ScenarioConfig.check_field(key, overrides[key])
            overrides[key] = value
    # one config, resolved and validated once: the model takes it as it is
    config = resolve_scenario(scenario)
    if overrides:
        config = config.replace(**overrides)
    model = RecourseModel(
        config,
        policy,
        agents=False,
        record_events=events,
        allow_mismatch=allow_mismatch,
    )
    with progress_bar() as bar:
        task = bar.add_task(escape(f"{model.config.name} · {policy}"), total=model.config.ticks)
        model.run(progress=lambda: bar.advance(task))
    summary = write_run(model, out)
    # names are the user's text: escaped, Rich shows "[...]" as typed
    title = escape(
        f"{model.config.name} · {policy} · seed {model.config.seed} · {model.tick} ticks"
    )
    console.print(summary_table(summary, title))
    # the card write_run computed for summary.json (Kaplan-Meier and all), not a second one
    labels = {f.name: f.label for f in card_figures()}
    outcome = Card(summary["card"], summary["card_reasons"], labels)
    console.print(card_table(outcome, "outcome card", full=card))
    line = None if card else off_line(outcome)
    if line:
        console.print(escape(line), style="dim")
    plots = "metrics.png" + (", extensions.png" if model.config.mechanisms else "")
    console.print(
        f"results written to [bold]{escape(str(out))}[/] (ticks.parquet, summary.json, {plots}"
        + (", candidates.parquet)" if events else ")")
    )


@app.command()
def scenarios() -> None:
    """List the scenario presets."""
    from abm.scenarios import PRESETS

    # the figures first, the descriptions below them: both fit an 80-column terminal
    table = Table(title="scenario presets", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("name", no_wrap=True)
    for col in ("N0", "k", "m", "T", "beta", "ticks"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, c in PRESETS.items():
        table.add_row(
            name,
            f"{c.n_initial:,}",
            f"{c.k:,}",
            f"{c.m:,}",
            str(c.validity),
            fmt(c.beta),
            f"{c.ticks:,}",
        )
    console.print(table)
    notes = Table.grid(padding=(0, 2))
    notes.add_column(no_wrap=True, style="bold")
    notes.add_column(overflow="fold")
    for name, c in PRESETS.items():
        notes.add_row(name, c.description)
    console.print(notes)


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


COMMANDS = "lab.commands"


def _register_subcommands() -> None:
    """Each module of :mod:`lab.commands` adds its commands (``register(app)``).

    The modules are found by name, like plugins: they import this module for its helpers,
    this module does not import them.
    """
    spec = importlib.util.find_spec(COMMANDS)
    assert spec is not None and spec.submodule_search_locations is not None
    modules = pkgutil.iter_modules(spec.submodule_search_locations)
    for info in sorted(modules, key=lambda i: i.name):
        importlib.import_module(f"{COMMANDS}.{info.name}").register(app)


_register_subcommands()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
