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
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

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
        return problem(
            "file", str(exc.filename), "a readable file", verb=f"cannot be used ({exc.strerror})"
        )
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
OUTPUT_FILE_ALLOWED = "a file path whose folder can be created and written"
# output directories checked by output_dir that did not exist then: (the path, its nearest
# ancestor that existed); a refused command removes those of them it left empty
_CHECKED_MISSING: list[tuple[Path, Path]] = []


@contextlib.contextmanager
def refusal_leaves_no_output() -> Iterator[None]:
    """Around a command: if it is refused (bad input, or an exit with status 2), the output
    directories it checked with :func:`output_dir` that did not exist are removed again,
    when empty (see :func:`remove_created_outputs`)."""
    mark = len(_CHECKED_MISSING)
    try:
        yield
    except (*USER_ERRORS, MemoryError):
        remove_created_outputs(mark)
        raise
    except typer.Exit as exc:
        if exc.exit_code == 2:
            remove_created_outputs(mark)
        raise
    finally:
        del _CHECKED_MISSING[mark:]


def remove_created_outputs(mark: int = 0) -> None:
    """Remove what a refused command left of the output directories it checked (with
    :func:`output_dir`) after ``mark`` that did not exist then: empty folders only, so a
    file written before the refusal is kept (a long run never loses data)."""
    for target, ancestor in reversed(_CHECKED_MISSING[mark:]):
        if target.is_dir() and not target.is_symlink():
            for root, _, _ in os.walk(target, topdown=False):
                with contextlib.suppress(OSError):
                    os.rmdir(root)  # fails, and keeps it, unless empty
        folder = target.parent
        while folder != ancestor and ancestor in folder.parents:  # parents it created
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent
    del _CHECKED_MISSING[mark:]


def output_file(path: str | Path | None, option: str) -> Path:
    """``path`` as a file to write, checked like :func:`output_dir` (its folder) before any
    work starts; an existing directory, or a folder that is a file, is refused naming
    ``option`` and ``path``."""
    text = "" if path is None else str(path)
    if not text.strip():
        raise ConfigError(problem(option, text, OUTPUT_FILE_ALLOWED, verb="is empty"))
    target = Path(text)
    try:
        is_dir = target.is_dir()
    except (OSError, ValueError) as exc:
        verb = f"is unusable ({exc})"
        raise ConfigError(problem(option, text, OUTPUT_FILE_ALLOWED, verb=verb)) from None
    if is_dir:
        raise ConfigError(problem(option, text, OUTPUT_FILE_ALLOWED, verb="is a directory"))
    output_dir(target.absolute().parent, option, shown=text, allowed=OUTPUT_FILE_ALLOWED)
    return target


def output_dir(
    path: str | Path | None,
    option: str = "--out",
    *,
    shown: str | None = None,
    allowed: str = OUTPUT_ALLOWED,
) -> Path:
    """``path`` as an output directory, checked before any work starts.

    Refused, with a one-line :class:`ConfigError` naming ``option``: an empty path, an
    existing file, a path below a file, one that cannot be created or written. The check
    creates the missing directories and a probe file, then removes both: nothing is left
    behind, so a later bad input still writes nothing. ``shown`` is the value named in
    the message (:func:`output_file` names the file, not its folder).
    """
    text = "" if path is None else str(path)
    if not text.strip():
        raise ConfigError(problem(option, text, allowed, verb="is empty"))
    named = text if shown is None else shown
    try:
        target = Path(text).absolute()
        ancestor, missing = target, []
        while not ancestor.exists():  # the nearest existing ancestor, and what lies below
            missing.append(ancestor)
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            inside = ancestor != target or shown is not None
            what = f"lies under the file {ancestor}" if inside else "is a file"
            raise ConfigError(problem(option, named, allowed, verb=what))
    except ConfigError:
        raise
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, no permission
        verb = f"is unusable ({exc})"
        raise ConfigError(problem(option, named, allowed, verb=verb)) from None
    try:
        for directory in reversed(missing):
            directory.mkdir()
        fd, probe = tempfile.mkstemp(dir=target, prefix=".recourse-abm-probe-")
        os.close(fd)
        os.unlink(probe)
        if missing:
            _CHECKED_MISSING.append((target, ancestor))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            problem(option, named, allowed, verb=f"cannot be written ({reason})")
        ) from None
    finally:
        for directory in missing:  # deepest first: only what the probe created, if empty
            with contextlib.suppress(OSError):
                directory.rmdir()
    return Path(text)


#: how often a long command writes a progress line when stderr is a file or a pipe (seconds)
LINE_EVERY_S = 30.0


class LineProgress(Progress):
    """Progress for stderr that is not a terminal (a log file, a batch job's output): no
    live bar; instead one plain line at most every ``every`` seconds (default
    :data:`LINE_EVERY_S`) with each task's description, count and time left, a line at
    each new description once ``every`` has passed (a log's events: "trained μ ..."), and
    a last line when it stops if it wrote any. A command shorter than ``every`` writes
    nothing. ``clock``: seconds (tests)."""

    def __init__(
        self,
        *columns: Any,
        every: float | None = None,
        clock: Callable[[], float] | None = None,
        **kw: Any,
    ) -> None:
        self._clock = clock or time.monotonic
        super().__init__(*columns, disable=True, get_time=self._clock, **kw)
        self._began = self._clock()
        self._every = float(LINE_EVERY_S if every is None else every)
        self._due = self._began + self._every
        self._wrote = self._stopped = False

    def update(self, task_id: Any, **kw: Any) -> None:
        said = kw.get("description")
        new = said is not None and any(
            t.id == task_id and t.description != said for t in self.tasks
        )
        super().update(task_id, **kw)
        self._tell(event=new)

    def advance(self, task_id: Any, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._tell()

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            if self._wrote:
                self._tell(last=True)
        super().stop()

    def _tell(self, last: bool = False, event: bool = False) -> None:
        now = self._clock()
        # an event is due once the first interval has passed, any other line on schedule
        due = self._began + self._every if event else self._due
        if now < due and not last:
            return
        self._due, self._wrote = now + self._every, True
        parts = []
        for t in self.tasks:
            if not t.visible:
                continue
            count = _count(t.completed) + ("" if t.total is None else f"/{_count(t.total)}")
            left = t.time_remaining if t.total else None
            soon = "" if last or not left else f", about {_duration(left)} left"
            what = _plain(t.description)
            parts.append(f"{what}: {count}{soon}" if what else f"{count}{soon}")
        line = f"[{_duration(now - self._began)}] " + "; ".join(parts)
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def _plain(description: str) -> str:
    """A description as the bar shows it (markup read, escapes undone); as typed where it
    is not valid markup (a log line must not fail where a bar would)."""
    try:
        return Text.from_markup(description).plain
    except MarkupError:
        return description


def _count(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:g}"


def _duration(seconds: float) -> str:
    """``seconds`` as h:mm:ss or m:ss."""
    whole = int(seconds)
    h, rest = divmod(whole, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def progress_bar(transient: bool = True) -> Progress:
    """A progress bar on stderr; when stderr is not a terminal (a log file, a pipe, tests), a
    line every :data:`LINE_EVERY_S` seconds instead (:class:`LineProgress`)."""
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    if not err_console.is_terminal:
        return LineProgress(*columns, console=err_console)
    return Progress(*columns, console=err_console, transient=transient)


def fmt(value: Any) -> str:
    """A table cell: floats to 4 significant digits, NaN as ``n/a``."""
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.4g}"
    return str(value)
