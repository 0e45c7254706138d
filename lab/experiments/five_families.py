"""The five families in one set of worlds (issue 33, item 6).

Runs ``studies/five-families.toml`` (each family's strongest policies in the combined
world ``lending`` and every single-mechanism preset, 10 worlds x 5 paired episodes),
``studies/five-families-rl.toml`` (``rl`` and a hybrid, whose artefacts exist for world 0
of ``paper`` only) and ``studies/five-families-generators.toml`` (the generators family,
5 worlds x 2 paired episodes: issue 37, item 5), then writes the report: per preset a
leaderboard of the outcome card (mean [95 % interval], worlds as a random effect), the
paired difference of every policy to ``threshold``, to a constant margin with exact-linear
advice (the strongest simple baseline) and to ``none``, and three trade-off charts (RR
against RF; group gap against RR; true gain against cost). ``leaderboard.csv`` holds every
figure; ``report.html`` shows them.
"""

from __future__ import annotations

import base64
import html
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from abm.card import FIGURES
from abm.provenance import RESULTS_SCHEMA, now
from abm.scenarios import PRESETS
from lab.study import Study, collect, load_runs_of
from lab.study.analysis import paired_rows, png_bytes, policy_cells
from lab.study.page import STYLE

ROOT = Path(__file__).resolve().parents[2]
STUDIES = (ROOT / "studies" / "five-families.toml", ROOT / "studies" / "five-families-rl.toml",
           ROOT / "studies" / "five-families-generators.toml")  # fmt: skip
RBR = "last-threshold+rbr:num_samples=50,inner_iter=20"
# left out of the quick variant: the slowest policies (a check that every piece runs)
QUICK_DROP = ("robust-l1", "safear", "threshold-probe", "threshold-face", RBR)
MARGIN = "last-threshold:margin=0.05+exact-linear:weights=estimated"
# column key -> policy: every policy is paired with each of these on the same worlds and seeds
BASELINES = {"threshold": "threshold", "margin": MARGIN, "none": "none"}
SHORT = {MARGIN: "margin 0.05 (estimated d)", RBR: "rbr (50 samples)"}
# the figures of the leaderboard, in order; those of a mechanism that is off are left out
SHOWN = ("rr", "rf", "accept_rate", "cost_recommended", "cost_incurred", "cvar95_effort",
         "unadvised_share", "true_gain", "noncausal_share", "qualified_rate", "still_valid",
         "valid_after_refit", "dp_gap", "rr_gap", "rf_gap", "budget_spent")  # fmt: skip
LABELS = {f.name: f.label for f in FIGURES}
NEEDS = {f.name: f.needs for f in FIGURES}


def studies(quick: bool = False) -> list[Study]:
    """The three studies (the families, rl on world 0, the generators family); ``quick``:
    2 worlds x 2 episodes of 8 ticks, the combined world, paper and groups, without the
    slowest policies, for a check that every piece runs (not for conclusions)."""
    out = []
    for path in STUDIES:
        data = tomllib.loads(path.read_text())
        if quick:
            data.update(seeds=2, ticks=8)
            if "world_seed" in data.get("sweep", {}):
                data["sweep"]["world_seed"] = [0, 1]
            zipped = data.get("zip")
            if zipped:
                keep = [i for i, s in enumerate(zipped[0]["scenario"])
                        if s in ("lending", "paper", "groups")
                        and zipped[0]["policy"][i] not in QUICK_DROP]  # fmt: skip
                data["zip"] = [{k: [v[i] for i in keep] for k, v in zipped[0].items()}]
            data["name"] = data["name"] + "-quick"
        out.append(Study.from_dict(data, source=str(path)))
    return out


