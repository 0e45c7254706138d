"""Table 3 across worlds (issue 33, item 7): the threshold baselines and the constant-margin
fronts of exact-linear advice in 20 worlds instead of world 0 alone.

    python scripts/table3_worlds.py [--out results/table3-worlds] [--worlds 20]
                                    [--episodes 5] [--workers 2]

For each setting (T, beta) of Table 3 with the shipped calibrated behaviour, and for the
two T = 1 settings with SPEC §1's (rho, chi, omega) = (2, 0.1, 1) as the sensitivity: every
world_seed runs `threshold`, `threshold-estimated`, `threshold-true` and the three margin
fronts (goal = th_t + c, c in the Pareto study's 12 margins, exact-linear with uniform,
estimated and true difficulties) on the same paired episode seeds. Each front is read off
at RR 0.95 as Table 3 does (lab.reproduce.pareto.read_off), world by world.

Worlds are the unit (lab.study.stats): every interval is the world interval of the
per-world values (each front's read-off, each baseline's episode mean), with the number
of worlds it rests on. The report's family of contrasts is the two orderings Table 3 rests
on (:data:`ORDERINGS`: paired differences of fronts, world by world) in every setting and
behaviour run, corrected together by Holm; "level" needs TOST within ±0.02 RF
(:data:`BOUND`) to survive, and there is no verdict below 10 worlds. Writes ``table.csv``
(one row per setting, behaviour and method, with each world's value), ``summary.md``; the
episodes stay in ``store/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from lab.reproduce.pareto import BEHAVIOURS, MARGINS, SETTINGS, episode_arrays, read_front
from lab.study import Study, collect
from lab.study.stats import (
    BOUNDS,
    MIN_WORLDS_FOR_VERDICT,
    difference_p,
    judge,
    tost_p,
    world_interval,
)

FRONTS = {
    "margin-exact-linear": "exact-linear",
    "margin-estimated": "exact-linear:weights=estimated",
    "margin-true": "exact-linear:weights=true",
}
BASELINES = ("threshold", "threshold-estimated", "threshold-true")
RUNS = [(s, "calibrated") for s in SETTINGS] + [("T1-b005", "spec"), ("T1-b001", "spec")]
# the orderings Table 3 rests on: (a, b) for a's RF at RR 0.95 minus b's, world by world
ORDERINGS = (("margin-true", "margin-estimated"), ("margin-estimated", "margin-exact-linear"))
# "level": a difference of RF within ±0.02
BOUND = BOUNDS["rf"]
CORRECTION = "holm"


def policies() -> list[str]:
    out = list(BASELINES)
    for rec in FRONTS.values():
        out += [f"last-threshold:margin={m}+{rec}" for m in MARGINS]
    return out


def front_policies(method: str) -> list[str]:
    return [f"last-threshold:margin={m}+{FRONTS[method]}" for m in MARGINS]


def run_setting(
    setting: str, behaviour: str, worlds: int, episodes: int, workers: int, store: Path
) -> pd.DataFrame:
    T, beta = SETTINGS[setting]
    study = Study.build(
        "paper",
        name=f"table3-{setting}-{behaviour}",
        seeds=episodes,
        metrics=["rr", "rf"],
        overrides={"validity": T, "beta": beta, **BEHAVIOURS[behaviour]},
        sweep={"world_seed": list(range(worlds)), "policy": policies()},
    )
    _, runs = collect(study, store / f"{setting}-{behaviour}", workers=workers)
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        raise RuntimeError(f"{setting}: {len(bad)} episode(s) failed: {bad['error'].iloc[0]}")
    return runs


def arrays(runs: pd.DataFrame, worlds: list[int], pols: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """RR and RF, each (worlds, points, episodes), episodes in seed order."""
    return episode_arrays(runs, worlds, pols)


def _read(rr: np.ndarray, rf: np.ndarray) -> float:
    """RF at RR 0.95 of the front of points (p, e), from their episode means."""
    return read_front(rr, rf)[0]


def per_world(rr: np.ndarray, rf: np.ndarray) -> np.ndarray:
    return np.array([_read(rr[w], rf[w]) for w in range(rr.shape[0])])


def _row(head: dict, values: np.ndarray, per_world: np.ndarray) -> dict:
    """A table row: ``head``, the world interval of ``values`` (W, E) and each world's value."""
    mean, lo, hi, n = world_interval(values)
    per = json.dumps([round(float(v), 4) for v in per_world])
    return {**head, "mean": mean, "lo": lo, "hi": hi, "worlds": n, "per_world": per}


def summarise(runs: pd.DataFrame, setting: str, behaviour: str) -> list[dict]:
    """The rows of one setting and behaviour: each front's RF at RR 0.95 (one value per
    world), each baseline's RR and RF (episodes within worlds) and each ordering's paired
    difference with its uncorrected p-value (t-test on the worlds) and TOST p-value
    (±:data:`BOUND`); :func:`add_verdicts` corrects the report's family."""
    worlds = sorted(runs["world_seed"].unique())
    n_e = int(runs.groupby(["world_seed", "policy"]).size().min())

    def head(method: str, figure: str) -> dict:
        return dict(
            setting=setting, behaviour=behaviour, method=method, figure=figure, episodes=n_e
        )

    rows = []
    reads = {m: per_world(*arrays(runs, worlds, front_policies(m))) for m in FRONTS}
    for m in FRONTS:
        rows.append(_row(head(m, "rf_at_rr095"), reads[m][:, None], reads[m]))
    for b in BASELINES:
        rr, rf = arrays(runs, worlds, [b])
        for fig, v in (("rr", rr[:, 0]), ("rf", rf[:, 0])):
            rows.append(_row(head(b, fig), v, np.nanmean(v, axis=1)))
    for a, b in ORDERINGS:
        d = reads[a] - reads[b]
        row = _row(head(f"{a} - {b}", "rf_at_rr095"), d[:, None], d)
        row.update(holds_in=int(np.sum(d > 0)), p=difference_p(d[:, None]))
        row.update(tost_p=tost_p(d[:, None], bound=BOUND), bound=BOUND)
        rows.append(row)
    return rows


