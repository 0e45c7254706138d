"""The population-world study of the improvement policies (studies/improvement.toml,
specs/improvement-bandits.md §5): per-run means over a late window of ticks and paired
differences between policies (same seeds: arrivals and behaviour draws are shared).

``python -m lab.reproduce.improvement.world results/improvement-world`` writes
``late_window.csv`` and ``paired.csv`` next to the study's runs.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from lab.study import load_study

LATE_METRICS = ("impl_improvement_rate", "gaming_rate", "tp_rate", "rr", "rf")
LEARNERS = ("improve-linucb:advice=segment", "improve-bwo:advice=segment")
BASELINES = ("threshold", "improve-proto:advice=segment")


def _ci(values: pd.Series) -> tuple[float, float, int]:
    """Mean, 95 % t half-width and count of the finite values."""
    from scipy import stats

    v = values.dropna().to_numpy(dtype=float)
    if v.size < 2:
        return (float(v.mean()) if v.size else math.nan), math.nan, int(v.size)
    h = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return float(v.mean()), h, int(v.size)


def run_means(out: str | Path, start: int = 50) -> pd.DataFrame:
    """One row per run: the means of :data:`LATE_METRICS` over ticks >= ``start``
    (undefined ticks skipped), keyed by policy, outcome_delay and seed."""
    ticks, _ = load_study(out)
    late = ticks[ticks["tick"] >= start]
    keys = ["policy", "outcome_delay", "seed"]
    return late.groupby(keys, sort=False)[list(LATE_METRICS)].mean().reset_index()


def late_window(out: str | Path, start: int = 50) -> pd.DataFrame:
    """Per policy and delay: mean, 95 % CI half-width and runs of each late-window metric."""
    m = run_means(out, start)
    rows = []
    for (policy, delay), g in m.groupby(["policy", "outcome_delay"], sort=False):
        row: dict = {"policy": policy, "outcome_delay": delay}
        for col in LATE_METRICS:
            row[col], row[f"{col}_ci95"], row[f"{col}_n"] = _ci(g[col])
        rows.append(row)
    return pd.DataFrame(rows)


def paired(out: str | Path, start: int = 50) -> pd.DataFrame:
    """Paired differences learner - baseline (same seed) of impl_improvement_rate and
    gaming_rate over the late window: mean, 95 % CI half-width, seeds."""
    m = run_means(out, start).set_index(["policy", "outcome_delay", "seed"]).sort_index()
    rows = []
    for delay in sorted(m.index.get_level_values("outcome_delay").unique()):
        for learner in LEARNERS:
            for base in BASELINES:
                row: dict = {"learner": learner, "baseline": base, "outcome_delay": delay}
                for col in ("impl_improvement_rate", "gaming_rate"):
                    try:
                        a = m.loc[(learner, delay), col]
                        b = m.loc[(base, delay), col]
                    except KeyError:
                        continue
                    diff = (a - b).dropna()
                    row[f"{col}_diff"], row[f"{col}_ci95"], row["seeds"] = _ci(diff)
                rows.append(row)
    return pd.DataFrame(rows)


def write(out: str | Path, start: int = 50) -> list[Path]:
    """Write ``late_window.csv`` and ``paired.csv`` into ``out``."""
    out = Path(out)
    files = [out / "late_window.csv", out / "paired.csv"]
    late_window(out, start).to_csv(files[0], index=False, float_format="%.4f")
    paired(out, start).to_csv(files[1], index=False, float_format="%.4f")
    return files


if __name__ == "__main__":  # pragma: no cover - a helper for the study's report
    for path in write(sys.argv[1] if len(sys.argv) > 1 else "results/improvement-world"):
        print(path)
