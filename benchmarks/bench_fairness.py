"""Runtime of the long-term-fairness family against specs/long-term-fairness.md §6.

    python benchmarks/bench_fairness.py [--seeds 7] [--repeats 3]

Prints each figure beside its target: ``scarf.prepare`` (target <= 60 s), ``recommend`` for
100 rejected (<= 5 ms, best of 20), ``w_dist`` at 500 x 500 points (<= 50 ms, best of 5) and
a 100-tick ``fair-scarf`` episode with ``scarf`` after prepare against ``threshold``
(<= 1.5x). ``reproduce fairness`` times itself (docs/fairness.md).

The episode figure: torch on one thread (the caller's setting, as in a study worker); per
seed, ``repeats`` episodes of each policy (a fresh model each time; the trained generator
comes from the process's cache after the first), the two policies taking turns in which
goes first; each episode's CPU time (``time.process_time``) of ``model.run()`` only, so
the policy's ``prepare`` (the one-off generator training, which the spec excludes) is not
counted; a seed's time is the median of its repeats (the machine is shared: one episode
alone is noisy), the figure the ratio of the medians over seeds. One untimed episode of
each runs first, so imports are not timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def episode_cpu(cfg, policy: str) -> float:
    """CPU seconds of one 100-tick episode of ``policy`` after its set-up (prepare)."""
    from abm.model import RecourseModel

    model = RecourseModel(cfg, policy, agents=False, record_events=False)  # prepare here
    start = time.process_time()
    model.run()
    return time.process_time() - start


def episode_ratio(
    seeds: int, repeats: int = 1
) -> tuple[float, float, list[tuple[int, float, float]]]:
    """(median threshold s, median scarf s, per-seed (seed, threshold s, scarf s)); a seed's
    times are the medians of its ``repeats`` episodes."""
    from abm.scenarios import resolve_scenario

    base = resolve_scenario("fair-scarf")
    episode_cpu(base.replace(seed=10_000), "threshold")  # warm: imports, world caches
    episode_cpu(base.replace(seed=10_000), "scarf:epochs=0")
    rows = []
    for seed in range(seeds):
        cfg = base.replace(seed=seed)
        times: dict[str, list[float]] = {"threshold": [], "scarf": []}
        for rep in range(repeats):
            first = "threshold" if (seed + rep) % 2 == 0 else "scarf"
            for p in (first, "scarf" if first == "threshold" else "threshold"):
                times[p].append(episode_cpu(cfg, p))
        got = {p: statistics.median(t) for p, t in times.items()}
        rows.append((seed, got["threshold"], got["scarf"]))
        print(
            f"  seed {seed}: threshold {got['threshold']:.3f} s, scarf {got['scarf']:.3f} s "
            f"({got['scarf'] / got['threshold']:.2f}x)",
            flush=True,
        )
    med_t = statistics.median(r[1] for r in rows)
    med_s = statistics.median(r[2] for r in rows)
    return med_t, med_s, rows


def main() -> None:
    import torch

    from abm.interfaces import RecourseObs
    from abm.metrics_ext import wasserstein_between_groups
    from abm.model import RecourseModel
    from abm.scenarios import resolve_scenario
    from policies.fairness.population import ScarfPolicy, clear_generator_cache

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=7, help="seeds (default 7)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="episodes per policy and seed, median taken (default 3)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)

    cfg = resolve_scenario("fair-scarf")
    ctx = RecourseModel(cfg, "none", agents=False, record_events=False).context
    pol = ScarfPolicy()
    # time a real training: neither this process's generators nor a stored one
    clear_generator_cache()
    os.environ["RABM_CACHE_DIR"] = "off"
    prepare_s = _timed(lambda: pol.prepare(ctx))
    X = np.random.default_rng(0).random((100, ctx.n_features))
    ids = np.arange(100)
    scores = ctx.decision_model.score(X)

    def obs() -> RecourseObs:
        return RecourseObs(
            tick=0,
            threshold=0.6,
            applicant_ids=ids,
            applicant_X=X,
            applicant_scores=scores,
            accepted=np.zeros(100, bool),
            ids=ids,
            X=X,
            scores=scores,
            n_applications=np.ones(100, int),
            group=ids % 2,
            budget_left=20.0,
        )

    pol.recommend(obs(), np.random.default_rng(0))  # plans made: warm
    rec_s = min(_timed(lambda: pol.recommend(obs(), np.random.default_rng(0))) for _ in range(20))
    rng = np.random.default_rng(0)
    Xw, group = rng.random((1000, 10)), np.repeat([0, 1], 500)
    w_s = min(_timed(lambda: wasserstein_between_groups(Xw, group, 2, rng)) for _ in range(5))

    print(
        f"fair-scarf episodes, CPU s of model.run() after prepare, {args.seeds} seeds x "
        f"{args.repeats} repeats:"
    )
    med_t, med_s, _ = episode_ratio(args.seeds, args.repeats)
    ratio = med_s / med_t
    rows = [
        ("scarf.prepare", f"{prepare_s:.1f} s", "<= 60 s", prepare_s <= 60),
        ("scarf.recommend, 100 rejected", f"{1e3 * rec_s:.2f} ms", "<= 5 ms", rec_s <= 0.005),
        ("w_dist, 500 x 500 points", f"{1e3 * w_s:.1f} ms", "<= 50 ms", w_s <= 0.05),
        ("fair-scarf episode, scarf / threshold", f"{ratio:.2f}x", "<= 1.5x", ratio <= 1.5),
    ]
    print(f"episode medians: threshold {med_t:.3f} s, scarf {med_s:.3f} s (CPU)")
    for name, value, target, ok in rows:
        print(f"{name:<40}{value:>12}  target {target:<9}{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
