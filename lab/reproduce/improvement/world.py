"""The population-world study of the improvement policies (studies/improvement.toml,
specs/improvement-bandits.md §5), judged as issue 48 asks: worlds are the unit.

The study runs W worlds (``world_seed``, a random effect) x E paired episodes (``seed``)
of every policy at each ``outcome_delay`` (common random numbers: arrivals and behaviour
draws are shared). Each figure is taken over the late window, ticks :data:`LATE_START`-99
of 100, per run: the mean of the defined tick values for :data:`LATE_METRICS`, the ratio of
the window's sums for the outcome card's figures (:data:`CARD_SUMS`, as the card defines
them over the whole episode). Then, per delay, policy and figure, the mean of the world
means with its Hall-corrected 95 % interval (:func:`lab.study.stats.world_interval`) and
the number of worlds, and the paired difference to each policy's references
(:data:`REFERENCES`: ``threshold`` for every policy, ``improve-proto`` for the learners)
on the same worlds and seeds, with its interval, t-test p-value and TOST p-value within
the figure's bound (:data:`BOUNDS`). Every contrast of the report, both delays, is one
family corrected by Holm (:func:`lab.study.stats.add_verdicts`): better / worse (by
:data:`DIRECTIONS`), level, or inconclusive.

``python -m lab.reproduce.improvement.world results/improvement-world`` writes
``late_window.csv`` (the figures) and ``paired.csv`` (the contrasts) next to the study's
runs, each with a ``results_schema`` column.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from lab.study import load_study
from lab.study.analysis import paired_rows, policy_cells
from lab.study.stats import BOUNDS as STAT_BOUNDS
from lab.study.stats import DIRECTIONS as STAT_DIRECTIONS
from lab.study.stats import add_verdicts

#: the late window starts at this tick (ticks 0-99)
LATE_START = 50
#: tick figures averaged over the window's defined ticks
LATE_METRICS = ("impl_improvement_rate", "gaming_rate", "tp_rate", "rr", "rf")
#: the outcome card's figures over the window: figure -> (numerator, denominator) tick sums
CARD_SUMS = {
    "true_gain": ("true_gain_sum", "n_implemented"),
    "qualified_rate": ("n_qualified_accepted", "n_accepted"),
    "noncausal_share": ("noncausal_change", "advised_change"),
}
FIGURES = (*LATE_METRICS, *CARD_SUMS)
THRESHOLD, PROTO = "threshold", "improve-proto:advice=segment"
LEARNERS = (
    "improve-linucb:advice=segment",
    "improve-bwo:advice=segment",
    "improve-linucb:advice=arm",
)
POLICIES = (THRESHOLD, PROTO, *LEARNERS)
#: key -> reference policy; every policy is paired with threshold, the learners with proto
REFERENCES = {"threshold": THRESHOLD, "proto": PROTO}
#: the policies paired with each reference (the others get no contrast to it)
PAIRED_WITH = {"threshold": (PROTO, *LEARNERS), "proto": LEARNERS}
#: equivalence bounds ±b for TOST: 0.02 for RR, RF and every share in [0, 1]
#: (lab.study.stats.BOUNDS); true_gain, a change in h*, has none (no "level" verdict)
BOUNDS: dict[str, float] = {
    **{f: STAT_BOUNDS[f] for f in ("rr", "rf", "qualified_rate", "noncausal_share")},
    "impl_improvement_rate": 0.02,
    "gaming_rate": 0.02,
    "tp_rate": 0.02,
}
#: figure -> higher is better (lab.study.stats.DIRECTIONS, and the §5 rates)
DIRECTIONS: dict[str, bool] = {
    **{f: STAT_DIRECTIONS[f] for f in ("rr", "rf", "true_gain", "qualified_rate")},
    "noncausal_share": False,
    "impl_improvement_rate": True,
    "gaming_rate": False,
    "tp_rate": True,
}
CORRECTION = "holm"
KEYS = ["outcome_delay", "policy", "world_seed", "seed"]


def run_means(out: str | Path, start: int = LATE_START) -> pd.DataFrame:
    """One row per run: each of :data:`FIGURES` over ticks >= ``start``, keyed by
    outcome_delay, policy, world_seed and seed. Raises if a run failed or is missing."""
    ticks, runs = load_study(out)
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        raise RuntimeError(f"{len(bad)} run(s) failed; first: {bad['error'].iloc[0]}")
    late = ticks[ticks["tick"] >= start]
    g = late.groupby(KEYS, sort=True)
    means = g[list(LATE_METRICS)].mean()
    sums = g[[c for pair in CARD_SUMS.values() for c in pair]].sum()
    for fig, (num, den) in CARD_SUMS.items():
        d = sums[den].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[fig] = np.where(d > 0, sums[num].to_numpy(float) / d, np.nan)
    m = means.reset_index()
    cells = m.groupby(["outcome_delay", "policy", "world_seed"]).size()
    if cells.nunique() != 1 or len(m) != len(runs):
        raise RuntimeError("the study is incomplete: every cell needs the same episodes")
    return m


def table(means: pd.DataFrame) -> pd.DataFrame:
    """:func:`lab.study.analysis.paired_rows` per delay, policy and figure, the contrasts
    not in :data:`PAIRED_WITH` blanked, then one Holm family (``add_verdicts``)."""
    rows = []
    for delay, part in means.groupby("outcome_delay", sort=True):
        cells = policy_cells(part, FIGURES)
        cells = {p: cells[p] for p in POLICIES if p in cells}
        rows += paired_rows(cells, FIGURES, REFERENCES, {"outcome_delay": delay}, BOUNDS)
    wide = pd.DataFrame(rows)
    for key, paired in PAIRED_WITH.items():
        off = ~wide["policy"].isin(paired)
        cols = [c for c in wide.columns if c.startswith(f"vs_{key}")]
        wide.loc[off, cols] = math.nan
    return add_verdicts(wide, list(REFERENCES), DIRECTIONS, method=CORRECTION)


def late_window(wide: pd.DataFrame) -> pd.DataFrame:
    """Per delay, policy and figure: the mean of world means, its 95 % interval, worlds and
    episodes per world."""
    cols = ["outcome_delay", "policy", "figure", "worlds", "episodes", "mean", "lo", "hi"]
    return wide[cols].assign(results_schema=RESULTS_SCHEMA)


def paired(wide: pd.DataFrame) -> pd.DataFrame:
    """One row per contrast (policy minus reference, same worlds and seeds): difference,
    95 % interval, worlds, p-value and TOST p-value (raw and Holm-adjusted over the whole
    report), the bound and the verdict."""
    parts = []
    for key, ref in REFERENCES.items():
        part = wide[wide["policy"].isin(PAIRED_WITH[key])]
        parts.append(
            pd.DataFrame(
                {
                    "outcome_delay": part["outcome_delay"],
                    "policy": part["policy"],
                    "reference": ref,
                    "figure": part["figure"],
                    "diff": part[f"vs_{key}"],
                    "lo": part[f"vs_{key}_lo"],
                    "hi": part[f"vs_{key}_hi"],
                    "worlds": part[f"vs_{key}_worlds"].astype(int),
                    "p": part[f"vs_{key}_p"],
                    "p_adj": part[f"vs_{key}_p_adj"],
                    "bound": part["bound"],
                    "tost_p": part[f"vs_{key}_tost_p"],
                    "tost_p_adj": part[f"vs_{key}_tost_p_adj"],
                    "verdict": part[f"vs_{key}_verdict"],
                }
            )
        )
    out = pd.concat(parts, ignore_index=True)
    return out.assign(correction=CORRECTION, results_schema=RESULTS_SCHEMA)


def write(out: str | Path, start: int = LATE_START) -> list[Path]:
    """Write ``late_window.csv`` and ``paired.csv`` into ``out``."""
    out = Path(out)
    wide = table(run_means(out, start))
    files = [out / "late_window.csv", out / "paired.csv"]
    late_window(wide).to_csv(files[0], index=False, float_format="%.4g")
    paired(wide).to_csv(files[1], index=False, float_format="%.4g")
    return files


if __name__ == "__main__":  # pragma: no cover - a helper for the study's report
    for path in write(sys.argv[1] if len(sys.argv) > 1 else "results/improvement-world"):
        print(path)
