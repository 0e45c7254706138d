"""Headline figures of the five world-extension presets, each against its twin without the
mechanism (or against a simple alternative policy), on paired worlds and episodes.

    python scripts/extension_presets.py --workers 1                     # 20 worlds x 2
    python scripts/extension_presets.py --worlds 2 --episodes 1 --ticks 40  # a quick look

Worlds are the unit (issue 48, :mod:`lab.study.stats`): each preset runs W worlds
(``world_seed`` 0..W-1) x E episodes (``seed`` 0..E-1), and both arms of a comparison run
the same (world_seed, seed) pairs, so each world's population and decision model and each
episode's arrival, dropout and implementation draw is common to both (common random
numbers). Every figure of an arm is the mean of its world means with the Hall-corrected t
interval over worlds (:func:`~lab.study.stats.world_interval`); the paired difference B - A
has its interval (:func:`~lab.study.stats.paired_interval`), a two-sided t-test
(:func:`~lab.study.stats.difference_p`) and, where :data:`BOUNDS` states an equivalence
bound for the figure, TOST within ±bound (:func:`~lab.study.stats.tost_p`). The whole report
(every preset x figure contrast) is one family, corrected with Holm
(:func:`~lab.study.stats.judge`): verdicts "higher" / "lower" (B against A; no direction,
since arm B is not always the better choice) / "level" / "inconclusive".

Writes results/extensions/figures.csv (one row per preset, figure and arm A, B or B-A:
mean, interval, worlds, and for B-A the tests, adjusted p-values and verdict; each row with
its ``results_schema``), results/extensions/figures.md (the tables docs/mechanisms/ quotes)
and one PNG per preset (the mechanism's tick columns, means over worlds and episodes, both
arms). 20 worlds x 2 episodes x 100 ticks is 400 episodes, about 6 CPU-minutes.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from lab.study.stats import (
    ALPHA,
    MIN_WORLDS_FOR_VERDICT,
    difference_p,
    judge,
    paired_interval,
    tost_p,
    world_interval,
)

# preset -> (what the comparison shows, arm A, arm B, figures); an arm is
# (label, scenario overrides, policy)
COMPARISONS = {
    "improvement": (
        "threshold advice when the proxies 8, 9 are uninformative (r = 0: the model ignores "
        "them) vs informative (r = 0.9, the preset: the model rewards them)",
        ("r = 0", {"noncausal_strength": 0.0}, "threshold"),
        ("r = 0.9 (preset)", {}, "threshold"),
        [
            "proxy_share",
            "mean_true_gain",
            "improvement_rate",
            "impl_improvement_rate",
            "gaming_rate",
            "tp_rate",
            "mean_p_true_accepted",
            "rr",
            "rf",
        ],
    ),
    "retraining": (
        "advice exactly at the threshold vs a constant goal margin of 0.05 (same recommender)",
        ("threshold", {}, "threshold"),
        ("margin 0.05", {}, "last-threshold:margin=0.05+exact-linear"),
        ["valid_retrained", "valid_threshold_refit", "score_drop", "rr", "rf", "mean_cost"],
    ),
    "groups": (
        "threshold advice vs no advice, two groups with group 0 shifted down on features 0-4",
        ("no advice", {}, "none"),
        ("threshold", {}, "threshold"),
        ["dp_gap", "w_dist", "accept_rate_g0", "accept_rate_g1", "rr", "rf"],
    ),
    "causal": (
        "threshold advice with the chain 7 -> 4 -> 1 vs the same world without the graph",
        ("no graph", {"causal_graph": ()}, "threshold"),
        ("chain 7 -> 4 -> 1 (preset)", {}, "threshold"),
        ["propagated", "rr", "rf", "mean_cost", "effort"],
    ),
    "budget": (
        "threshold advice under a per-tick L1 budget of 1.0 vs unlimited advice",
        ("unlimited", {"budget": None}, "threshold"),
        ("budget 1.0 per tick (preset)", {}, "threshold"),
        ["n_withheld", "budget_spent", "rr", "rf", "mean_cost"],
    ),
}

#: figure -> equivalence bound ±b of the paired difference B - A for "level" (TOST), a small
#: difference that matters on the figure's scale; None: no bound, the contrast can only be
#: "higher", "lower" or "inconclusive"
BOUNDS: dict[str, float | None] = {
    # rates and shares in [0, 1]: two points, as issue 48 sets for RR and RF
    **dict.fromkeys(
        """rr rf proxy_share improvement_rate impl_improvement_rate gaming_rate tp_rate
        mean_p_true_accepted valid_retrained valid_threshold_refit dp_gap accept_rate_g0
        accept_rate_g1""".split(),
        0.02,
    ),
    # change of h* (a probability) per followed piece of advice, ≈ 0.11 in the twin
    "mean_true_gain": 0.01,
    # score change of outstanding advice at a refit, ≈ −0.04: an eighth of it
    "score_drop": 0.005,
    # L1 cost of advice, ≈ 0.1–0.3
    "mean_cost": 0.01,
    # W1 between the groups' features in the pool, ≈ 0.5
    "w_dist": 0.02,
    # L1 change propagated per implemented piece of advice, ≈ 0.1 with the graph
    "propagated": 0.01,
    # effort spent in the episode (sum |dx| d), ≈ 29
    "effort": 1.0,
    # candidates per tick rejected without advice, ≈ 25 under the budget
    "n_withheld": 1.0,
    # L1 spent per tick: undefined without a budget, no contrast
    "budget_spent": None,
}
CORRECTION = "holm"
SURVIVES = ("higher", "lower", "level")
ARMS = ("A", "B", "B-A")


def run_one(
    task: tuple[str, str, dict, str, int, int, int],
) -> tuple[str, str, int, int, dict, pd.DataFrame]:
    """One episode; returns its episode figures and its tick table."""
    from abm import RecourseModel

    preset, label, overrides, policy, world, seed, ticks = task
    model = RecourseModel(
        preset, policy, seed=seed, agents=False, ticks=ticks, world_seed=world, **overrides
    )
    model.run()
    tt = model.tick_table()
    summary = model.summary()
    row = {k: v for k, v in summary.items() if isinstance(v, int | float)}
    for col in (
        "valid_retrained",
        "valid_threshold_refit",
        "score_drop",
        "gaming_rate",
        "impl_improvement_rate",
        "accept_rate_g0",
        "accept_rate_g1",
        "mean_true_gain",
    ):
        if col in tt.columns:
            row[col] = float(tt[col].mean(skipna=True))
    row["n_withheld"] = float(tt["n_withheld"].mean())
    if "budget_spent" in tt.columns:
        row["budget_spent"] = float(tt["budget_spent"].mean())
    ct = model.candidate_table()
    dx = ct.filter(like="dx_").abs().astype(np.float64)
    proxies = [f"dx_{i}" for i in model.config.noncausal_features]
    total = dx.to_numpy().sum()
    # share of the advised change (L1) that falls on non-causal features (NaN: no advice)
    row["proxy_share"] = float(dx[proxies].to_numpy().sum() / total) if total > 0 else math.nan
    dprop = ct.filter(like="dprop_").abs().to_numpy(dtype=np.float64)
    # mean |propagated change| (L1) per implemented piece of advice
    n_impl = int(ct["implemented"].sum())
    row["propagated"] = float(dprop.sum() / n_impl) if n_impl else 0.0
    return preset, label, world, seed, row, tt


def values(
    episodes: dict[tuple[int, int], dict], figure: str, worlds: int, n_episodes: int
) -> np.ndarray:
    """(worlds, episodes) of one arm's ``figure``, NaN where undefined or not run."""
    out = np.full((worlds, n_episodes), np.nan)
    for (w, s), row in episodes.items():
        out[w, s] = row.get(figure, math.nan)
    return out


