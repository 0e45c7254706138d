"""Cost of the world extensions (issue 18 item 9) at the paper scale.

    python benchmarks/bench_extensions.py              # 7 repeats per setting
    python benchmarks/bench_extensions.py --repeats 3

A paper-scale 100-tick episode (N0 = 20, k = 9, m = 10, ``threshold``, no agent handles,
no candidate table) is timed with every extension off, with each one on alone, and with
all five on (the ``improvement``, ``retraining``, ``groups``, ``causal`` and ``budget``
presets' fields together, retraining every 10 ticks). Refits are timed on their own and
subtracted: the target is "all on, excluding refits, at most 3x all off", and the cost of
one refit is reported beside it. The one-time import of POT (the Wasserstein metric) is
paid before the timing. Medians of ``--repeats`` episodes with different seeds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

TARGET_RATIO = 3.0

SETTINGS = {
    "off": {},
    "outcomes": {"noncausal_features": (8, 9), "outcome_delay": 5},
    "retraining": {"retrain_every": 10, "retrain_data": "shifted",
                   "retrain_drift": (0.1,) * 5 + (-0.1,) * 5},
    "groups": {"group_share": (0.5, 0.5), "group_shift": ((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10)},
    "causal": {"causal_graph": ((7, 4, 0.6), (4, 1, 0.5))},
    "budget": {"budget": 1.0, "budget_scope": "tick"},
}  # fmt: skip
SETTINGS["all"] = {k: v for s in SETTINGS.values() for k, v in s.items()}
SETTINGS["all"]["retrain_data"] = "both"


def measure(fields: dict, repeats: int) -> dict:
    from abm import RecourseModel
    from abm.extensions import Mechanisms

    refit_s: list[float] = []
    original = Mechanisms._refit

    def timed(self, r, streams):
        t0 = time.perf_counter()
        original(self, r, streams)
        refit_s.append(time.perf_counter() - t0)

    Mechanisms._refit = timed
    try:
        # world built and cached, POT imported: outside the timing
        RecourseModel("paper", "threshold", agents=False, record_events=False, **fields).run(12)
        episodes, excl = [], []
        for seed in range(repeats):
            refit_s.clear()
            model = RecourseModel(
                "paper", "threshold", seed=seed, agents=False, record_events=False, **fields
            )
            t0 = time.perf_counter()
            model.run()
            total = time.perf_counter() - t0
            episodes.append(total)
            excl.append(total - sum(refit_s))
            refits = list(refit_s)
    finally:
        Mechanisms._refit = original
    return {
        "episode_ms": 1e3 * statistics.median(episodes),
        "excluding_refits_ms": 1e3 * statistics.median(excl),
        "refits": len(refits),
        "refit_ms": 1e3 * statistics.median(refits) if refits else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results = {name: measure(fields, args.repeats) for name, fields in SETTINGS.items()}
    base = results["off"]["episode_ms"]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{'setting':<12}{'episode ms':>12}{'excl. refits':>14}{'ratio':>8}{'refit ms':>10}")
    for name, r in results.items():
        ratio = r["excluding_refits_ms"] / base
        refit = f"{r['refit_ms']:.1f}" if r["refits"] else "-"
        line = f"{name:<12}{r['episode_ms']:>12.1f}{r['excluding_refits_ms']:>14.1f}"
        print(f"{line}{ratio:>7.2f}x{refit:>10}")
    ratio = results["all"]["excluding_refits_ms"] / base
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(
        f"all on, excluding refits: {ratio:.2f}x all off (target <= {TARGET_RATIO:.0f}x: {verdict})"
    )


if __name__ == "__main__":
    main()
