import numpy as np
import pytest

from abm import RecourseModel


@pytest.fixture(autouse=True)
def _no_progress_lines(monkeypatch):
    """A command's progress lines (stderr not a terminal: ``lab.terminal.LineProgress``)
    depend on how long it ran: kept out of every test's output, so none reads differently
    on a slower machine (tests/test_progress_lines.py turns them on)."""
    from lab import terminal

    monkeypatch.setattr(terminal, "LINE_EVERY_S", float("inf"))


@pytest.fixture(scope="session")
def paper_run():
    """One paper episode of the threshold policy with agents and events (seed 0)."""
    return RecourseModel("paper", "threshold", seed=0).run()


class SpyPolicy:
    """Wraps a policy and keeps copies of every observation it was shown."""

    def __init__(self, inner):
        self.inner = inner
        self.seen = []

    def prepare(self, ctx):
        self.inner.prepare(ctx)

    def recommend(self, obs, rng):
        self.seen.append(obs)
        return self.inner.recommend(obs, rng)

    def observe(self, feedback):
        self.inner.observe(feedback)


@pytest.fixture
def spy_policy():
    """The SpyPolicy class: wrap a policy to record what it observes."""
    return SpyPolicy


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_terminal_summary(terminalreporter):
    """One line on the golden runs: how many matched bit for bit, how far the rest moved."""
    found = [
        value
        for report in terminalreporter.stats.get("passed", [])
        for key, value in getattr(report, "user_properties", ())
        if key == "golden"
    ]
    if not found:
        return
    line = f"golden: {found.count('bitwise')} of {len(found)} runs bitwise"
    for kind, label in (
        ("tolerance", "within tolerance"),
        ("exception", "within a stated wider tolerance"),
    ):
        runs = [v.split(maxsplit=2)[1:] for v in found if v.startswith(kind)]
        if runs:
            rel, where = max(runs, key=lambda v: float(v[0]))
            line += f", {len(runs)} {label} (largest relative difference {rel}, {where})"
    terminalreporter.write_line(line)
