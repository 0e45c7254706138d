"""What every ``recourse-abm`` command prints with: the consoles, the progress bar, number
formatting and the one-line error exit.

Commands import these from here (or, as before, from :mod:`lab.cli`, which re-exports
them); this module imports no command, so a command may import it at module level.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from abm.validation import ConfigError, message, problem

# bad input, as opposed to bugs: ConfigError and pydantic's ValidationError are ValueErrors;
# a path that is missing, a directory where a file belongs (or the reverse), or unreadable
USER_ERRORS = (
    ValueError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def describe(exc: BaseException) -> str:
    """A bad-input exception as one line; a path error names the path and what went wrong."""
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError) and exc.filename:
        return problem("file", str(exc.filename), "a readable file",
                       verb=f"cannot be used ({exc.strerror})")  # fmt: skip
    return message(exc)


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
            fail(describe(exc))

    return wrapper


OUTPUT_ALLOWED = "a directory that can be created and written (missing parents are created)"


def output_dir(path: str | Path | None, option: str = "--out") -> Path:
    """``path`` as an output directory, checked before any work starts.

    Refused, with a one-line :class:`ConfigError` naming ``option``: an empty path, an
    existing file, a path below a file, one that cannot be created or written. The check
    creates the missing directories and a probe file, then removes both: nothing is left
    behind, so a later bad input still writes nothing.
    """
    text = "" if path is None else str(path)
    if not text.strip():
        raise ConfigError(problem(option, text, OUTPUT_ALLOWED, verb="is empty"))
    try:
        target = Path(text).absolute()
        ancestor, missing = target, []
        while not ancestor.exists():  # the nearest existing ancestor, and what lies below
            missing.append(ancestor)
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            what = "is a file" if ancestor == target else f"lies under the file {ancestor}"
            raise ConfigError(problem(option, text, OUTPUT_ALLOWED, verb=what))
    except ConfigError:
        raise
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, no permission
        verb = f"is unusable ({exc})"
        raise ConfigError(problem(option, text, OUTPUT_ALLOWED, verb=verb)) from None
    try:
        for directory in reversed(missing):
            directory.mkdir()
        fd, probe = tempfile.mkstemp(dir=target, prefix=".recourse-abm-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            problem(option, text, OUTPUT_ALLOWED, verb=f"cannot be written ({reason})")
        ) from None
    finally:
        for directory in missing:  # deepest first: only what the probe created, if empty
            with contextlib.suppress(OSError):
                directory.rmdir()
    return Path(text)


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
