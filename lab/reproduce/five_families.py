"""The five families in one set of worlds (issue 33, item 6; judged as issue 48 asks).

Runs ``studies/five-families.toml`` (each family's strongest policies in the combined
world ``lending`` and every single-mechanism preset, 20 worlds x 2 paired episodes),
``studies/five-families-fronts-*.toml`` (the constant-margin fronts: 12 margins with
exact-linear advice on estimated, uniform and true difficulties, on the same worlds and
seeds; one study each), ``studies/five-families-rl.toml`` (``rl`` and a hybrid, whose artefacts exist for
world 0 of ``paper`` only, one training seed) and ``studies/five-families-generators.toml``
(the generators family), then writes the report:

* per preset a leaderboard of the outcome card: mean [95 % interval] over worlds (the
  interval of :mod:`lab.study.stats`, worlds as the unit) with the number of worlds;
* the paired difference of every policy to ``threshold``, to the margin 0.05 with
  exact-linear advice on learned difficulties and to ``none`` on the same worlds and
  seeds, each with a verdict (better / worse, level by TOST within the figure's bound,
  or inconclusive); the family is every such contrast of the report, corrected with BH
  (the leaderboard is a screen of many figures); bold marks the survivors only;
* the headline: RF at equal RR and RR at equal RF against each constant-margin front
  (:mod:`lab.study.front`), world by world; the family is every front contrast of the
  report, corrected with Holm; "beats", "trails", "matches" (TOST within ±0.02) or
  "inconclusive";
* three trade-off charts (RR against RF with the fronts; group gap against RR; h* of the
  accepted against cost).

``leaderboard.csv`` holds every figure and contrast, ``fronts.csv`` the distances to the
fronts; ``report.html`` shows them. Fewer than 10 worlds give intervals but no verdicts.
"""

from __future__ import annotations

import base64
import html
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from abm.mechanisms import FIGURES
from abm.provenance import RESULTS_SCHEMA, now
from abm.scenarios import PRESETS
from lab.study import Study, collect, load_runs_of
from lab.study.analysis import figures_on, paired_rows, png_bytes, policy_cells
from lab.study.front import add_front_verdicts, episode_arrays, front_rows, margin_grids
from lab.study.page import STYLE
from lab.study.stats import BOUNDS, MIN_WORLDS_FOR_VERDICT, add_verdicts

ROOT = Path(__file__).resolve().parents[2]
STUDIES = tuple(
    ROOT / "studies" / f"{name}.toml"
    for name in (
        "five-families",
        "five-families-fronts-estimated",
        "five-families-rl",
        "five-families-fronts-uniform",
        "five-families-fronts-true",
        "five-families-generators",
    )
)
# the fronts are three studies (one per cost model), today's baseline's first
MAIN, FRONTS = "five-families", "five-families-fronts"
GENERATORS = "five-families-generators"
RBR = "last-threshold+rbr:num_samples=50,inner_iter=20"
# left out of the quick variant: the slowest policies (a check that every piece runs)
QUICK_DROP = ("robust-l1", "safear", "threshold-probe", "threshold-face", RBR)
QUICK_PRESETS = ("lending", "paper", "groups")
MARGIN = "last-threshold:margin=0.05+exact-linear:weights=estimated"
# column key -> policy: every policy is paired with each of these on the same worlds and seeds
BASELINES = {"threshold": "threshold", "margin": MARGIN, "none": "none"}
SHORT = {MARGIN: "margin 0.05 (estimated d)", RBR: "rbr (50 samples)"}
# the constant-margin fronts every policy is judged against (φ exists for paper only)
FRONTS_OF = {k: v for k, v in margin_grids().items() if k != "margin-phi"}
FRONT_NAMES = {
    "margin-exact-linear": "uniform d",
    "margin-estimated": "estimated d",
    "margin-true": "true d",
}
# the multiplicity corrections the report declares
CORRECTION = {"leaderboard": "bh", "fronts": "holm"}
# the figures of the leaderboard, in order; those of a mechanism that is off are left out
SHOWN = (
    "rr",
    "rf",
    "accept_rate",
    "median_time_to_accept",
    "never_accepted_share",
    "accepted_new_share",
    "accepted_advised_share",
    "advice_paid",
    "paid_per_effort",
    "valid_at_reapply",
    "valid_vs_issued",
    "cost_recommended",
    "cost_incurred",
    "cvar95_effort",
    "unadvised_share",
    "h_accepted",
    "h_applicants",
    "true_gain",
    "noncausal_share",
    "qualified_rate",
    "valid_outstanding",
    "valid_after_refit",
    "own_goal_after_refit",
    "accept_gap",
    "rr_gap",
    "rf_gap",
    "dp_gap",
    "budget_spent",
    "paid_per_budget",
)
LABELS = {f.name: f.label for f in FIGURES}