def table(
    results: dict[tuple[str, str], dict[tuple[int, int], dict]],
    worlds: int,
    n_episodes: int,
    ticks: int,
    comparisons: dict = COMPARISONS,
) -> pd.DataFrame:
    """One row per preset, figure and arm (A, B, B-A): mean, lo, hi over worlds and the
    worlds they rest on; B-A rows also carry the tests, the Holm-adjusted p-values over the
    whole report and the verdict. ``results``: (preset, arm label) -> (world, seed) -> the
    episode's figures."""
    rows = []
    for preset, (_, arm_a, arm_b, figures) in comparisons.items():
        a, b = results[preset, arm_a[0]], results[preset, arm_b[0]]
        for figure in figures:
            va = values(a, figure, worlds, n_episodes)
            vb = values(b, figure, worlds, n_episodes)
            bound = BOUNDS.get(figure)
            cells = {
                "A": (arm_a[0], world_interval(va)),
                "B": (arm_b[0], world_interval(vb)),
                "B-A": (f"{arm_b[0]} - {arm_a[0]}", paired_interval(vb, va)),
            }
            for arm, (label, iv) in cells.items():
                row = {
                    "preset": preset,
                    "figure": figure,
                    "arm": arm,
                    "label": label,
                    "mean": iv.mean,
                    "lo": iv.lo,
                    "hi": iv.hi,
                    "worlds": iv.n_worlds,
                    "episodes": n_episodes,
                    "ticks": ticks,
                    "bound": math.nan,
                    "p": math.nan,
                    "tost_p": math.nan,
                }
                if arm == "B-A":
                    row["bound"] = math.nan if bound is None else bound
                    row["p"] = difference_p(vb, va) if iv.n_worlds >= 2 else math.nan
                    row["tost_p"] = tost_p(vb, va, bound) if iv.n_worlds >= 2 else math.nan
                rows.append(row)
    board = pd.DataFrame(rows)
    diff = board["arm"] == "B-A"
    d = board[diff]
    p_adj, tost_adj, said = judge(
        d["mean"], d["p"], d["tost_p"], d["worlds"], None, CORRECTION, ALPHA, d["lo"], d["hi"]
    )
    board["p_adj"] = math.nan
    board["tost_p_adj"] = math.nan
    board["verdict"] = ""
    board.loc[diff, "p_adj"] = p_adj
    board.loc[diff, "tost_p_adj"] = tost_adj
    board.loc[diff, "verdict"] = said
    # a difference that is not defined (an arm without the figure) has no verdict
    board.loc[diff & board["mean"].isna(), "verdict"] = "not tested"
    board["correction"] = CORRECTION
    board["results_schema"] = RESULTS_SCHEMA
    return board


