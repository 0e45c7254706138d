"""Is every built-in policy sensible at its defaults in every preset? (issues 33 and 48)

    python scripts/sensible.py [--out results/sensible] [--seeds 5] [--slow-seeds 2]
                               [--workers 2] [--presets P ...] [--policies P ...]

For every registered policy and every preset (the control ``none`` and the scale preset
``large`` exempt): either the policy refuses the world before the run, with one line
naming what is missing, or it runs paired episodes of the preset's own ticks. Every policy
of a preset runs the same ticks (issue 48): the slow ones (:data:`SLOW`) get fewer
episodes, ``--slow-seeds`` instead of ``--seeds``, never shorter runs. Each group of
policies runs on its seeds beside the controls ``threshold`` and ``none`` (:data:`CONTROLS`),
so every row is judged against them on the same seeds and ticks, and a table whose rows of
one preset ran different tick counts is refused (:func:`check_same_ticks`).

A pair is *sensible* when its RR is defined, the figure it is judged by is at least
:data:`FLOOR` and above what ``none`` (no advice) gets on the same seeds, and no advice falls
short of its own goal (outcome card: ``short_of_goal_share`` = 0). The figure is RF, except
in the presets of :data:`JUDGED_BY`, where RF says little about the policy: in the budget
worlds (``fair-scarf``, ``budget``, ``lending``) RF counts the rejected whom the budget left
without advice, so it can hardly exceed 1 − withheld whatever the policy, and a policy that
gives everyone a change too small to matter gets RF 1.000 at RR 0.027 (``scarf`` in
``fair-scarf``); in ``motivating-example`` (3 ticks, 4 applicants) every policy gets RF
1.000. There the figure is ``advice_paid``: acceptances of advised reapplicants per
advised rejection, advice that paid.

Writes ``sensible.csv`` (one row per pair, merged with the pairs of earlier calls for other
policies; ``results_schema`` in every row) and ``sensible.md`` (the table, its schema);
refusals name files by their path in the repository, never the machine's. The episodes stay
in ``store/`` (a rerun resumes).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from abm import RecourseModel
from abm.mechanisms import NAMES as CARD_FIGURES
from abm.provenance import RESULTS_SCHEMA
from abm.registry import REGISTRY
from abm.scenarios import PRESETS
from abm.validation import ConfigError
from lab.evaluation import evaluate_many

ROOT = Path(__file__).resolve().parents[1]
EXEMPT_POLICIES = ("none",)
EXEMPT_PRESETS = ("large",)
# run beside every group, on its seeds: what a simple policy and no advice get there
CONTROLS = ("threshold", "none")
# seconds a tick against threshold's milliseconds (docs/benchmarks.md): fewer seeds
SLOW = (
    "threshold-dice",
    "hybrid-dice",
    "threshold-rbr",
    "threshold-face",
    "threshold-claproar",
    "threshold-gravitational",
    "threshold-probe",
)
RF_MIN = 0.05
# the least each figure a pair is judged by must reach
FLOOR = {"rf": RF_MIN, "advice_paid": 0.05}
# presets where RF says little about the policy (module docstring); the others use "rf"
JUDGED_BY = {
    "fair-scarf": "advice_paid",
    "budget": "advice_paid",
    "lending": "advice_paid",
    "motivating-example": "advice_paid",
}
# a pair that is not sensible says so when the budget left most rejections without advice
WITHHELD_NOTE = 0.5


def figure_of(preset: str) -> str:
    """The card figure ``preset``'s pairs are judged by (:data:`JUDGED_BY`, else RF)."""
    return JUDGED_BY.get(preset, "rf")


def repo_paths(text: str) -> str:
    """``text`` with this checkout's absolute paths written from the repository root."""
    return text.replace(f"{ROOT}/", "").replace(str(ROOT), ".")


def refusal(preset: str, policy: str) -> str:
    """The one-line refusal of ``policy`` in ``preset`` ("" when it runs there)."""
    try:
        RecourseModel(preset, policy, agents=False, record_events=False, ticks=1)
    except (ConfigError, ValueError) as exc:
        return repo_paths(str(exc).splitlines()[0])
    return ""


def verdict(
    rr: float,
    value: float,
    short: float,
    withheld: float = math.nan,
    figure: str = "rf",
    none: float = math.nan,
) -> str:
    """The pair's problems in one line ("" when it is sensible). ``value`` is its
    ``figure``, ``none`` that of no advice on the same seeds and ticks (NaN: not measured)."""
    name = "RF" if figure == "rf" else figure
    problems = []
    if rr != rr:
        problems.append("RR undefined")
    if not value >= FLOOR[figure]:
        problems.append(f"{name} {value:.3g} < {FLOOR[figure]}")
    elif none == none and not value > none:
        problems.append(f"{name} {value:.3g} no better than none's {none:.3g}")
    if short > 0:
        problems.append(f"{short:.3g} of advice short of its goal")
    if problems and withheld >= WITHHELD_NOTE:
        problems.append(f"the budget withheld advice from {withheld:.0%} of rejections")
    return "; ".join(problems)


