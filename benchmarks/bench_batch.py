"""Episodes per second of the batched engine (abm/batch.py) against one episode at a time
(issue 49), in one process on one thread.

    python benchmarks/bench_batch.py [--scenario paper] [--sizes 1,10,100,1000]
        [--policies threshold,none,threshold-true,robust-l1,roar-l1,safear,lookahead]
        [--others 1,10,30]

For each policy: ``RecourseModel(...).run()`` one episode after another (the sequential
path, which is itself a batch of one), then ``Batch.of(models).run()`` at each size B, all
full paper episodes with their record, as a study runs them (no Mesa agents, no candidate
table). Prints episodes per second and the ratio to the sequential path measured in the
same run (each size over at least as many episodes as the sequential path);
``threshold`` goes up to the largest size, the others (each slower) up to ``--others``. Then the peak Python memory of one episode inside each batch of
``threshold`` (tracemalloc), which is what a batch size chosen from a memory limit reads.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread: the ratios are the engine's, not BLAS's

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

#: policies whose episodes cost many times threshold's: measured on fewer episodes
SLOW = {"safear", "lookahead", "robust-l1", "roar-l1"}


def _models(scenario: str, policy: str, n: int, start: int) -> list:
    from abm import RecourseModel

    return [
        RecourseModel(scenario, policy, seed=start + s, agents=False, record_events=False)
        for s in range(n)
    ]


def sequential(scenario: str, policy: str, n: int) -> float:
    """Seconds per episode, one episode after another."""
    start = time.perf_counter()
    for m in _models(scenario, policy, n, 0):
        m.run()
    return (time.perf_counter() - start) / n


def batched(scenario: str, policy: str, size: int, at_least: int) -> float:
    """Seconds per episode in batches of ``size`` (building the models included), over
    at least ``at_least`` episodes (seeds 0, 1, ...: the sequential path's)."""
    from abm.batch import Batch

    n = -(-max(at_least, size) // size)
    start = time.perf_counter()
    for i in range(n):
        Batch.of(_models(scenario, policy, size, i * size)).run()
    return (time.perf_counter() - start) / (n * size)


def peak_bytes(scenario: str, size: int) -> float:
    """Peak traced bytes per episode of a batch of ``size`` threshold episodes."""
    from abm.batch import Batch

    models = _models(scenario, "threshold", size, 0)
    tracemalloc.start()
    tracemalloc.reset_peak()
    Batch.of(models).run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--sizes", default="1,10,100,1000")
    parser.add_argument(
        "--policies", default="threshold,none,threshold-true,robust-l1,roar-l1,safear,lookahead"
    )
    parser.add_argument(
        "--others", default="1,10,30", help="sizes for the policies after the first"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    others = [int(s) for s in args.others.split(",")]
    sequential(args.scenario, "threshold", 3)  # warm-up: imports, caches, the first world
    print(f"{'policy':16s} {'B':>6s} {'episodes/s':>11s} {'x sequential':>13s}")
    for i, policy in enumerate(args.policies.split(",")):
        grid = sizes if i == 0 else others
        n_seq = 5 if policy in SLOW else 20
        # the policy's first use in the process (its caches, torch, a solver) is not timed
        _models(args.scenario, policy, 1, 10_000)[0].run(5)
        base = sequential(args.scenario, policy, n_seq)
        print(f"{policy:16s} {'seq':>6s} {1 / base:11.1f} {1.0:13.2f}")
        for size in grid:
            per = batched(args.scenario, policy, size, n_seq)
            print(f"{policy:16s} {size:6d} {1 / per:11.1f} {base / per:13.2f}")
    print()
    for size in sizes[:3]:
        mib = peak_bytes(args.scenario, size) / 2**20
        print(f"peak memory, threshold, B = {size:4d}: {mib:.2f} MiB per episode")


if __name__ == "__main__":
    main()
