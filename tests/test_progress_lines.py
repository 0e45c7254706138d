"""Progress where stderr is a file or a pipe (a log, a batch job): lines, not a live bar."""

import io

from rich.console import Console
from typer.testing import CliRunner

from lab import terminal
from lab.cli import app
from lab.terminal import LineProgress


def _lines(updates, every=30.0):
    """Run ``updates`` (seconds passed, update kwargs) through a LineProgress on a fake
    clock; the lines it wrote."""
    now = [0.0]
    out = Console(file=io.StringIO(), width=300)
    with LineProgress(console=out, every=every, clock=lambda: now[0]) as bar:
        task = bar.add_task("runs", total=None)
        for seconds, kwargs in updates:
            now[0] += seconds
            bar.update(task, **kwargs)
    return out.file.getvalue().splitlines()


def test_a_command_shorter_than_the_interval_writes_nothing():
    assert _lines([(1.0, {"completed": i, "total": 20}) for i in range(20)]) == []


def test_a_line_every_interval_with_count_and_time_left_and_a_last_line():
    lines = _lines([(1.0, {"completed": i + 1, "total": 100}) for i in range(100)])
    # due at 30, 60, 90 s, then the last line when it stops
    assert [line.split("]")[0] for line in lines] == ["[0:30", "[1:00", "[1:30", "[1:40"]
    assert lines[0].startswith("[0:30] runs: 30/100, about ")
    assert lines[0].endswith(" left")
    # 1 s a run with 70 to go: rich's estimate from the speed it measured
    assert "about 1:10 left" in lines[0]
    assert lines[-1] == "[1:40] runs: 100/100"


def test_an_unknown_total_is_counted_and_a_new_description_is_said_once_due():
    steps = [(10.0, {"completed": 1}), (10.0, {"description": "trained μ in paper"})]
    assert _lines(steps) == []  # 20 s: not yet due, even for an event
    steps += [(15.0, {"completed": 2}), (5.0, {"description": "trained μ in budget"})]
    lines = _lines(steps)
    assert lines == [
        "[0:35] trained μ in paper: 2",
        "[0:40] trained μ in budget: 2",  # an event after the first interval: said at once
        "[0:40] trained μ in budget: 2",  # the last line
    ]


def test_escaped_markup_in_a_description_is_written_as_typed():
    lines = _lines([(31.0, {"description": r"paper · last-threshold\[x]", "completed": 1})])
    assert lines[0] == "[0:31] paper · last-threshold[x]: 1"
    # not markup at all (a closing tag with nothing open): written as it is, no error
    assert _lines([(31.0, {"description": "a [/] b", "completed": 1})])[0] == "[0:31] a [/] b: 1"


def test_large_counts_are_written_whole_and_hidden_tasks_not_at_all():
    now = [0.0]
    out = Console(file=io.StringIO(), width=300)
    with LineProgress(console=out, every=1.0, clock=lambda: now[0]) as bar:
        task = bar.add_task("steps", total=2_000_000)
        bar.add_task("inner", total=3, visible=False)
        now[0] = 2.0
        bar.update(task, completed=1_234_567)
    assert out.file.getvalue().splitlines()[0] == "[0:02] steps: 1234567/2000000"


def test_stop_writes_its_last_line_once():
    now = [0.0]
    out = Console(file=io.StringIO(), width=300)
    bar = LineProgress(console=out, every=1.0, clock=lambda: now[0])
    task = bar.add_task("runs", total=2)
    now[0] = 2.0
    bar.update(task, completed=1)
    bar.stop()
    bar.stop()
    assert len(out.file.getvalue().splitlines()) == 2


def test_a_command_writing_to_a_file_reports_its_progress_in_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(terminal, "LINE_EVERY_S", 0.0)  # every update is due
    args = ["run", "--scenario", "paper", "--policy", "threshold", "--ticks", "3"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if line.startswith("[0:")]
    assert [line.split("] ", 1)[1].split(",")[0] for line in said] == [
        "paper · threshold: 1/3",
        "paper · threshold: 2/3",
        "paper · threshold: 3/3",
        "paper · threshold: 3/3",
    ]
    assert isinstance(terminal.progress_bar(), LineProgress)  # the test's stderr is no terminal