def budget_bound(rr: float, rf: float, short: float, withheld: float) -> bool:
    """True when RF < RF_MIN is the only problem and the world's budget explains it.

    The budget withheld advice from a share ``withheld`` >= WITHHELD_NOTE of the rejected,
    so RF can hardly exceed 1 − withheld whatever the policy; the pair is budget-bound when
    RF measured against the share advised, RF / (1 − withheld), is >= RF_MIN (it may pass
    1: reapplications put one candidate's success against fewer rejections in its window).
    Such a pair stays "not sensible" by the letter of item 3, in its own count. Only pairs
    judged by RF can be budget-bound: the budget worlds are judged by advice that paid.
    """
    if rr != rr or short > 0 or rf >= RF_MIN or not withheld >= WITHHELD_NOTE:
        return False
    return withheld < 1.0 and rf / (1.0 - withheld) >= RF_MIN


def check_same_ticks(table: pd.DataFrame) -> None:
    """Refuse (ValueError, one line) a table where pairs of one preset that ran did so for
    different tick counts: they would be compared as if they had run the same episodes."""
    ran = table[table.status == "ran"]
    for preset, rows in ran.groupby("preset", sort=True):
        counts = rows.groupby("ticks")["policy"].apply(list)
        if len(counts) > 1:
            runs = "; ".join(f"{int(t)} ticks: {', '.join(sorted(p))}" for t, p in counts.items())
            raise ValueError(
                f"{preset}: policies ran different tick counts ({runs}); every "
                "policy of a comparison runs the same ticks: run the others "
                "again (slow ones with fewer seeds)"
            )


def card_mean(card: dict, figure: str) -> float:
    """The card's mean of ``figure`` (NaN where the card does not have it)."""
    return float(card[figure]["mean"]) if figure in card else math.nan


