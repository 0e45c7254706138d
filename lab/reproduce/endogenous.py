"""The shifts recourse causes, per generator (issue 37, item 4; Altmeyer et al., SaTML 2023).

Runs ``studies/endogenous-shift.toml``: the decision model is refitted every 10 ticks on
its first training data plus the revealed outcomes of everyone it accepted, so the
counterfactuals that led to acceptance enter what it learns from. Every generator is
paired with ``none`` (does it shift the data and the model at all?) and with Wachter's
generator behind the same last threshold (do ClaPROAR and Gravitational, which add a
penalty to Wachter's objective, shift them less, and at what price?). Means carry 95 %
intervals over worlds (:mod:`lab.study.stats`, worlds as the unit); each shift has its
permutation p-value. The family of the report is every paired difference, corrected
with Holm; bold marks the survivors, "level" a TOST within the figure's bound.

Writes ``table.csv`` (policy x figure: mean, lo, hi, and the paired differences),
``report.html`` and two charts: ``shift-vs-cost.png`` (domain shift against the cost of
advice) and ``paired.png`` (every generator's paired difference to Wachter's).

The ablation (issue 55) reruns the study in the three other :data:`SETTINGS`: the
paper's data entry (``retrain_data = advised``: every advised counterfactual joins the
data labelled positive), the paper's kernel (``shift_length_scale = 0.5``), and both;
each with the generators (:data:`ABLATION_POLICIES`), on the same worlds and seeds. It writes
``ablation.csv`` (setting x generator x figure, the paired difference to Wachter's, one
family corrected with Holm) and ``ablation.png``.
"""

from __future__ import annotations

import base64
import html
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.mechanisms import FIGURES
from abm.provenance import RESULTS_SCHEMA, now
from lab.study import Study, collect, load_runs_of
from lab.study.analysis import paired_rows, png_bytes, policy_cells
from lab.study.page import STYLE
from lab.study.stats import add_verdicts

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "endogenous-shift.toml"
# column key -> policy: every generator is paired with these on the same worlds and seeds
BASELINES = {"none": "none", "wachter": "threshold-wachter"}
SHOWN = (
    "rr",
    "rf",
    "advice_paid",
    "cost_recommended",
    "unreached_share",
    "domain_shift",
    "domain_shift_p",
    "model_shift",
    "model_shift_p",
    "disagreement",
    "param_shift",
    "valid_outstanding",
    "valid_after_refit",
    "own_goal_after_refit",
)
#: the report's family of contrasts is corrected with this (lab.study.stats.adjust)
CORRECTION = "holm"
LABELS = {f.name: f.label for f in FIGURES}
RBR = "last-threshold+rbr:num_samples=50,inner_iter=20"
NAMES = {
    "threshold": "exact-linear",
    "threshold-wachter": "Wachter",
    "none": "none (no advice)",
    RBR: "rbr (50 samples)",
}


#: the ablation's settings (issue 55): scenario keys set on top of the study's own
SETTINGS: dict[str, dict[str, Any]] = {
    "ours": {},
    "entry": {"retrain_data": "advised"},
    "kernel": {"shift_length_scale": 0.5},
    "both": {"retrain_data": "advised", "shift_length_scale": 0.5},
}
SETTING_LABELS = {
    "ours": "ours (accepted rows, true outcomes; median-heuristic kernel)",
    "entry": "the paper's data entry (advised counterfactuals, labelled positive)",
    "kernel": "the paper's kernel (Gaussian, length-scale 0.5)",
    "both": "both",
}
#: the generators, beside Wachter's and no advice (the robust family and the exact program
#: stay out)
ABLATION_POLICIES = (
    "none",
    "threshold-wachter",
    "threshold-claproar",
    "threshold-gravitational",
    "threshold-probe",
    "threshold-face",
    RBR,
)
#: the ablation's paired figures (the family) and its per-policy p-value figures
ABLATION_FIGURES = ("domain_shift", "model_shift", "disagreement", "rr", "rf", "cost_recommended")
ABLATION_P = ("domain_shift_p", "model_shift_p")


def name(policy: str) -> str:
    """A generator's short name: ``threshold-claproar`` -> ``claproar``."""
    return NAMES.get(policy, policy.removeprefix("threshold-"))


