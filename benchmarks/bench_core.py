"""Throughput and memory of the core simulation, as ratios to the numbers before issue 12.

    python benchmarks/bench_core.py            # full table (pool sizes up to 1,000,000)
    python benchmarks/bench_core.py --quick    # pools up to 200,000

Targets (issue 12 item 10): a paper-scale 100-tick episode (N0 = 20, k = 9, m = 10,
``threshold`` = exact-linear, no agent handles) under 25 ms; a PopulationEnv step under
0.3 ms; a 1,000,000-candidate pool at >= 2,000,000 candidate-ticks/s on one core.

Beside the episode it prints the best case of the same calls: each half of a tick
replayed from one state on a warm cache (see ``measure_tick_floor``). It also times
``linear_logit`` on 1,000,000 rows: the blocked path against the plain
``np.add.reduce`` it replaces (same bits, checked). The 1,000,000 pool runs twice: under
``paper`` (T = 1: everyone waiting reapplies, the target's setting) and under ``paper-T5``
(a waiting pool that carries over between ticks).
Pool size P means N0 = P initial candidates, m = P/2 entrants and k = 0.45 P places
per tick (the paper's 20 / 10 / 9 scaled up). A candidate-tick is one candidate
active during one tick (applying, or waiting and deciding whether to reapply).
Each size runs in a fresh process so its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

TARGET_EPISODE_MS = 25.0
TARGET_ENV_STEP_MS = 0.3
TARGET_RATE = 2_000_000
TARGET_PEAK_MB = 2048
# before the speed work of item 10: the redesigned model of commit 4f3b279, measured by this
# script on the shared, loaded 2-core development machine (medians; +-15 % run to run).
# The model before issue 12 (627668f) measured 52.2 ms, 0.93 ms and 1,234,651 /s there.
BEFORE = {"episode_ms": 59.6, "env_step_ms": 0.86, "rate_1m": 1_272_753}


def measure_pool(pool: int, ticks: int, agents: bool, scenario: str = "paper") -> dict:
    from abm import RecourseModel

    overrides = dict(n_initial=pool, m=pool // 2, k=max(1, int(0.45 * pool)), ticks=ticks)
    model = RecourseModel(scenario, "threshold", agents=agents, record_events=False, **overrides)
    start = time.perf_counter()
    model.run()
    seconds = time.perf_counter() - start
    t = model.tick_table()
    active = int((t["n_new"] + t["n_waiting"].shift(fill_value=0)).sum())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "pool": pool,
        "ticks": ticks,
        "agents": agents,
        "seconds": seconds,
        "candidate_ticks": active,
        "rate": active / seconds,
        "peak_mb": peak_mb,
    }


def measure_episode(agents: bool, repeats: int) -> dict:
    from abm import RecourseModel

    RecourseModel("paper", "threshold")  # build and cache the world outside the timing
    run_only, with_setup = [], []
    for seed in range(repeats):
        t0 = time.perf_counter()
        model = RecourseModel("paper", "threshold", seed=seed, agents=agents, record_events=False)
        t1 = time.perf_counter()
        model.run()
        t2 = time.perf_counter()
        run_only.append(t2 - t1)
        with_setup.append(t2 - t0)
    return {
        "agents": agents,
        "run_ms": 1000 * statistics.median(run_only),
        "total_ms": 1000 * statistics.median(with_setup),
    }


def measure_tick_floor(states: int, repeats: int) -> dict:
    """The best case of a paper-scale tick: each half replayed from one state, warm cache.

    ``decide``, the policy's ``recommend`` and ``respond`` each run ``repeats`` times from
    the same model state (at ticks 10, 40 and 70 of ``states`` seeds); the medians (µs)
    add up to what the current calls cost with nothing else in the caches.
    """
    runs = [_replayed_halves(seed, at, repeats) for seed in range(states) for at in (10, 40, 70)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _replayed_halves(seed: int, at: int, repeats: int) -> dict:
    from abm import RecourseModel
    from abm.pool import Pool

    model = RecourseModel("paper", "threshold", seed=seed, agents=False, record_events=False)
    model.run(at)

    def restore(snap) -> None:
        # the model's own state, as RecourseModel.from_snapshot sets it (benchmark only)
        c = model.config
        model.tick, model._next_id = snap.tick, snap.next_id
        model.pool = Pool(c.n_features, c.validity, snap.population, snap.dropped)
        model._pending = None if snap.pending is None else snap.pending.copy()

    def median_us(fn, *args) -> float:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*args)
            runs.append(time.perf_counter() - start)
        return 1e6 * statistics.median(runs)

    def decide_from(snap) -> None:
        restore(snap)
        model.decide()

    def respond_from(snap, rec) -> None:
        restore(snap)
        model.respond(rec)

    before = model.snapshot()
    decide = median_us(decide_from, before) - median_us(restore, before)
    restore(before)
    obs, rng = model.decide(), model.streams.policy
    decided = model.snapshot()
    recommend = median_us(model.policy.recommend, obs, rng)
    rec = model.policy.recommend(obs, rng)
    respond = median_us(respond_from, decided, rec) - median_us(restore, decided)
    return {"decide": decide, "recommend": recommend, "respond": respond}


def measure_env_step(episodes: int) -> dict:
    """Median over episodes of the mean PopulationEnv step (one tick, exact-linear)."""
    import numpy as np

    from lab.envs import PopulationEnv

    env = PopulationEnv("paper")
    env.reset(seed=0)
    action = np.zeros(1, dtype=np.float32)
    per_step = []
    for _ in range(episodes):
        env.reset()
        steps, done = 0, False
        start = time.perf_counter()
        while not done:
            done = env.step(action)[2]
            steps += 1
        per_step.append((time.perf_counter() - start) / steps)
    return {"step_ms": 1000 * statistics.median(per_step)}


def measure_scorer(rows: int, repeats: int) -> dict:
    """linear_logit on (rows, 10) features against the plain np.add.reduce it replaces."""
    import numpy as np

    from abm.interfaces import linear_logit

    rng = np.random.default_rng(0)
    X, w = rng.random((rows, 10)), rng.standard_normal(10)

    def timed(fn) -> float:
        fn()  # warm: the order check runs once per z
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return 1000 * statistics.median(runs)

    same = linear_logit(X, w, 0.5).tobytes() == (np.add.reduce(X * w, axis=1) + 0.5).tobytes()
    return {
        "blocked_ms": timed(lambda: linear_logit(X, w, 0.5)),
        "plain_ms": timed(lambda: np.add.reduce(X * w, axis=1) + 0.5),
        "same_bits": same,
    }


def child(args: argparse.Namespace) -> None:
    if args.scorer:
        out = measure_scorer(args.pool, args.repeats)
    elif args.env:
        out = measure_env_step(args.repeats)
    elif args.floor:
        out = measure_tick_floor(args.pool, args.repeats)
    elif args.episode:
        out = measure_episode(args.agents, args.repeats)
    else:
        out = measure_pool(args.pool, args.ticks, args.agents, args.scenario)
    print(json.dumps(out))


def spawn(*flags: str) -> dict:
    cmd = [sys.executable, __file__, "--child", *flags]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="skip the 1,000,000 pool")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--episode", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--env", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scorer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pool", type=int, default=20, help=argparse.SUPPRESS)
    parser.add_argument("--ticks", type=int, default=100, help=argparse.SUPPRESS)
    parser.add_argument("--agents", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", default="paper", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=15, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    console = Console(width=max(Console().width, 120))  # keep the pool table readable in a pipe
    episode = Table(title="paper-scale episode (N0=20, k=9, m=10, 100 ticks), median of 15")
    for col in (
        "agent handles",
        "run (ms)",
        "construct + run (ms)",
        "before / now",
        f"target < {TARGET_EPISODE_MS:.0f} ms",
    ):
        episode.add_column(col, justify="right")
    for agents in (False, True):
        r = spawn("--episode", *(["--agents"] if agents else []))
        ok = "yes" if r["run_ms"] < TARGET_EPISODE_MS else "no"
        speedup = f"{BEFORE['episode_ms'] / r['run_ms']:.2f}x" if not agents else "-"
        episode.add_row(
            "on" if agents else "off",
            f"{r['run_ms']:.1f}",
            f"{r['total_ms']:.1f}",
            speedup,
            ok if not agents else "-",
        )
    console.print(episode)
    r = spawn("--floor", "--pool", "10", "--repeats", "500")
    floor_us = r["decide"] + r["recommend"] + r["respond"]
    console.print(
        f"best case, each half of a tick replayed on a warm cache: decide {r['decide']:.0f} + "
        f"policy {r['recommend']:.0f} + respond {r['respond']:.0f} = {floor_us:.0f} µs a tick, "
        f"{floor_us / 10:.1f} ms per 100 ticks (the current calls cannot beat this)"
    )
    r = spawn("--env", "--repeats", "5")
    console.print(
        f"PopulationEnv step: {r['step_ms']:.3f} ms ({BEFORE['env_step_ms'] / r['step_ms']:.2f}x "
        f"faster than before; target < {TARGET_ENV_STEP_MS} ms: "
        f"{'yes' if r['step_ms'] < TARGET_ENV_STEP_MS else 'no'})"
    )
    r = spawn("--scorer", "--pool", "1000000", "--repeats", "7")
    console.print(
        f"linear_logit on 1,000,000 x 10: {r['blocked_ms']:.1f} ms blocked, {r['plain_ms']:.1f} ms "
        f"plain np.add.reduce ({r['plain_ms'] / r['blocked_ms']:.2f}x; same bits: {r['same_bits']})"
    )

    # paper: T = 1, everyone waiting reapplies; paper-T5: a pool that carries over (T = 5)
    plan = [
        (20, 200, True, "paper"),
        (20, 200, False, "paper"),
        (2_000, 100, True, "paper"),
        (2_000, 100, False, "paper"),
        (200_000, 10, False, "paper"),
        (1_000_000, 8, False, "paper-T5"),
        (1_000_000, 5, False, "paper"),
    ]
    if args.quick:
        plan = [p for p in plan if p[0] < 1_000_000]
    table = Table(title="threshold policy throughput (one core, events off)")
    for col in (
        "scenario",
        "pool",
        "agent handles",
        "ticks",
        "candidate-ticks",
        "seconds",
        "candidate-ticks/s",
        "peak RSS (MB)",
    ):
        table.add_column(col, justify="right")
    for pool, ticks, agents, scenario in plan:
        flags = ["--pool", str(pool), "--ticks", str(ticks), "--scenario", scenario]
        r = spawn(*flags, *(["--agents"] if agents else []))
        table.add_row(
            scenario,
            f"{pool:,}",
            "on" if agents else "off",
            str(ticks),
            f"{r['candidate_ticks']:,}",
            f"{r['seconds']:.3f}",
            f"{r['rate']:,.0f}",
            f"{r['peak_mb']:.0f}",
        )
        last = r
    console.print(table)
    if not args.quick:
        console.print(
            f"pool 1,000,000: {last['rate'] / BEFORE['rate_1m']:.2f}x before, "
            f"{last['rate'] / TARGET_RATE:.2f}x the {TARGET_RATE:,} candidate-ticks/s target; "
            f"peak RSS {last['peak_mb']:.0f} MB ({last['peak_mb'] / TARGET_PEAK_MB:.2f}x the 2 GB budget)"
        )


if __name__ == "__main__":
    main()