def run_group(preset: str, group: list[str], seeds: int, args, tag: str) -> list[dict]:
    """One row per policy of ``group``, each run with the controls on the same seeds."""
    figure, ticks = figure_of(preset), PRESETS[preset].ticks
    policies = list(dict.fromkeys([*group, *CONTROLS]))
    print(f"{preset}: {len(group)} policies x {seeds} seeds of {ticks} ticks", flush=True)
    results = {
        r["policy"]: r
        for r in evaluate_many(
            preset,
            policies,
            seeds=seeds,
            workers=args.workers,
            baseline=None,
            store=args.out / "store" / f"{preset}{tag}",
        )
    }
    controls = {c: card_mean(results[c]["card"], figure) for c in CONTROLS}
    rows = []
    for policy in group:
        card = results[policy]["card"]
        rr, rf = card_mean(card, "rr"), card_mean(card, "rf")
        short = card_mean(card, "short_of_goal_share")
        short = 0.0 if short != short else short
        withheld, value = card_mean(card, "withheld_share"), card_mean(card, figure)
        rows.append(
            {
                "preset": preset,
                "policy": policy,
                "status": "ran",
                "ticks": ticks,
                "seeds": seeds,
                "rr": rr,
                "rf": rf,
                "short_of_goal": short,
                "cost": card_mean(card, "cost_recommended"),
                "withheld": withheld,
                "judged_by": figure,
                "value": value,
                "threshold_value": controls["threshold"],
                "none_value": controls["none"],
                "threshold_rr": card_mean(results["threshold"]["card"], "rr"),
                "problem": verdict(rr, value, short, withheld, figure, controls["none"]),
                "results_schema": RESULTS_SCHEMA,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/sensible"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--slow-seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--presets", nargs="*", default=None)
    parser.add_argument("--policies", nargs="*", default=None)
    args = parser.parse_args()
    presets = args.presets or [p for p in PRESETS if p not in EXEMPT_PRESETS]
    missing = {figure_of(p) for p in presets} - {"rf", *CARD_FIGURES}
    if missing:
        parser.error(f"the outcome card has no {', '.join(sorted(missing))} (see JUDGED_BY)")
    policies = args.policies or [p for p in REGISTRY.describe() if p not in EXEMPT_POLICIES]
    rows = []
    for preset in presets:
        runs = {p: refusal(preset, p) for p in policies}
        for slow in (False, True):
            group = [p for p, why in runs.items() if not why and (p in SLOW) == slow]
            if group:
                seeds = args.slow_seeds if slow else args.seeds
                rows += run_group(preset, group, seeds, args, "-slow" if slow else "")
        for p, why in runs.items():
            if why:
                rows.append(
                    {
                        "preset": preset,
                        "policy": p,
                        "status": "refused",
                        "ticks": 0,
                        "seeds": 0,
                        "problem": why,
                        "results_schema": RESULTS_SCHEMA,
                    }
                )
    table = pd.DataFrame(rows)
    old = args.out / "sensible.csv"
    if old.is_file():  # pairs checked by an earlier call (other policies) are kept
        kept = pd.read_csv(old, keep_default_na=False, na_values=[""])
        kept["problem"] = kept["problem"].fillna("")
        done = set(zip(table.policy, table.preset, strict=True))
        kept = kept[[(p, q) not in done for p, q in zip(kept.policy, kept.preset, strict=True)]]
        table = pd.concat([kept, table], ignore_index=True)
    table = table.sort_values(["policy", "preset"], kind="stable")
    try:
        check_same_ticks(table)
    except ValueError as exc:  # one line, nothing written; the episodes stay in store/
        raise SystemExit(f"sensible.py: nothing written: {exc}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "sensible.csv", index=False)
    (args.out / "sensible.md").write_text(markdown(table))
    bad = table[(table.status == "ran") & (table.problem != "")]
    print(
        f"{len(table)} pairs: {int((table.status == 'refused').sum())} refused, "
        f"{len(bad)} ran but not sensible, {int(bound(table).sum())} of them budget-bound"
    )
    for r in bad.itertuples():
        print(f"  {r.policy} in {r.preset}: {r.problem}")


def judged(r) -> str:
    """The figure row ``r`` was judged by (rows of older tables: RF)."""
    return r.judged_by if isinstance(getattr(r, "judged_by", None), str) else "rf"


def bound(table: pd.DataFrame) -> pd.Series:
    """(rows,) bool: the pairs judged by RF that ran and are budget-bound (:func:`budget_bound`)."""
    return pd.Series(
        [
            r.status == "ran"
            and judged(r) == "rf"
            and budget_bound(r.rr, r.rf, r.short_of_goal, r.withheld)
            for r in table.itertuples()
        ],
        index=table.index,
        dtype=bool,
    )


def _num(x: float) -> str:
    return "–" if x != x else f"{x:.3f}"


def schema_text(table: pd.DataFrame) -> str:
    """The results schemas of ``table``'s rows, in words (rows of older tables record none)."""
    column = table["results_schema"] if "results_schema" in table else pd.Series([math.nan])
    known = " and ".join(f"results schema {int(s)}" for s in sorted(set(column.dropna())))
    if column.isna().any():
        return f"rows of {known}, and older rows that record none" if known else "no schema"
    return known


def markdown(table: pd.DataFrame) -> str:
    ran = table[table.status == "ran"]
    bad = ran[ran.problem != ""]
    n_bound = int(bound(table).sum())
    judged_by = ", ".join(f"`{p}`" for p in JUDGED_BY)
    lines = [
        "# Every built-in policy at its defaults, in every preset",
        "",
        f"Written by `python scripts/sensible.py` ({schema_text(table)}). Every policy runs each preset's own ticks; the slow ones "
        f"({', '.join(f'`{p}`' for p in SLOW)}) run fewer paired seeds, as listed. Each group "
        f"runs beside the controls `threshold` and `none` on the same seeds. Sensible: RR "
        f"defined, the figure a pair is judged by at least {FLOOR['rf']} and above `none`'s, "
        "no advice short of its own goal. The figure is RF, except in "
        f"{judged_by}, where it is `advice_paid` (acceptances of advised reapplicants per "
        "advised rejection): there RF counts rejections the budget left without advice, or "
        "is 1.000 for every policy. `none` (the control) and `large` (the scale preset) are "
        "exempt.",
        "",
        f"{len(table)} pairs: {len(ran)} ran, {len(table) - len(ran)} refused with one line, "
        f"{len(bad)} ran but are not sensible, {n_bound} of them budget-bound.",
        "",
        "*Budget-bound* (pairs judged by RF): RF < 0.05 is the only problem, the world's "
        f"intervention budget withheld advice from at least {WITHHELD_NOTE:.0%} of the "
        "rejected (so RF can hardly exceed 1 − withheld, whatever the policy), and RF "
        f"measured against the share advised, RF / (1 − withheld), is >= {RF_MIN}. They are "
        "counted as not sensible.",
        "",
        "| policy | preset | ticks × seeds | RR | RF | judged by: policy / threshold / none "
        "| short of goal | cost | withheld | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        if r.status == "refused":
            lines.append(f"| {r.policy} | {r.preset} | | | | | | | | refused: {r.problem} |")
            continue
        ok = "sensible" if not r.problem else f"**not sensible**: {r.problem}"
        if judged(r) == "rf" and budget_bound(r.rr, r.rf, r.short_of_goal, r.withheld):
            ok = (
                f"**not sensible, budget-bound**: {r.problem}; RF / (1 − withheld) "
                f"= {r.rf / (1.0 - r.withheld):.2f}"
            )
        fig = judged(r)
        value = getattr(r, "value", math.nan)
        figures = (
            f"{'RF' if fig == 'rf' else fig} {_num(r.rf if value != value else value)}"
            f" / {_num(getattr(r, 'threshold_value', math.nan))}"
            f" / {_num(getattr(r, 'none_value', math.nan))}"
        )
        held = "" if r.withheld != r.withheld else f"{r.withheld:.3f}"
        lines.append(
            f"| {r.policy} | {r.preset} | {int(r.ticks)} × {int(r.seeds)} | "
            f"{r.rr:.3f} | {r.rf:.3f} | {figures} | "
            f"{r.short_of_goal:.3f} | {r.cost:.3f} | {held} | {ok} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
