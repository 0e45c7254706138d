"""Is every built-in policy sensible at its defaults in every preset? (issue 33, item 3)

    python scripts/sensible.py [--out results/sensible] [--seeds 5] [--workers 2]

For every registered policy and every preset (the control ``none`` and the scale preset
``large`` exempt): either the policy refuses the world before the run, with one line
naming what is missing, or it runs ``--seeds`` paired episodes of the preset's ticks and
is *sensible* when its RR is defined, its RF is at least 0.05 (the advice is carried out
at least sometimes) and no advice falls short of its own goal (outcome card:
``short_of_goal_share`` = 0). DiCE's policies (about 0.9 s a tick) and RBR's (about 1 s
a tick) run ``--slow-ticks`` ticks; each row records its ticks and seeds. Writes ``sensible.csv`` (one row per pair, merged with the pairs of earlier calls
for other policies) and ``sensible.md`` (the table); the episodes stay in ``store/`` (a
rerun resumes).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from abm import RecourseModel
from abm.registry import REGISTRY
from abm.scenarios import PRESETS
from abm.validation import ConfigError
from lab.evaluation import evaluate_many

EXEMPT_POLICIES = ("none",)
EXEMPT_PRESETS = ("large",)
SLOW = ("threshold-dice", "hybrid-dice", "threshold-rbr")
RF_MIN = 0.05
# a pair that is not sensible says so when the budget left most rejections without advice
WITHHELD_NOTE = 0.5


def refusal(preset: str, policy: str) -> str:
    """The one-line refusal of ``policy`` in ``preset`` ("" when it runs there)."""
    try:
        RecourseModel(preset, policy, agents=False, record_events=False, ticks=1)
    except (ConfigError, ValueError) as exc:
        return str(exc).splitlines()[0]
    return ""


def verdict(rr: float, rf: float, short: float, withheld: float = math.nan) -> str:
    problems = []
    if rr != rr:
        problems.append("RR undefined")
    if not rf >= RF_MIN:
        problems.append(f"RF {rf:.3g} < {RF_MIN}")
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
    Such a pair stays "not sensible" by the letter of item 3, in its own count.
    """
    if rr != rr or short > 0 or rf >= RF_MIN or not withheld >= WITHHELD_NOTE:
        return False
    return withheld < 1.0 and rf / (1.0 - withheld) >= RF_MIN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/sensible"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slow-ticks", type=int, default=30)
    parser.add_argument("--presets", nargs="*", default=None)
    parser.add_argument("--policies", nargs="*", default=None)
    args = parser.parse_args()
    presets = args.presets or [p for p in PRESETS if p not in EXEMPT_PRESETS]
    policies = args.policies or [p for p in REGISTRY.describe() if p not in EXEMPT_POLICIES]
    rows = []
    for preset in presets:
        runs = {p: refusal(preset, p) for p in policies}
        for slow in (False, True):
            group = [p for p, why in runs.items() if not why and (p in SLOW) == slow]
            if not group:
                continue
            extra = {"ticks": args.slow_ticks} if slow else {}
            print(f"{preset}: {len(group)} policies x {args.seeds} seeds", flush=True)
            results = evaluate_many(preset, group, seeds=args.seeds, workers=args.workers,
                                    store=args.out / "store" / f"{preset}{'-slow' if slow else ''}",
                                    baseline=None, **extra)  # fmt: skip
            for r in results:
                card = r["card"]
                rr, rf = card["rr"]["mean"], card["rf"]["mean"]
                short = card["short_of_goal_share"]["mean"]
                withheld = card["withheld_share"]["mean"]
                rows.append({"preset": preset, "policy": r["policy"], "status": "ran",
                             "ticks": extra.get("ticks", PRESETS[preset].ticks),
                             "seeds": args.seeds, "rr": rr, "rf": rf,
                             "short_of_goal": 0.0 if short != short else short,
                             "cost": card["cost_recommended"]["mean"], "withheld": withheld,
                             "problem": verdict(rr, rf, 0.0 if short != short else short,
                                                withheld)})  # fmt: skip
        for p, why in runs.items():
            if why:
                rows.append({"preset": preset, "policy": p, "status": "refused", "ticks": 0,
                             "seeds": 0, "rr": math.nan, "rf": math.nan,
                             "short_of_goal": math.nan, "cost": math.nan, "withheld": math.nan,
                             "problem": why})  # fmt: skip
    table = pd.DataFrame(rows)
    old = args.out / "sensible.csv"
    if old.is_file():  # pairs checked by an earlier call (other policies) are kept
        kept = pd.read_csv(old, keep_default_na=False, na_values=[""])
        kept["problem"] = kept["problem"].fillna("")
        done = set(zip(table.policy, table.preset, strict=True))
        kept = kept[[(p, q) not in done for p, q in zip(kept.policy, kept.preset, strict=True)]]
        table = pd.concat([kept, table], ignore_index=True)
    table = table.sort_values(["policy", "preset"], kind="stable")
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "sensible.csv", index=False)
    (args.out / "sensible.md").write_text(markdown(table, args))
    bad = table[(table.status == "ran") & (table.problem != "")]
    print(
        f"{len(table)} pairs: {int((table.status == 'refused').sum())} refused, "
        f"{len(bad)} ran but not sensible, {int(bound(table).sum())} of them budget-bound"
    )
    for r in bad.itertuples():
        print(f"  {r.policy} in {r.preset}: {r.problem}")


