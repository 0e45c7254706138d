"""Table 3 across worlds (issue 33, item 7): the threshold baselines and the constant-margin
fronts of exact-linear advice in 10 worlds instead of world 0 alone.

    python scripts/table3_worlds.py [--out results/table3-worlds] [--worlds 10]
                                    [--episodes 10] [--workers 2]

For each setting (T, beta) of Table 3 with the shipped calibrated behaviour, and for the
two T = 1 settings with SPEC §1's (rho, chi, omega) = (2, 0.1, 1) as the sensitivity: every
world_seed runs `threshold`, `threshold-estimated`, `threshold-true` and the three margin
fronts (goal = th_t + c, c in the Pareto study's 12 margins, exact-linear with uniform,
estimated and true difficulties) on the same paired episode seeds. Each front is read off
at RR 0.95 as Table 3 does (lab.experiments.pareto.read_off), world by world. Intervals
resample worlds, then episodes within each (one draw of episodes for every point of a
world: common random numbers). Writes ``table.csv`` (one row per setting, behaviour and
method, with each world's value), ``summary.md``; the episodes stay in ``store/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from lab.experiments.pareto import BEHAVIOURS, MARGINS, SETTINGS, episode_arrays, read_front
from lab.study import Study, collect

FRONTS = {
    "margin-exact-linear": "exact-linear",
    "margin-estimated": "exact-linear:weights=estimated",
    "margin-true": "exact-linear:weights=true",
}
BASELINES = ("threshold", "threshold-estimated", "threshold-true")
RUNS = [(s, "calibrated") for s in SETTINGS] + [("T1-b005", "spec"), ("T1-b001", "spec")]


def policies() -> list[str]:
    out = list(BASELINES)
    for rec in FRONTS.values():
        out += [f"last-threshold:margin={m}+{rec}" for m in MARGINS]
    return out


def front_policies(method: str) -> list[str]:
    return [f"last-threshold:margin={m}+{FRONTS[method]}" for m in MARGINS]


def run_setting(setting: str, behaviour: str, worlds: int, episodes: int, workers: int,
                store: Path) -> pd.DataFrame:  # fmt: skip
    T, beta = SETTINGS[setting]
    study = Study.build("paper", name=f"table3-{setting}-{behaviour}", seeds=episodes,
                        metrics=["rr", "rf"], overrides={"validity": T, "beta": beta,
                                                         **BEHAVIOURS[behaviour]},
                        sweep={"world_seed": list(range(worlds)), "policy": policies()})  # fmt: skip
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


def bootstrap(stat, n_worlds: int, n_episodes: int, resamples: int = 1000, seed: int = 0):
    """(lo, hi) of ``stat(world_idx, episode_idx)`` over resamples: worlds with replacement,
    then episodes with replacement within each drawn world."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(resamples):
        w = rng.integers(0, n_worlds, n_worlds)
        e = rng.integers(0, n_episodes, (n_worlds, n_episodes))
        vals.append(stat(w, e))
    lo, hi = np.nanquantile(np.array(vals), [0.025, 0.975])
    return float(lo), float(hi)