def _num(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def _interval(row: pd.Series) -> str:
    if row["mean"] != row["mean"]:
        return "n/a"
    if row["lo"] != row["lo"]:
        return _num(row["mean"])
    return f"{_num(row['mean'])} [{_num(row['lo'])}, {_num(row['hi'])}]"


def _difference(row: pd.Series) -> str:
    if row["mean"] != row["mean"]:
        return "n/a"
    text = ("+" if row["mean"] >= 0 else "") + _interval(row)
    return f"**{text}**" if row["verdict"] in SURVIVES else text


def _p(x: float) -> str:
    if x != x:
        return "–"
    return "< 0.001" if x < 0.001 else f"{x:.3f}"


def family(board: pd.DataFrame) -> tuple[int, int]:
    """(difference tests, TOST tests) in the report's Holm family."""
    d = board[(board["arm"] == "B-A") & (board["worlds"] >= MIN_WORLDS_FOR_VERDICT)]
    return int(d["p"].notna().sum()), int(d["tost_p"].notna().sum())


def markdown(board: pd.DataFrame, command: str, comparisons: dict = COMPARISONS) -> str:
    """figures.md: per preset, each figure's arms and paired difference with intervals,
    worlds, bound, adjusted p-values and verdict."""
    worlds, episodes = int(board["worlds"].max()), int(board["episodes"].max())
    ticks = int(board["ticks"].max())
    n_diff, n_tost = family(board)
    md = [
        f"Written by `{command}` (results schema {RESULTS_SCHEMA}).",
        "",
        f"Worlds are the unit: {worlds} worlds (`world_seed` 0–{worlds - 1}) × {episodes} "
        f"paired episodes (`seed` 0–{episodes - 1}), {ticks} ticks; both arms run the same "
        "(world, episode) pairs. Each cell is the mean of the world means [95 % interval, "
        "Hall-corrected t over worlds]; the column *worlds* gives the worlds each interval "
        "rests on (A / B / B − A when they differ). B − A is the paired difference with a "
        "two-sided t-test on the world means and, where a bound ±b is stated, TOST for "
        "equivalence within ±b.",
        "",
        f"One family: every preset × figure contrast of this report, corrected together "
        f"with {CORRECTION.capitalize()} ({n_diff} difference tests; {n_tost} TOST tests, "
        f"corrected as their own family of {n_tost}). Verdicts: *higher* / *lower* (B "
        f"against A) when the adjusted p ≤ {ALPHA} and the interval excludes 0, *level* when "
        f"the adjusted TOST p ≤ {ALPHA}, else *inconclusive*; no verdict below "
        f"{MIN_WORLDS_FOR_VERDICT} worlds. Only the survivors are bold.",
        "",
    ]
    for preset, (story, arm_a, arm_b, figures) in comparisons.items():
        md += [
            f"### `{preset}`: {story}",
            "",
            f"| figure | A: {arm_a[0]} | B: {arm_b[0]} | B − A (paired) | worlds | bound ± "
            "| p (Holm) | TOST p (Holm) | verdict |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        part = board[board["preset"] == preset].set_index(["figure", "arm"])
        for figure in figures:
            a, b, d = (part.loc[(figure, arm)] for arm in ARMS)
            n = [int(x["worlds"]) for x in (a, b, d)]
            shown = str(n[0]) if len(set(n)) == 1 else " / ".join(map(str, n))
            bound = "–" if d["bound"] != d["bound"] else f"{d['bound']:g}"
            verdict = d["verdict"]
            verdict = f"**{verdict}**" if verdict in SURVIVES else verdict
            md.append(
                f"| {figure} | {_interval(a)} | {_interval(b)} | {_difference(d)} | {shown} "
                f"| {bound} | {_p(d['p_adj'])} | {_p(d['tost_p_adj'])} | {verdict} |"
            )
        md.append("")
    return "\n".join(md)


def _plot(preset: str, ticks: dict[str, list[pd.DataFrame]], out: Path) -> None:
    from matplotlib.figure import Figure

    from lab.plots import _panels

    first = next(iter(ticks.values()))[0]
    panels = _panels(first)
    extra = [("RR / RF", [("rr", "RR"), ("rf", "RF")], "rate")]
    panels = panels + extra
    fig = Figure(figsize=(8, 2.5 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    styles = ["-", "--"]
    means = {
        label: pd.concat(tables).groupby("tick").mean(numeric_only=True)
        for label, tables in ticks.items()
    }
    for ax, (name, lines, ylabel) in zip(axes, panels, strict=True):
        for style, (label, mean) in zip(styles, means.items(), strict=False):
            for i, (col, text) in enumerate(lines):
                if col in mean.columns and mean[col].notna().any():
                    roll = mean[col].rolling(5, min_periods=1).mean()
                    ax.plot(mean.index, roll, style, color=f"C{i}", label=f"{text} · {label}")
        ax.set_title(name, fontsize=10, loc="left")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="best")
    axes[-1].set_xlabel("tick (5-tick rolling means of the mean over worlds and episodes)")
    fig.suptitle(f"preset {preset}: solid = {list(ticks)[0]}, dashed = {list(ticks)[1]}")
    fig.savefig(out / f"{preset}.png", dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=20, help="world_seed 0..W-1")
    parser.add_argument("--episodes", type=int, default=2, help="paired seeds per world")
    parser.add_argument("--ticks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", default="results/extensions")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [
        (preset, label, overrides, policy, world, seed, args.ticks)
        for world in range(args.worlds)
        for seed in range(args.episodes)
        for preset, (_, *arms, _) in COMPARISONS.items()
        for label, overrides, policy in arms
    ]
    results: dict[tuple[str, str], dict[tuple[int, int], dict]] = {}
    ticks: dict[str, dict[str, list[pd.DataFrame]]] = {}
    for preset, (_, arm_a, arm_b, _) in COMPARISONS.items():
        for label in (arm_a[0], arm_b[0]):  # A first: solid in the plots
            ticks.setdefault(preset, {})[label] = []
    start, cpu = time.monotonic(), time.process_time()
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    done = pool.map(run_one, tasks) if pool else map(run_one, tasks)
    try:
        for n, (preset, label, world, seed, row, tt) in enumerate(done, 1):
            results.setdefault((preset, label), {})[world, seed] = row
            ticks[preset][label].append(tt)
            if n % 10 == 0 or n == len(tasks):
                spent = time.monotonic() - start
                left = spent / n * (len(tasks) - n)
                print(
                    f"{n}/{len(tasks)} episodes (world {world + 1}/{args.worlds}), "
                    f"{spent / 60:.1f} min, ≈ {left / 60:.1f} min left",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if pool:
            pool.shutdown()
    wall = time.monotonic() - start
    # the workers' CPU time is not this process's: report it for one worker only
    cpu_note = f", {(time.process_time() - cpu) / 60:.1f} CPU min" if pool is None else ""
    board = table(results, args.worlds, args.episodes, args.ticks)
    command = (
        f"python scripts/extension_presets.py --worlds {args.worlds} "
        f"--episodes {args.episodes} --ticks {args.ticks}"
    )
    md = markdown(board, command)
    for preset in COMPARISONS:
        _plot(preset, ticks[preset], out)
    board.to_csv(out / "figures.csv", index=False)
    (out / "figures.md").write_text(md + "\n")
    print(md)
    print(f"{len(tasks)} episodes in {wall / 60:.1f} min{cpu_note}")
    print(f"written to {args.out}/ (figures.csv, figures.md, one PNG per preset)")


if __name__ == "__main__":
    main()