def add_verdicts(table: pd.DataFrame, method: str = CORRECTION) -> pd.DataFrame:
    """``table`` with ``p_adj``, ``tost_p_adj`` and ``verdict`` on its difference rows
    (those with a ``p``): the report's family, corrected together by ``method``; "higher" /
    "lower" where the difference test survives, "level" where TOST does, else
    "inconclusive" ("inconclusive (n worlds)" below 10 worlds)."""
    out = table.copy()
    tested = out["p"].notna() if "p" in out else pd.Series(False, index=out.index)
    out["p_adj"], out["tost_p_adj"], out["verdict"] = np.nan, np.nan, ""
    rows = out.loc[tested]
    p_adj, tost_adj, said = judge(
        rows["mean"],
        rows["p"],
        rows["tost_p"],
        rows["worlds"],
        method=method,
        lo=rows["lo"],
        hi=rows["hi"],
    )
    out.loc[tested, "p_adj"], out.loc[tested, "tost_p_adj"] = p_adj, tost_adj
    out.loc[tested, "verdict"] = said
    return out


def _cell(r) -> str:
    """mean [95 % interval] (n worlds) of a row."""
    if r.mean != r.mean:
        return f"n/a ({r.worlds} worlds)"
    return f"{r.mean:.3f} [{r.lo:.3f}, {r.hi:.3f}] ({r.worlds} worlds)"


def markdown(table: pd.DataFrame) -> str:
    """summary.md of the rows of every setting run (:func:`add_verdicts` added where not yet)."""
    if "verdict" not in table:
        table = add_verdicts(table)
    n_family = int(table["p_adj"].notna().sum())
    intro = (
        "Written by `python scripts/table3_worlds.py`. RF at RR 0.95 of each constant-margin "
        "front (exact-linear advice with uniform, estimated and true difficulties) and RR, "
        "RF of the threshold baselines, as mean [95 % interval] over worlds (worlds as a "
        "random effect: Hall-corrected t on the world values, lab/study/stats.py) with the "
        "number of worlds it rests on, and each world's value. Results schema "
        f"{RESULTS_SCHEMA}."
    )
    family = (
        "The family of contrasts is the orderings of the fronts in every setting and "
        f"behaviour below ({n_family} with at least {MIN_WORLDS_FOR_VERDICT} worlds), "
        f'corrected together by Holm; "level" where TOST within ±{BOUND:g} RF survives; '
        f"no verdict below {MIN_WORLDS_FOR_VERDICT} worlds. In bold: the verdicts that "
        "survive the correction."
    )
    lines = ["# Table 3 across worlds", "", intro, "", family, ""]
    for (setting, behaviour), part in table.groupby(["setting", "behaviour"], sort=False):
        n_w, n_e = int(part["worlds"].max()), int(part["episodes"].iloc[0])
        lines += [
            f"## {setting}, {behaviour} behaviour ({n_w} worlds x {n_e} episodes)",
            "",
            "| method | figure | mean [95 % interval] (worlds) | verdict (Holm p, TOST p) "
            "| worlds where it holds | per world |",
            "|---|---|---|---|---|---|",
        ]
        for r in part.itertuples():
            holds = (
                ""
                if pd.isna(getattr(r, "holds_in", np.nan))
                else f"{int(r.holds_in)} of {r.worlds}"
            )
            said = ""
            if isinstance(r.verdict, str) and r.verdict:
                said = r.verdict if r.verdict.startswith("inconclusive") else f"**{r.verdict}**"
                said += f" ({_p(r.p_adj)}, {_p(r.tost_p_adj)})"
            lines.append(
                f"| {r.method} | {r.figure} | {_cell(r)} | {said} | {holds} | {r.per_world} |"
            )
        lines.append("")
    return "\n".join(lines)


def _p(value: float) -> str:
    return "–" if value != value else f"{value:.2g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/table3-worlds"))
    parser.add_argument("--worlds", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--settings", nargs="*", default=None)
    args = parser.parse_args()
    rows = []
    for setting, behaviour in RUNS:
        if args.settings and f"{setting}-{behaviour}" not in args.settings:
            continue
        print(
            f"{setting} {behaviour}: {args.worlds} worlds x {len(policies())} points x "
            f"{args.episodes} episodes",
            flush=True,
        )
        runs = run_setting(
            setting, behaviour, args.worlds, args.episodes, args.workers, args.out / "store"
        )
        rows += summarise(runs, setting, behaviour)
    table = add_verdicts(pd.DataFrame(rows))
    table["results_schema"] = RESULTS_SCHEMA
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "table.csv", index=False)
    (args.out / "summary.md").write_text(markdown(table))
    print(markdown(table))


if __name__ == "__main__":
    main()