def summarise(runs: pd.DataFrame, setting: str, behaviour: str) -> list[dict]:
    worlds = sorted(runs["world_seed"].unique())
    n_e = runs.groupby(["world_seed", "policy"]).size().min()
    rows = []
    fronts = {m: arrays(runs, worlds, front_policies(m)) for m in FRONTS}
    base = {b: arrays(runs, worlds, [b]) for b in BASELINES}

    def front_stat(m):
        rr, rf = fronts[m]
        return lambda w, e: float(np.nanmean([_read(rr[wi][:, ei], rf[wi][:, ei])
                                              for wi, ei in zip(w, e, strict=True)]))  # fmt: skip

    for m in FRONTS:
        vals = per_world(*fronts[m])
        lo, hi = bootstrap(front_stat(m), len(worlds), n_e)
        rows.append({"setting": setting, "behaviour": behaviour, "method": m,
                     "figure": "rf_at_rr095", "mean": float(np.nanmean(vals)), "lo": lo,
                     "hi": hi, "worlds": len(worlds), "episodes": int(n_e),
                     "per_world": json.dumps([round(float(v), 4) for v in vals])})  # fmt: skip
    for b in BASELINES:
        rr, rf = base[b]
        for fig, v in (("rr", rr[:, 0]), ("rf", rf[:, 0])):
            per = np.nanmean(v, axis=1)

            def stat(w, e, v=v):
                return float(
                    np.nanmean([np.nanmean(v[wi][ei]) for wi, ei in zip(w, e, strict=True)])
                )

            lo, hi = bootstrap(stat, len(worlds), n_e)
            rows.append({"setting": setting, "behaviour": behaviour, "method": b, "figure": fig,
                         "mean": float(np.nanmean(per)), "lo": lo, "hi": hi,
                         "worlds": len(worlds), "episodes": int(n_e),
                         "per_world": json.dumps([round(float(x), 4) for x in per])})  # fmt: skip
    # the orderings Table 3 rests on: paired differences of fronts, world by world
    for a, b in (("margin-true", "margin-estimated"), ("margin-estimated", "margin-exact-linear")):

        def diff(w, e, a=a, b=b):
            return front_stat(a)(w, e) - front_stat(b)(w, e)

        va, vb = per_world(*fronts[a]), per_world(*fronts[b])
        lo, hi = bootstrap(diff, len(worlds), n_e, resamples=500)
        rows.append({"setting": setting, "behaviour": behaviour, "method": f"{a} - {b}",
                     "figure": "rf_at_rr095", "mean": float(np.nanmean(va - vb)), "lo": lo,
                     "hi": hi, "worlds": len(worlds), "episodes": int(n_e),
                     "per_world": json.dumps([round(float(x), 4) for x in va - vb]),
                     "holds_in": int(np.sum(va > vb))})  # fmt: skip
    return rows


def markdown(table: pd.DataFrame) -> str:
    lines = ["# Table 3 across worlds", "",
             "Written by `python scripts/table3_worlds.py`. RF at RR 0.95 of each constant-margin "
             "front (exact-linear advice with uniform, estimated and true difficulties) and RR, "
             "RF of the threshold baselines, as mean [95 % interval] over worlds (worlds "
             "resampled, then episodes within them), and each world's value.", ""]  # fmt: skip
    for (setting, behaviour), part in table.groupby(["setting", "behaviour"], sort=False):
        n_w, n_e = int(part["worlds"].iloc[0]), int(part["episodes"].iloc[0])
        lines += [f"## {setting}, {behaviour} behaviour ({n_w} worlds x {n_e} episodes)", "",
                  "| method | figure | mean [95 % interval] | worlds where it holds | per world |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for r in part.itertuples():
            holds = "" if pd.isna(getattr(r, "holds_in", np.nan)) else f"{int(r.holds_in)} of {n_w}"
            lines.append(f"| {r.method} | {r.figure} | {r.mean:.3f} [{r.lo:.3f}, {r.hi:.3f}] | "
                         f"{holds} | {r.per_world} |")  # fmt: skip
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/table3-worlds"))
    parser.add_argument("--worlds", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--settings", nargs="*", default=None)
    args = parser.parse_args()
    rows = []
    for setting, behaviour in RUNS:
        if args.settings and f"{setting}-{behaviour}" not in args.settings:
            continue
        print(f"{setting} {behaviour}: {args.worlds} worlds x {len(policies())} points x "
              f"{args.episodes} episodes", flush=True)  # fmt: skip
        runs = run_setting(setting, behaviour, args.worlds, args.episodes, args.workers,
                           args.out / "store")  # fmt: skip
        rows += summarise(runs, setting, behaviour)
    table = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "table.csv", index=False)
    (args.out / "summary.md").write_text(markdown(table))
    print(markdown(table))


if __name__ == "__main__":
    main()