def studies(quick: bool = False) -> list[Study]:
    """The four studies (the families, their margin fronts, rl on world 0, the generators
    family); ``quick``: 2 worlds x 2 episodes of 8 ticks, the combined world, paper and
    groups, without the slowest policies and with 4 margins a front, for a check that
    every piece runs (not for conclusions)."""
    out = []
    for path in STUDIES:
        data = tomllib.loads(path.read_text())
        if quick:
            data.update(seeds=2, ticks=8)
            sweep = data.get("sweep", {})
            if "world_seed" in sweep:
                sweep["world_seed"] = [0, 1]
            if "scenario" in sweep:  # the fronts: a product of presets and margins
                sweep["scenario"] = [s for s in sweep["scenario"] if s in QUICK_PRESETS]
                sweep["policy"] = [p for p in sweep["policy"] if _quick_margin(p)]
            zipped = data.get("zip")
            if zipped:
                keep = [
                    i
                    for i, s in enumerate(zipped[0]["scenario"])
                    if s in QUICK_PRESETS and zipped[0]["policy"][i] not in QUICK_DROP
                ]
                data["zip"] = [{k: [v[i] for i in keep] for k, v in zipped[0].items()}]
            data["name"] = data["name"] + "-quick"
        out.append(Study.from_dict(data, source=str(path)))
    return out


def _quick_margin(policy: str) -> bool:
    return any(f"margin={m}+" in policy for m in ("0", "0.05", "0.15", "0.3"))


def run(
    out: str | Path,
    *,
    quick: bool = False,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) the studies under ``out``/store and write the report."""
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
        raise RuntimeError(
            f"{study.name}: {len(failed)} run(s) failed; first: {failed['error'].iloc[0]}"
        )
    if "scenario" not in runs:
        runs["scenario"] = study.base.name
    if "world_seed" not in runs:
        runs["world_seed"] = study.base.world_seed
    runs["study"] = study.name.removesuffix("-quick")
    return runs


def leaderboard(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (study, preset, policy, figure): mean, lo, hi and the number of worlds,
    and the paired difference to each baseline run on the same worlds and seeds with its
    p-values and verdict; the family of every contrast is corrected with BH."""
    rows = []
    for (study, preset), part in runs[~_is_front(runs)].groupby(["study", "scenario"], sort=False):
        figures = figures_on(SHOWN, preset)
        rows += paired_rows(
            policy_cells(part, figures), figures, BASELINES, head={"study": study, "preset": preset}
        )
    return add_verdicts(pd.DataFrame(rows), list(BASELINES), method=CORRECTION["leaderboard"])


def fronts(runs: pd.DataFrame) -> pd.DataFrame:
    """Every policy of the main study, and every generator, against each constant-margin
    front of its preset (:data:`FRONTS_OF`): two rows per (preset, policy, front), RF at
    equal RR and RR at equal RF (:func:`lab.study.front.front_rows`). A generator is read
    against the front's runs on its own worlds and seeds (10 worlds x 1 episode). The
    family is every row, Holm."""
    grid = runs[_is_front(runs)]
    gens = runs[runs["study"] == GENERATORS]
    baselines = set(BASELINES.values())
    rows = []
    for preset, part in runs[runs["study"] == MAIN].groupby("scenario", sort=False):
        groups = [part]
        mine = gens[(gens["scenario"] == preset) & ~gens["policy"].isin(baselines)]
        if len(mine):
            groups.append(mine)
        for group in groups:
            margins = grid[(grid["scenario"] == preset) & grid["seed"].isin(group["seed"])]
            worlds = sorted(group["world_seed"].unique())
            policies = [p for p in dict.fromkeys(group["policy"]) if p != "none"]
            rr, rf = episode_arrays(group, worlds, policies)
            for front, grid_policies in FRONTS_OF.items():
                have = [p for p in grid_policies if p in set(margins["policy"])]
                if len(have) < 2:
                    continue
                g_rr, g_rf = episode_arrays(margins, worlds, have)
                rows += front_rows(
                    {p: (rr[:, i], rf[:, i]) for i, p in enumerate(policies)},
                    g_rr,
                    g_rf,
                    front=front,
                    head={"preset": preset},
                )
    if not rows:
        return pd.DataFrame()
    return add_front_verdicts(pd.DataFrame(rows), method=CORRECTION["fronts"])


