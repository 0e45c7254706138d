"""What every ``recourse-abm`` command prints with: the consoles, the progress bar, number
formatting and the one-line error exit.

Commands import these from here (or, as before, from :mod:`abm.app.cli`, which re-exports
them); this module imports no command, so a command may import it at module level.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from abm.validation import message

# bad input, as opposed to bugs: ConfigError and pydantic's ValidationError are ValueErrors
USER_ERRORS = (ValueError, FileNotFoundError)

console = Console()
err_console = Console(stderr=True)


def fail(text: str) -> None:
    """Print ``error: text`` on one line and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


def friendly_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn bad-input exceptions (ValueError, a missing file) into one line and exit 2.

    Other exceptions, ``TypeError`` above all, are bugs and propagate with their traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            fail(message(exc))

    return wrapper


def progress_bar(transient: bool = True) -> Progress:
    """A progress bar on stderr (off when stderr is not a terminal, e.g. in tests)."""
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
    """A table cell: floats to 4 significant digits, NaN as ``n/a``."""
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.4g}"
    return str(value)