def bound(table: pd.DataFrame) -> pd.Series:
    """(rows,) bool: the pairs that ran and are budget-bound (:func:`budget_bound`)."""
    return pd.Series(
        [r.status == "ran" and budget_bound(r.rr, r.rf, r.short_of_goal, r.withheld)
         for r in table.itertuples()], index=table.index, dtype=bool)  # fmt: skip


def markdown(table: pd.DataFrame, args) -> str:
    ran = table[table.status == "ran"]
    bad = ran[ran.problem != ""]
    n_bound = int(bound(table).sum())
    lines = [
        "# Every built-in policy at its defaults, in every preset",
        "",
        "Written by `python scripts/sensible.py` (paired seeds and ticks per pair as listed: "
        "5 seeds of each preset's ticks unless the row says otherwise; DiCE's and RBR's "
        "policies run fewer ticks, RBR fewer seeds). Sensible: RR defined, "
        f"RF >= {RF_MIN}, no advice short of its own goal. `none` (the control) and `large` "
        "(the scale preset) are exempt.",
        "",
        f"{len(table)} pairs: {len(ran)} ran, {len(table) - len(ran)} refused with one line, "
        f"{len(bad)} ran but are not sensible, {n_bound} of them budget-bound.",
        "",
        "*Budget-bound*: RF < 0.05 is the only problem, the world's intervention budget "
        f"withheld advice from at least {WITHHELD_NOTE:.0%} of the rejected (so RF can hardly "
        "exceed 1 − withheld, whatever the policy), and RF measured against the share advised, "
        f"RF / (1 − withheld), is >= {RF_MIN}. Such advice costs more per row than "
        "the budget's share pays for; a policy that does not size its advice to the budget "
        "(as SCARF does) cannot do better there. They are counted as not sensible.",
        "",
        "| policy | preset | ticks × seeds | RR | RF | short of goal | cost | withheld | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        if r.status == "refused":
            lines.append(f"| {r.policy} | {r.preset} | | | | | | | refused: {r.problem} |")
        else:
            ok = "sensible" if not r.problem else f"**not sensible**: {r.problem}"
            if budget_bound(r.rr, r.rf, r.short_of_goal, r.withheld):
                ok = (f"**not sensible, budget-bound**: {r.problem}; RF / (1 − withheld) "
                      f"= {r.rf / (1.0 - r.withheld):.2f}")  # fmt: skip
            held = "" if r.withheld != r.withheld else f"{r.withheld:.3f}"
            lines.append(f"| {r.policy} | {r.preset} | {int(r.ticks)} × {int(r.seeds)} | "
                         f"{r.rr:.3f} | {r.rf:.3f} | "
                         f"{r.short_of_goal:.3f} | {r.cost:.3f} | {held} | {ok} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