def study(quick: bool = False, setting: str = "ours") -> Study:
    """The study in one of :data:`SETTINGS` (the others are named
    ``endogenous-shift-<setting>`` and run :data:`ABLATION_POLICIES`); ``quick``: 2 worlds x
    2 episodes of 30 ticks (three refits), a check that every piece runs, not a result."""
    data = tomllib.loads(STUDY.read_text())
    if setting != "ours":
        data["name"] += f"-{setting}"
        data["description"] += f"; {SETTING_LABELS[setting]}"
        data["set"].update(SETTINGS[setting])
        data["sweep"]["policy"] = list(ABLATION_POLICIES)
    if quick:
        data.update(seeds=2, ticks=30, name=data["name"] + "-quick")
        data["sweep"]["world_seed"] = [0, 1]
    return Study.from_dict(data, source=str(STUDY))


def run(
    out: str | Path,
    *,
    quick: bool = False,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) the study under ``out``/store and write the report."""
    out = Path(out)
    s = study(quick)
    log(f"{s.name}: {s.n_runs} runs")
    _, runs = collect(s, out / "store" / s.name, workers=workers, progress=progress)
    return write_report(_tidy(runs, s), out, quick)


def run_ablation(
    out: str | Path,
    *,
    quick: bool = False,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) the study in the other :data:`SETTINGS` under ``out``/store (the
    study itself, ``ours``, must have run there), then write the ablation's report."""
    out = Path(out)
    for setting in list(SETTINGS)[1:]:
        s = study(quick, setting)
        log(f"{s.name}: {s.n_runs} runs")
        collect(s, out / "store" / s.name, workers=workers, progress=progress)
    return write_ablation(read_ablation(out, quick), out)


def read_runs(out: str | Path, quick: bool = False, setting: str = "ours") -> pd.DataFrame:
    """The runs of one setting as stored under ``out``/store (for a report only)."""
    s = study(quick, setting)
    _, runs = load_runs_of(s, Path(out) / "store" / s.name)
    return _tidy(runs, s)


def read_ablation(out: str | Path, quick: bool = False) -> dict[str, pd.DataFrame]:
    """setting -> its runs of :data:`ABLATION_POLICIES` (for a report only)."""
    runs = {s: read_runs(out, quick, s) for s in SETTINGS}
    return {s: r[r["policy"].isin(ABLATION_POLICIES)] for s, r in runs.items()}


def _tidy(runs: pd.DataFrame, s: Study) -> pd.DataFrame:
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(
            f"{s.name}: {len(failed)} run(s) failed; first: {failed['error'].iloc[0]}"
        )
    return runs


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, figure): mean, lo, hi, and ``vs_<key>`` (with ``_lo``, ``_hi``,
    p-values and ``_verdict``), the paired difference to each of :data:`BASELINES`."""
    rows = paired_rows(policy_cells(runs, SHOWN), SHOWN, BASELINES)
    return add_verdicts(pd.DataFrame(rows), list(BASELINES), method=CORRECTION)


def num(x: float) -> str:
    if x != x:
        return "–"
    return f"{x:.2e}" if x != 0 and abs(x) < 1e-3 else f"{x:.3f}"


#: verdicts that survive the report's correction (lab.study.stats.verdict)
SURVIVES = ("better", "worse", "higher", "lower", "level")


def ci(mean: float, lo: float, hi: float, verdict: str | None = None) -> str:
    """``mean [lo, hi]``; with a ``verdict`` (a paired difference): signed, in bold where
    the difference survives the correction, the verdict beside it."""
    if mean != mean:
        return "–"
    if verdict is None:
        return f"{num(mean)} [{num(lo)}, {num(hi)}]"
    text = f"{'+' if mean > 0 else ''}{num(mean)} [{num(lo)}, {num(hi)}]"
    verdict = verdict if isinstance(verdict, str) else ""
    return f"**{text}** {verdict}" if verdict in SURVIVES else f"{text} {verdict}".rstrip()


def markdown(board: pd.DataFrame) -> str:
    """The docs page's tables: the card per generator, then the paired differences."""
    policies = list(dict.fromkeys(board["policy"]))
    out = []
    head = "| figure | " + " | ".join(name(p) for p in policies) + " |"
    out += [head, "|---" * (len(policies) + 1) + "|"]
    for f in SHOWN:
        part = board[board["figure"] == f].set_index("policy")
        out.append(
            f"| {LABELS[f]} | "
            + " | ".join(ci(*part.loc[p, ["mean", "lo", "hi"]]) for p in policies)
            + " |"
        )
    for key, base in BASELINES.items():
        others = [p for p in policies if p != base]
        out += [
            "",
            f"Paired difference to {name(base)} (bold: survives Holm's correction over "
            "every difference of this page; level: TOST within ±0.02):",
            "",
        ]
        out += [
            "| figure | " + " | ".join(name(p) for p in others) + " |",
            "|---" * (len(others) + 1) + "|",
        ]
        for f in SHOWN:
            part = board[board["figure"] == f].set_index("policy")
            out.append(
                f"| {LABELS[f]} | "
                + " | ".join(
                    ci(
                        *part.loc[
                            p, [f"vs_{key}", f"vs_{key}_lo", f"vs_{key}_hi", f"vs_{key}_verdict"]
                        ]
                    )
                    for p in others
                )
                + " |"
            )
    return "\n".join(out)


