"""Episodes per second of the batched engine (abm/batch.py) against one episode at a time
(issue 49), in one process on one thread.

    python benchmarks/bench_batch.py [--scenario paper] [--sizes 1,10,100,1000]
        [--policies threshold,none,threshold-true,robust-l1,roar-l1,safear,lookahead,rl]
        [--others 1,10,30] [--repeats 3] [--no-freeze]

For each policy: ``RecourseModel(...).run()`` one episode after another (the sequential
path, which is itself a batch of one), then ``Batch.of(models).run()`` at each size B, all
full paper episodes with their record, as a study runs them (no Mesa agents, no candidate
table). Times are this process's CPU time, medians of ``--repeats`` rounds that run the
sequential path and every size in turn. After a warm-up the objects the imports made are
frozen (``gc.freeze``), as a study worker has them (``--no-freeze``: not). Prints
episodes per second, the ratio to the sequential path measured in the same run (each
size over at least as many episodes as the sequential path) and, for each policy's
sequential path, its episode's cost in ``threshold`` episodes (the lookahead's target is
at most 5); ``threshold`` goes up to the largest size, the others (each slower) up to
``--others``. Then the peak Python memory of one episode inside each batch of
``threshold`` (tracemalloc), which is what a batch size chosen from a memory limit reads.
Last, RL environment steps per second with random actions: one
:class:`lab.envs.PopulationEnv` against :class:`lab.envs.PopulationVectorEnv` at each of
``--envs`` (what ``recourse-abm train predictor --n-envs`` steps), counting every
environment's steps (medians of ``--repeats`` rounds, each one environment then every n),
and a line fitting a vector step's cost against n (fixed plus per
environment) with the most any n could give over one environment. And the acceptance
forecast's latency (``dashboards.forecast``, 200
futures each way, 20 ticks) for four applicants at tick 10, its futures one at a time and
as one batch (the median of ``--repeats`` requests).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread: the ratios are the engine's, not BLAS's

import argparse  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

#: policies whose episodes cost many times threshold's: measured on fewer episodes
SLOW = {"safear", "lookahead", "robust-l1", "roar-l1", "rl"}

#: this process's CPU time: one thread, so it is the work's, and a shared machine's
#: other jobs (which stretch the wall clock by up to 40 % here) count less
_clock = time.process_time


def _models(scenario: str, policy: str, n: int, start: int) -> list:
    from abm import RecourseModel

    return [
        RecourseModel(scenario, policy, seed=start + s, agents=False, record_events=False)
        for s in range(n)
    ]


def sequential(scenario: str, policy: str, n: int) -> float:
    """Seconds per episode, one episode after another."""
    start = _clock()
    for m in _models(scenario, policy, n, 0):
        m.run()
    return (_clock() - start) / n


def batched(scenario: str, policy: str, size: int, at_least: int) -> float:
    """Seconds per episode in batches of ``size`` (building the models included), over
    at least ``at_least`` episodes (seeds 0, 1, ...: the sequential path's)."""
    from abm.batch import Batch

    n = -(-max(at_least, size) // size)
    start = _clock()
    for i in range(n):
        Batch.of(_models(scenario, policy, size, i * size)).run()
    return (_clock() - start) / (n * size)


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


def env_steps(scenario: str, n_envs: int, steps: int) -> float:
    """Environment steps per second with uniform random actions (``steps`` per env)."""
    import numpy as np

    from lab.envs import PopulationEnv, PopulationVectorEnv

    rng = np.random.default_rng(0)
    if n_envs == 0:  # one PopulationEnv, the sequential path
        env = PopulationEnv(scenario)
        env.reset(seed=0)
        start = _clock()
        for _ in range(steps):
            if env.step(rng.uniform(-1.0, 1.0, 1))[2]:
                env.reset()
        return steps / (_clock() - start)
    venv = PopulationVectorEnv(scenario, n_envs)
    venv.reset(seed=0)
    start = _clock()
    for _ in range(steps):
        venv.step(rng.uniform(-1.0, 1.0, (n_envs, 1)))
    return steps * n_envs / (_clock() - start)


def env_fit(step_s: dict[int, float], one_s: float) -> str:
    """A vector step's cost as fixed + per environment (least squares over the sizes of
    16 or more, seconds a step), and what it implies: the most any number of environments
    gives over one (one environment's step ``one_s`` over the per-environment cost), and
    the per-environment cost 20x at 64 environments would need with that fixed part."""
    import numpy as np

    sizes = sorted(n for n in step_s if n >= 16)
    if len(sizes) < 2:
        return "(fit: needs two sizes of 16 or more)"
    per, fixed = np.polyfit(sizes, [step_s[n] for n in sizes], 1)
    need = (64 * one_s / 20 - fixed) / 64
    return (
        f"fit over n = {','.join(map(str, sizes))}: a step {1e3 * fixed:.2f} ms + "
        f"{1e6 * per:.1f} us an environment; at most {one_s / per:.1f}x one env for any n; "
        f"20x at n = 64 needs {1e6 * need:.1f} us an environment"
    )


def forecast_latency(
    scenario: str, applicants: int = 4, repeats: int = 1
) -> list[tuple[int, float, float]]:
    """(applicant, seconds one future at a time, seconds as one batch: the median of
    ``repeats`` requests) at tick 10."""
    from abm import RecourseModel
    from dashboards import forecast

    model = RecourseModel(scenario, "threshold", seed=0, agents=False, record_events=False)
    model.run(10)
    pop = model.population
    out = []
    for cid in pop.ids[pop.advised][:applicants].tolist():
        begin = forecast.start(model, cid)
        keys = range(forecast.DEFAULT_FUTURES)
        start = _clock()
        alone = {a: [forecast.future(begin, a, k) for k in keys] for a in forecast.ARMS}
        mid = _clock()
        took = []
        for _ in range(repeats):
            begun = _clock()
            together = forecast.futures(begin, keys)
            took.append(_clock() - begun)
            assert alone == together
        out.append((cid, mid - start, statistics.median(took)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--sizes", default="1,10,100,1000")
    parser.add_argument(
        "--policies",
        default="threshold,none,threshold-true,robust-l1,roar-l1,safear,lookahead,rl",
    )
    parser.add_argument(
        "--others", default="1,10,30", help="sizes for the policies after the first"
    )
    parser.add_argument("--envs", default="1,16,64", help="RL vector env sizes ('' for none)")
    parser.add_argument("--no-forecast", action="store_true", help="skip the forecast")
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave the imports' objects unfrozen"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternating repeats of each timing (medians)"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    others = [int(s) for s in args.others.split(",")]
    sequential(args.scenario, "threshold", 3)  # warm-up: imports, caches, the first world
    batched(args.scenario, "threshold", 2, 2)  # and a batch's compiled loops (abm.kernels)
    if not args.no_freeze:  # what the imports made, frozen as a study worker has it
        gc.freeze()  # (lab.study.runner._start_worker): full collections walk the rest
    print(
        f"{'policy':16s} {'B':>6s} {'episodes/s':>11s} {'x sequential':>13s} "
        f"{'x threshold':>12s}   (medians of {args.repeats} alternating repeats)"
    )
    threshold_cost = None
    for i, policy in enumerate(args.policies.split(",")):
        grid = sizes if i == 0 else others
        n_seq = 5 if policy in SLOW else 20
        # the policy's first use in the process (its caches, torch, a solver) is not timed
        _models(args.scenario, policy, 1, 10_000)[0].run(5)
        # the sequential path and every size in turn, repeated: a slow spell of the
        # machine falls on all of them, not on one
        seq, per = [], {size: [] for size in grid}
        for _ in range(args.repeats):
            seq.append(sequential(args.scenario, policy, n_seq))
            for size in grid:
                per[size].append(batched(args.scenario, policy, size, n_seq))
        base = statistics.median(seq)
        if policy == "threshold":
            threshold_cost = base
        vs = f"{base / threshold_cost:12.2f}" if threshold_cost else f"{'':12s}"
        print(f"{policy:16s} {'seq':>6s} {1 / base:11.1f} {1.0:13.2f} {vs}")
        for size in grid:
            cost = statistics.median(per[size])
            print(f"{policy:16s} {size:6d} {1 / cost:11.1f} {base / cost:13.2f}")
    print()
    for size in sizes[:3]:
        mib = peak_bytes(args.scenario, size) / 2**20
        print(f"peak memory, threshold, B = {size:4d}: {mib:.2f} MiB per episode")
    if args.envs:
        sizes_n = [int(x) for x in args.envs.split(",")]
        print(
            f"\n{'RL environments':16s} {'n':>6s} {'steps/s':>11s} {'x one env':>13s}"
            f"   (medians of {args.repeats} alternating repeats)"
        )
        env_steps(args.scenario, 0, 50)  # warm-up, and the vector env's compiled loops loaded
        env_steps(args.scenario, 2, 5)
        # one environment, then every n, in turn: a slow moment of the machine then moves
        # one round, not the one-environment figure every ratio is read against
        rates: dict[int, list[float]] = {n: [] for n in [0, *sizes_n]}
        for _ in range(args.repeats):
            rates[0].append(env_steps(args.scenario, 0, 400))
            for n in sizes_n:
                rates[n].append(env_steps(args.scenario, n, max(400 // n, 100)))
        one = statistics.median(rates[0])
        print(f"{'PopulationEnv':16s} {'one':>6s} {one:11.0f} {1.0:13.2f}")
        step_s = {}
        for n in sizes_n:
            got = statistics.median(rates[n])
            step_s[n] = n / got
            print(f"{'vector env':16s} {n:6d} {got:11.0f} {got / one:13.2f}")
        print(env_fit(step_s, 1.0 / one))
    if not args.no_forecast:
        print(f"\n{'forecast':16s} {'who':>6s} {'alone s':>11s} {'batch s':>13s}")
        forecast_latency(args.scenario, 1)  # warm-up
        for cid, alone, together in forecast_latency(args.scenario, repeats=args.repeats):
            print(f"{'200 x 2 futures':16s} {cid:6d} {alone:11.3f} {together:13.3f}")


if __name__ == "__main__":
    main()