def _is_front(runs: pd.DataFrame) -> pd.Series:
    return runs["study"].str.startswith(FRONTS)


def _name(policy: str) -> str:
    return SHORT.get(policy, policy)


def _cell(mean: float, lo: float, hi: float) -> str:
    if mean != mean:
        return "n/a"
    if lo == hi:
        return f"{mean:.3g}"
    return f"{mean:.3g} [{lo:.3g}, {hi:.3g}]"


SURVIVES = ("better", "worse", "higher", "lower", "beats", "trails", "level", "matches")


def _diff(row: pd.Series, key: str) -> str:
    m, lo, hi = row[f"vs_{key}"], row[f"vs_{key}_lo"], row[f"vs_{key}_hi"]
    if m != m:
        return ""
    text = f"{m:+.3g} [{lo:+.3g}, {hi:+.3g}]"
    verdict = str(row.get(f"vs_{key}_verdict", ""))
    if verdict in SURVIVES:
        return f"<b>{text}</b> {html.escape(verdict)}"
    return f"{text} <span class='muted'>{html.escape(verdict)}</span>"


def _chart(board: pd.DataFrame, preset: str, x: str, y: str) -> bytes | None:
    from matplotlib.figure import Figure

    part = board[(board["preset"] == preset) & (board["study"] == MAIN)]
    piv = {f: part[part["figure"] == f].set_index("policy") for f in (x, y)}
    if x not in set(part["figure"]) or y not in set(part["figure"]):
        return None
    fig = Figure(figsize=(5.2, 3.8))
    ax = fig.subplots()
    for policy in piv[x].index:
        a, b = piv[x].loc[policy], piv[y].loc[policy]
        if a["mean"] != a["mean"] or b["mean"] != b["mean"]:
            continue
        ax.errorbar(
            a["mean"],
            b["mean"],
            xerr=[[a["mean"] - a["lo"]], [a["hi"] - a["mean"]]],
            yerr=[[b["mean"] - b["lo"]], [b["hi"] - b["mean"]]],
            fmt="o",
            ms=5,
            capsize=2,
            lw=1,
            label=_name(policy),
        )
    ax.set_xlabel(LABELS[x], fontsize=8)
    ax.set_ylabel(LABELS[y], fontsize=8)
    ax.set_title(f"{preset}: {y} against {x}", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return png_bytes(fig)


CHARTS = (("rf", "rr"), ("rr", "accept_gap"), ("cost_recommended", "h_accepted"))


def _front_table(table: pd.DataFrame, preset: str) -> str:
    part = table[table["preset"] == preset] if len(table) else table
    if part.empty:
        return ""
    body = []
    for (policy, front), g in part.groupby(["policy", "front"], sort=False):
        cells = g.set_index("figure")
        row = [
            f"<td class='l'>{html.escape(_name(policy))}</td>",
            f"<td class='l'>{FRONT_NAMES.get(front, front)}</td>",
        ]
        for fig in ("rf_at_equal_rr", "rr_at_equal_rf"):
            r = cells.loc[fig]
            out = r["outside_below"] + r["outside_above"] + r["undefined"]
            note = f" <span class='muted'>({out} worlds off the front)</span>" if out else ""
            row.append(f"<td>{_diff(r, 'front')} n = {int(r['vs_front_worlds'])}{note}</td>")
        body.append(f"<tr>{''.join(row)}</tr>")
    return (
        "<h3>against the constant-margin fronts (exact-linear advice)</h3><table><tr>"
        "<th class='l'>policy</th><th class='l'>front</th><th>RF − front at equal RR</th>"
        f"<th>RR − front at equal RF</th></tr>{''.join(body)}</table>"
    )


def write_report(runs: pd.DataFrame, out: Path, quick: bool = False) -> dict[str, Any]:
    """leaderboard.csv, fronts.csv and report.html under ``out``; returns their paths. The
    report names the studies it holds and those not run yet (a partial store)."""
    names = [s.name.removesuffix("-quick") for s in studies(quick)]
    absent = [n for n in names if n not in set(runs["study"])]
    board = leaderboard(runs)
    front = fronts(runs)
    out.mkdir(parents=True, exist_ok=True)
    board.to_csv(out / "leaderboard.csv", index=False)
    front.to_csv(out / "fronts.csv", index=False)
    bounds = ", ".join(sorted({f"±{b:g}" for b in BOUNDS.values()}))
    parts = [
        f"<h1>Five families in one set of worlds{' (quick check)' if quick else ''}</h1>",
        "<p class='lead'>Every policy at its defaults; mean [95 % interval] over worlds "
        "(a t interval on world means with Hall's skewness correction: worlds are the "
        "unit, chosen by the coverage test in tests/test_stats.py), n worlds beside "
        "each section. Paired differences to <code>threshold</code>, to a constant margin "
        "of 0.05 with exact-linear advice on learned difficulties and to <code>none</code> "
        "on the same worlds and seeds: <b>bold</b> where the difference survives the "
        "report's correction (Benjamini–Hochberg over every contrast of the leaderboard), "
        f"'level' where a TOST within the figure's bound ({bounds} for RR, RF and shares) "
        "survives it. The headline is the table against the constant-margin fronts: RF at "
        "equal RR and RR at equal RF, world by world, corrected with Holm over every front "
        f"contrast. Fewer than {MIN_WORLDS_FOR_VERDICT} worlds: intervals, no verdict. "
        f"Results schema {RESULTS_SCHEMA}; written {now()}.</p>",
        f"<p>Studies in this report: {html.escape(', '.join(dict.fromkeys(runs['study'])))}"
        f"{'; not yet run in full: ' + html.escape(', '.join(absent)) if absent else ''}.</p>",
    ]
    for (study, preset), part in board.groupby(["study", "preset"], sort=False):
        worlds, episodes = int(part["worlds"].max()), int(part["episodes"].iloc[0])
        where = f"{worlds} worlds" if worlds > 1 else "one world (world_seed 0)"
        parts.append(
            f"<h2>{html.escape(preset)} ({where} x {episodes} episodes; "
            f"{html.escape(study)})</h2><p>{html.escape(PRESETS[preset].description)}</p>"
        )
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
        if study == MAIN:
            parts.append(_front_table(front, preset))
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
            parts.append(
                f"<h3>paired difference to {name}</h3><table><tr><th class='l'>"
                f"figure</th>{head}</tr>{''.join(body)}</table>"
            )
        imgs = [png for x, y in CHARTS if (png := _chart(board, preset, x, y)) is not None]
        parts.append(
            "<div class='figs'>"
            + "".join(
                f"<img src='data:image/png;base64,{base64.b64encode(p).decode()}'>" for p in imgs
            )
            + "</div>"
        )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>five families</title>"
        f"<style>{STYLE} .muted {{ color: #777; }}</style></head><body>{''.join(parts)}"
        "</body></html>"
    )
    (out / "report.html").write_text(page)
    return {
        "leaderboard": out / "leaderboard.csv",
        "fronts": out / "fronts.csv",
        "report": out / "report.html",
        "board": board,
    }


def read_runs(out: str | Path, quick: bool = False) -> pd.DataFrame:
    """The runs of the studies as stored under ``out``/store (for a report only). A study
    not stored in full yet is left out (the report names it): its runs resume later."""
    frames = []
    for study in studies(quick):
        store = Path(out) / "store" / study.name
        if not (store / "manifest.json").is_file():
            continue
        _, runs = load_runs_of(study, store)
        if len(runs) < study.n_runs:
            continue
        frames.append(_tidy(runs, study))
    return pd.concat(frames, ignore_index=True)