def run(out: str | Path, *, quick: bool = False, workers: int = 2,
        progress: Callable[[int, int], None] | None = None,
        log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Run (or resume) the three studies under ``out``/store and write the report."""
    out = Path(out)
    frames = []
    for study in studies(quick):
        log(f"{study.name}: {study.n_runs} runs")
        _, runs = collect(study, out / "store" / study.name, workers=workers, progress=progress)
        frames.append(_tidy(runs, study))
    runs = pd.concat(frames, ignore_index=True)
    return write_report(runs, out, quick)


def _tidy(runs: pd.DataFrame, study: Study) -> pd.DataFrame:
    runs = runs.copy()
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"{study.name}: {len(failed)} run(s) failed; first: "
                           f"{failed['error'].iloc[0]}")  # fmt: skip
    if "scenario" not in runs:
        runs["scenario"] = study.base.name
    if "world_seed" not in runs:
        runs["world_seed"] = study.base.world_seed
    runs["study"] = study.name
    return runs


def leaderboard(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (study, preset, policy, figure): mean, lo, hi over worlds and episodes,
    and the paired difference to each baseline run on the same worlds and seeds."""
    rows = []
    for (study, preset), part in runs.groupby(["study", "scenario"], sort=False):
        on = PRESETS[preset].mechanisms
        figures = tuple(f for f in SHOWN if not NEEDS[f] or NEEDS[f] in on)
        rows += paired_rows(policy_cells(part, figures), figures, BASELINES,
                            head={"study": study, "preset": preset})  # fmt: skip
    return pd.DataFrame(rows)


def _name(policy: str) -> str:
    return SHORT.get(policy, policy)


def _cell(mean: float, lo: float, hi: float) -> str:
    if mean != mean:
        return "n/a"
    if lo == hi:
        return f"{mean:.3g}"
    return f"{mean:.3g} [{lo:.3g}, {hi:.3g}]"


def _diff(row: pd.Series, key: str) -> str:
    m, lo, hi = row[f"vs_{key}"], row[f"vs_{key}_lo"], row[f"vs_{key}_hi"]
    if m != m:
        return ""
    text = f"{m:+.3g} [{lo:+.3g}, {hi:+.3g}]"
    if lo > 0 or hi < 0:
        return f"<b>{text}</b>"
    return text


def _chart(board: pd.DataFrame, preset: str, x: str, y: str) -> bytes | None:
    from matplotlib.figure import Figure

    part = board[(board["preset"] == preset) & (board["study"] == "five-families")]
    piv = {f: part[part["figure"] == f].set_index("policy") for f in (x, y)}
    if x not in set(part["figure"]) or y not in set(part["figure"]):
        return None
    fig = Figure(figsize=(5.2, 3.8))
    ax = fig.subplots()
    for policy in piv[x].index:
        a, b = piv[x].loc[policy], piv[y].loc[policy]
        if a["mean"] != a["mean"] or b["mean"] != b["mean"]:
            continue
        ax.errorbar(a["mean"], b["mean"], xerr=[[a["mean"] - a["lo"]], [a["hi"] - a["mean"]]],
                    yerr=[[b["mean"] - b["lo"]], [b["hi"] - b["mean"]]], fmt="o", ms=5,
                    capsize=2, lw=1, label=_name(policy))  # fmt: skip
    ax.set_xlabel(LABELS[x], fontsize=8)
    ax.set_ylabel(LABELS[y], fontsize=8)
    ax.set_title(f"{preset}: {y} against {x}", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return png_bytes(fig)


CHARTS = (("rf", "rr"), ("rr", "dp_gap"), ("cost_recommended", "true_gain"))


def write_report(runs: pd.DataFrame, out: Path, quick: bool = False) -> dict[str, Any]:
    """leaderboard.csv and report.html under ``out``; returns their paths."""
    board = leaderboard(runs)
    out.mkdir(parents=True, exist_ok=True)
    board.to_csv(out / "leaderboard.csv", index=False)
    parts = [f"<h1>Five families in one set of worlds{' (quick check)' if quick else ''}</h1>",
             "<p class='lead'>Every policy at its defaults; mean [95 % interval] over worlds and "
             "episodes, worlds resampled first (a random effect); paired differences to "
             "<code>threshold</code>, to a constant margin of 0.05 with exact-linear advice on "
             "learned difficulties (the strongest simple baseline) and to <code>none</code> on "
             "the same worlds and seeds, "
             f"in bold where the interval excludes 0. Results schema {RESULTS_SCHEMA}; written "
             f"{now()}.</p>"]  # fmt: skip
    for (study, preset), part in board.groupby(["study", "preset"], sort=False):
        worlds, episodes = int(part["worlds"].iloc[0]), int(part["episodes"].iloc[0])
        where = f"{worlds} worlds" if worlds > 1 else "one world (world_seed 0)"
        parts.append(f"<h2>{html.escape(preset)} ({where} x {episodes} episodes; "
                     f"{html.escape(study)})</h2><p>{html.escape(PRESETS[preset].description)}</p>")  # fmt: skip
        figs = list(dict.fromkeys(part["figure"]))
        policies = list(dict.fromkeys(part["policy"]))
        head = "".join(f"<th>{html.escape(_name(p))}</th>" for p in policies)
        body = []
        for f in figs:
            cells = part[part["figure"] == f].set_index("policy")
            row = "".join(
                f"<td>{_cell(*cells.loc[p, ['mean', 'lo', 'hi']])}</td>" for p in policies
            )
            body.append(f"<tr><td class='l'>{html.escape(LABELS[f])}</td>{row}</tr>")
        parts.append(f"<table><tr><th class='l'>figure</th>{head}</tr>{''.join(body)}</table>")
        for key, base in BASELINES.items():
            others = [p for p in policies if p != base]
            if base not in policies or not others:
                continue
            name = html.escape(_name(base))
            head = "".join(f"<th>{html.escape(_name(p))} − {key}</th>" for p in others)
            body = []
            for f in figs:
                cells = part[part["figure"] == f].set_index("policy")
                row = "".join(f"<td>{_diff(cells.loc[p], key)}</td>" for p in others)
                body.append(f"<tr><td class='l'>{html.escape(LABELS[f])}</td>{row}</tr>")
            parts.append(f"<h3>paired difference to {name}</h3><table><tr><th class='l'>"
                         f"figure</th>{head}</tr>{''.join(body)}</table>")  # fmt: skip
        imgs = [png for x, y in CHARTS if (png := _chart(board, preset, x, y)) is not None]
        parts.append("<div class='figs'>" + "".join(
            f"<img src='data:image/png;base64,{base64.b64encode(p).decode()}'>" for p in imgs)
            + "</div>")  # fmt: skip
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>five families</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")  # fmt: skip
    (out / "report.html").write_text(page)
    return {"leaderboard": out / "leaderboard.csv", "report": out / "report.html",
            "board": board}  # fmt: skip


def read_runs(out: str | Path, quick: bool = False) -> pd.DataFrame:
    """The runs of the three studies as stored under ``out``/store (for a report only)."""
    frames = []
    for study in studies(quick):
        _, runs = load_runs_of(study, Path(out) / "store" / study.name)
        frames.append(_tidy(runs, study))
    return pd.concat(frames, ignore_index=True)
