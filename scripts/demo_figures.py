"""The figures the demonstrations quote, from a headless run of each demo's settings:

    python scripts/demo_figures.py [--check]

Prints, per demonstration, the phrases its explanation (dashboards/demos.py) and its row
in docs/teaching.md must contain, each written from the run (seed and settings of the
demo, as the page builds it). ``--check`` (run by tests/test_dashboard_words.py) fails
when a text lacks one of its phrases, or quotes a decimal figure or a percentage that no
phrase covers. A phrase states a figure rounded as the text quotes it; one whose
condition fails (say RR is not 0 where the text says "falls to 0") is written as
"NOT: ..." and so is missing from every text. Demo 7's scarf generator ships trained
(policies/fairness/states), so its run takes seconds like the others'.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from dashboards.demos import DEMOS, Demo
from dashboards.settings import DashboardModel, Settings

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "docs" / "teaching.md"
BANDIT = "improve-linucb:advice=segment"


def run(demo: str, ticks: int) -> DashboardModel:
    """The demo's model after ``ticks`` steps, built as the page builds it."""
    model = DashboardModel(Settings.from_demo(next(d for d in DEMOS if d.name == demo)))
    for _ in range(ticks):
        model.step()
    return model


def claim(ok: bool, phrase: str) -> str:
    """The phrase where the run bears it out, else a phrase no text contains."""
    return phrase if ok else f"NOT: {phrase}"


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def card(model: DashboardModel) -> dict[str, dict[str, float]]:
    """Outcome-card figure -> policy -> value (NaN where undefined)."""
    out: dict[str, dict[str, float]] = {}
    for policy, m in zip(model.settings.policies, model.models(), strict=True):
        for name, value in m.outcome_card().values.items():
            out.setdefault(name, {})[policy] = value
    return out


def recession() -> dict[str, list[str]]:
    """Demo 8, seed 0: the threshold, RR and the queue around the recession."""
    table = run("recession", 62).models()[0].tick_table()
    thr, rr = table["threshold"].to_numpy(), table["rr"].to_numpy()
    k, m = table["k"].to_numpy(), table["m"].to_numpy()
    succ, waiting = table["n_succ"].to_numpy(), table["n_waiting"].to_numpy()
    low = np.flatnonzero(k < k[0])
    a, b = int(low[0]), int(low[-1])
    steady = np.all(np.round(thr[29:39], 2) == round(thr[38], 2))
    both = [
        f"{k[a]} places",
        f"instead of {k[0]}",
        f"{m[a]} newcomers",
        claim(steady and thr[39] > thr[38], f"steady near {thr[38]:.2f} for ten ticks"),
        f"{thr[39]:.2f} at tick 39",
        claim(thr[40] > thr[39], f"jumps to {thr[40]:.2f} at tick 40"),
        claim(rr[40] == 0, f"all {succ[40]} of those advised at tick 39"),
        f"is {rr[40]:g} at tick 40",
        f"RR is {rr[41]:.1f} at tick 41, for the {succ[41]} who",
        claim(thr[55] > thr[50] > thr[39], f"{thr[50]:.2f} at tick 50, {thr[55]:.2f} at tick 55"),
        claim(waiting[52] > waiting[39], f"{waiting[39]} at tick 39, {waiting[52]} at tick 52"),
        claim(thr[60] < thr[59], f"RR {rr[60]:.1f} at tick 60"),
    ]
    return {
        "explanation": [*both, f"from tick {a} to tick {b}"],
        "teaching": [*both, f"ticks {a}–{b}"],
    }


def improvement() -> dict[str, list[str]]:
    """Demo 6, seed 0, after 40 ticks (and RR after 100): the outcome card's figures."""
    model = run("improvement-vs-gaming", 40)
    c = card(model)
    gain, proxies, qualify = c["true_gain"], c["noncausal_share"], c["qualified_rate"]
    rr40 = c["rr"]
    model = run("improvement-vs-gaming", 100)
    rr100 = card(model)["rr"]
    return {
        "explanation": [
            claim(
                gain["threshold"] == 0 < gain[BANDIT],
                "stays at 0 for threshold advice and is above 0 for the bandit",
            ),
            claim(proxies["threshold"] == 1, "proxies (dashed line at 1)"),
            claim(0.4 <= proxies[BANDIT] <= 0.6, "about half of the bandit's"),
            claim(
                qualify["threshold"] <= qualify["none"] < qualify[BANDIT],
                "is no higher with threshold advice than with no advice, higher with the bandit's",
            ),
        ],
        "teaching": [
            f"true gain {gain['threshold']:.3g} against {gain[BANDIT]:.2g}",
            f"proxies {pct(proxies['threshold'])} against {pct(proxies[BANDIT])}",
            f"acceptances that truly qualify {pct(qualify['threshold'])} with threshold, "
            f"{pct(qualify['none'])} with none, {pct(qualify[BANDIT])} with the bandit",
            f"RR {rr40['threshold']:.2f} for threshold against {rr40[BANDIT]:.2f} after 40 "
            f"ticks, {rr100['threshold']:.2f} against {rr100[BANDIT]:.2f} after 100",
        ],
    }


def fairness_aware() -> dict[str, list[str]]:
    """Demo 7, seed 0, after 60 ticks: budget left and RR."""
    model = run("fairness-aware-advice", 60)
    c = card(model)
    left = {
        p: float(m.tick_table()["budget_left"].iloc[-1])
        for p, m in zip(model.settings.policies, model.models(), strict=True)
    }
    budget = model.config.budget
    shift = model.config.group_shift[0]
    behind = [i for i, x in enumerate(shift) if x < 0]
    return {
        "explanation": [f"budget of {budget:g}"],
        "teaching": [
            f"budget of {budget:g}",
            f"group 0 starts {-min(shift):g} lower on x{behind[0]}–x{behind[-1]}",
            f"after 60 ticks {left['scarf']:.0f} of {budget:g} left with scarf, "
            f"{left['threshold']:.0f} with threshold",
            f"RR {c['rr']['scarf']:.2f} against {c['rr']['threshold']:.2f} over 60 ticks",
        ],
    }


FIGURES = {
    "recession": recession,
    "improvement-vs-gaming": improvement,
    "fairness-aware-advice": fairness_aware,
}


def teaching_row(demo: Demo) -> str:
    """The row of docs/teaching.md's lesson tables for ``demo`` (by its number)."""
    number = demo.title.split("·")[0].strip()
    rows = [r for r in TEACHING.read_text().splitlines() if f"**Demo {number} ·" in r]
    assert len(rows) == 1, (demo.name, len(rows))
    return rows[0]


# decimal figures and percentages a text quotes (integers are too common to tell apart)
QUOTED = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])|\d+ %")


def problems(name: str, phrases: dict[str, list[str]]) -> list[str]:
    """What the demo's explanation and teaching row lack, or quote uncovered."""
    demo = next(d for d in DEMOS if d.name == name)
    out = []
    for where, text in (("explanation", demo.explanation), ("teaching", teaching_row(demo))):
        wanted = phrases[where]
        out += [f"{name} {where}: no {p!r}" for p in wanted if p not in text]
        covered = "\n".join(p for p in wanted if p in text)
        for figure in QUOTED.findall(text):
            if figure not in covered:
                out.append(f"{name} {where}: {figure!r} is not a figure of the run")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    found = []
    for name, figures in FIGURES.items():
        phrases = figures()
        for where, wanted in phrases.items():
            print(f"{name} {where}:", *(f"  {p}" for p in wanted), sep="\n")
        found += problems(name, phrases)
    if args.check and found:
        print("\n".join(found))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