def charts(board: pd.DataFrame) -> dict[str, bytes]:
    """``shift-vs-cost.png`` and ``paired.png`` (PNG bytes)."""
    from matplotlib.figure import Figure

    def at(f: str) -> pd.DataFrame:
        return board[board["figure"] == f].set_index("policy")

    out = {}
    policies = list(dict.fromkeys(board["policy"]))
    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2)
    for ax, y in zip(axes, ("domain_shift", "model_shift"), strict=True):
        cost, shift = at("cost_recommended"), at(y)
        for p in policies:
            if p == "none":
                ax.axhline(shift.loc[p, "mean"], color="0.6", ls=":", label="none (no advice)")
                continue
            x = cost.loc[p, "mean"]
            m, lo, hi = shift.loc[p, ["mean", "lo", "hi"]]
            xerr = [[x - cost.loc[p, "lo"]], [cost.loc[p, "hi"] - x]]
            ax.errorbar(
                x, m, yerr=[[m - lo], [hi - m]], xerr=xerr, fmt="o", capsize=3, label=name(p)
            )
        ax.set_xlabel(LABELS["cost_recommended"])
        ax.set_ylabel(f"{y} (MMD²)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=7)
    fig.suptitle("Shifts against the cost of advice (95 % intervals, worlds as a random effect)")
    fig.tight_layout(rect=(0, 0, 0.84, 1))
    out["shift-vs-cost.png"] = png_bytes(fig)

    others = [p for p in policies if p not in ("threshold-wachter", "none")]
    figs = ("domain_shift", "model_shift", "rr", "rf", "cost_recommended")
    fig = Figure(figsize=(3 * len(figs), 3.6))
    axes = fig.subplots(1, len(figs), sharey=True)
    for ax, f in zip(axes, figs, strict=True):
        part = at(f)
        ys = np.arange(len(others))
        m = part.loc[others, "vs_wachter"].to_numpy()
        lo = m - part.loc[others, "vs_wachter_lo"].to_numpy()
        hi = part.loc[others, "vs_wachter_hi"].to_numpy() - m
        ax.errorbar(m, ys, xerr=[lo, hi], fmt="o", capsize=3)
        ax.axvline(0, color="0.5", lw=0.8)
        ax.set_title(f, fontsize=9)
        ax.set_yticks(ys, [name(p) for p in others])
        ax.grid(alpha=0.3)
    fig.suptitle("Paired difference to Wachter's generator (same worlds and seeds)")
    fig.tight_layout()
    out["paired.png"] = png_bytes(fig)
    return out


def write_report(runs: pd.DataFrame, out: Path, quick: bool = False) -> dict[str, Any]:
    """table.csv, the two charts and report.html under ``out``; returns their paths."""
    board = table(runs)
    out.mkdir(parents=True, exist_ok=True)
    board.to_csv(out / "table.csv", index=False)
    pngs = charts(board)
    for fname, png in pngs.items():
        (out / fname).write_bytes(png)
    n_w, n_e = int(board["worlds"].iloc[0]), int(board["episodes"].iloc[0])
    body = html.escape(markdown(board)).replace("\n", "<br>")
    imgs = "".join(
        f"<img src='data:image/png;base64,{base64.b64encode(p).decode()}'>" for p in pngs.values()
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>endogenous shift</title>"
        f"<style>{STYLE}</style></head><body><h1>The shifts recourse causes"
        f"{' (quick check)' if quick else ''}</h1><p class='lead'>{n_w} worlds x {n_e} "
        f"episodes; results schema {RESULTS_SCHEMA}; written {now()}.</p>"
        f"<pre>{body}</pre><div class='figs'>{imgs}</div></body></html>"
    )
    (out / "report.html").write_text(page)
    return {"table": out / "table.csv", "report": out / "report.html", "board": board}


def ablation_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (setting, policy, figure) of ``runs`` (:func:`read_ablation`): mean,
    lo, hi over worlds and, for :data:`ABLATION_FIGURES`, ``vs_wachter`` (the paired
    difference to Wachter's generator on the same worlds and seeds, with its interval,
    p-values and verdict). The family is every setting's paired figures, corrected with
    Holm; :data:`ABLATION_P` (the permutation p-values) carry means only."""
    paired, own = [], []
    for setting, r in runs.items():
        head = {"setting": setting}
        cells = policy_cells(r, ABLATION_FIGURES + ABLATION_P)
        paired += paired_rows(cells, ABLATION_FIGURES, {"wachter": BASELINES["wachter"]}, head)
        own += paired_rows(cells, ABLATION_P, {}, head)
    judged = add_verdicts(pd.DataFrame(paired), ["wachter"], method=CORRECTION)
    return pd.concat([judged, pd.DataFrame(own)], ignore_index=True)


def ablation_markdown(board: pd.DataFrame) -> str:
    """The docs page's ablation tables: each generator's shifts against Wachter's per
    setting, then every policy's shifts and their p-value figures per setting."""
    policies = [p for p in ABLATION_POLICIES if p in set(board["policy"])]
    others = [p for p in policies if p != BASELINES["wachter"]]
    out = [
        "Paired difference to Wachter's generator, per setting (bold: survives Holm's "
        "correction over every difference of the ablation; level: TOST within the figure's "
        "bound):",
        "",
        "| setting | figure | " + " | ".join(name(p) for p in others) + " |",
        "|---|---" + "|---" * len(others) + "|",
    ]
    cols = ["vs_wachter", "vs_wachter_lo", "vs_wachter_hi", "vs_wachter_verdict"]
    for setting in SETTINGS:
        for f in ("domain_shift", "model_shift", "disagreement"):
            part = board[(board["setting"] == setting) & (board["figure"] == f)]
            part = part.set_index("policy")
            if part.empty:
                continue
            out.append(
                f"| {setting} | {f} | " + " | ".join(ci(*part.loc[p, cols]) for p in others) + " |"
            )
    out += [
        "",
        "Each policy's shifts per setting (mean [95 % interval] over worlds); `domain_shift_p` "
        "is the permutation p-value of the last refit's domain shift, `model_shift_p` the "
        "share of refits whose model shift has p < 0.05:",
        "",
        "| setting | figure | " + " | ".join(name(p) for p in policies) + " |",
        "|---|---" + "|---" * len(policies) + "|",
    ]
    for setting in SETTINGS:
        for f in ("domain_shift", "domain_shift_p", "model_shift", "model_shift_p"):
            part = board[(board["setting"] == setting) & (board["figure"] == f)]
            part = part.set_index("policy")
            if part.empty:
                continue
            out.append(
                f"| {setting} | {f} | "
                + " | ".join(ci(*part.loc[p, ["mean", "lo", "hi"]]) for p in policies)
                + " |"
            )
    return "\n".join(out)


def ablation_chart(board: pd.DataFrame) -> bytes:
    """``ablation.png``: each generator's domain and model shift minus Wachter's, one
    marker per setting (PNG bytes)."""
    from matplotlib.figure import Figure

    policies = [p for p in ABLATION_POLICIES if p in set(board["policy"])]
    others = [p for p in policies if p != BASELINES["wachter"]]
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    ys = np.arange(len(others))
    settings = [s for s in SETTINGS if s in set(board["setting"])]
    for ax, f in zip(axes, ("domain_shift", "model_shift"), strict=True):
        for j, setting in enumerate(settings):
            part = board[(board["setting"] == setting) & (board["figure"] == f)]
            part = part.set_index("policy").loc[others]
            m = part["vs_wachter"].to_numpy()
            err = [m - part["vs_wachter_lo"].to_numpy(), part["vs_wachter_hi"].to_numpy() - m]
            off = (j - (len(settings) - 1) / 2) * 0.18
            ax.errorbar(m, ys + off, xerr=err, fmt="o", ms=4, capsize=2, label=setting)
        ax.axvline(0, color="0.5", lw=0.8)
        ax.set_title(f"{f} minus Wachter's (MMD²)", fontsize=9)
        ax.set_yticks(ys, [name(p) for p in others])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, title="setting", title_fontsize=7)
    fig.suptitle("The ablation: which difference from the paper flips the finding (95 % intervals)")
    fig.tight_layout()
    return png_bytes(fig)


def write_ablation(runs: dict[str, pd.DataFrame], out: Path) -> dict[str, Any]:
    """``ablation.csv`` and ``ablation.png`` under ``out``; returns their paths."""
    board = ablation_table(runs)
    out.mkdir(parents=True, exist_ok=True)
    board.assign(results_schema=RESULTS_SCHEMA).to_csv(out / "ablation.csv", index=False)
    (out / "ablation.png").write_bytes(ablation_chart(board))
    return {"ablation": out / "ablation.csv", "ablation_board": board}
