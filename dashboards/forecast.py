""" "If I follow this advice, when will I be accepted?": forked futures of one applicant.

From the newest tick of a run, the model is forked (:mod:`abm.planning`: a snapshot, a
fork with its own random streams, the policy without feedback) twice per future: once
with the applicant shown having made every change of their advice, once with them having
made none. Both forks of future ``key`` draw from the same streams (common random
numbers), so the two arms differ by the applicant's choice, not by luck. Each fork runs
until the applicant is accepted, gives up, or :data:`HORIZON` ticks have passed.

The real run is untouched: forks share the model's arrays only for reading, advise with a
private copy of the policy, and draw from streams of their own
(:class:`~abm.planning.RolloutStreams` of the episode's seed, the tick and the key).
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from abm import collector, segments
from abm.model import RecourseModel
from abm.planning import RolloutStreams, Snapshot, WithoutFeedback
from abm.population import Population

HORIZON = 20  # ticks ahead a forecast looks
DEFAULT_FUTURES = 200  # futures each way
MORE_FUTURES = 200  # futures added on request
CHUNK = 50  # futures each way advanced as one batch between two looks at ``cancel``
ARMS = ("following the advice", "not following it")


@dataclass(frozen=True)
class Start:
    """Where the futures of applicant ``cid`` start: after ``tick`` ticks of the run, one
    snapshot per arm (the applicant's row changed), and a private copy of the policy."""

    cid: int
    tick: int
    seed: int
    snapshots: dict[str, Snapshot]
    policy: WithoutFeedback


def _with_row(
    pop: Population, row: int, X: np.ndarray, implemented: bool, score: float
) -> Population:
    """``pop`` with one row's true features, implemented flag and score replaced (fresh
    arrays for those columns; the others shared)."""
    data = dict(pop.data)
    data["X"] = pop.X.copy()
    data["X"][row] = X
    data["implemented"] = pop.implemented.copy()
    data["implemented"][row] = implemented
    data["score_now"] = pop.score_now.copy()
    data["score_now"][row] = score
    return Population(data, pop.n_features)


def start(model: RecourseModel, cid: int) -> Start | str:
    """The start of ``cid``'s futures from the model's newest tick, or why there is none
    (one line). Call it while the model is not being stepped (a lock)."""
    if model.tick == 0:
        return "no tick run yet"
    pop = model.population
    rows = np.flatnonzero(pop.ids == cid)
    if rows.shape[0] == 0:
        return (
            f"applicant {cid} is not waiting after tick {model.tick - 1} (accepted, "
            "gone or not yet arrived): there is nothing to forecast"
        )
    row = int(rows[0])
    if not pop.advised[row]:
        return f"applicant {cid} got no advice at their last application: nothing to follow"
    snap = model.snapshot()
    scorer = model.scorer
    x_cf, x_seen = pop.X_cf[row], pop.X_obs[row]
    follow = _with_row(pop, row, x_cf, True, float(scorer.score(x_cf[None, :])[0]))
    ignore = _with_row(pop, row, x_seen, False, float(scorer.score(x_seen[None, :])[0]))
    # the policy as forks use it: a copy (forks run beside the live run), sharing the
    # model, its world and its context instead of copying them
    shared = {id(o): o for o in (model, model.world, model.context, model.simulator)}
    policy = WithoutFeedback(copy.deepcopy(model.policy, shared))
    return Start(
        cid,
        model.tick,
        model.config.seed,
        {ARMS[0]: replace(snap, population=follow), ARMS[1]: replace(snap, population=ignore)},
        policy,
    )


def future(begin: Start, arm: str, key: int) -> int | None:
    """Ticks until ``begin.cid`` is accepted in future ``key`` of ``arm`` (1 = the next
    tick), or None when they give up or are not accepted within :data:`HORIZON`."""
    streams = RolloutStreams(begin.seed, begin.tick, key)
    fork = RecourseModel.from_snapshot(begin.snapshots[arm], streams, begin.policy)
    cid = begin.cid
    for ahead in range(1, HORIZON + 1):
        obs = fork.decide()
        if np.any(obs.applicant_ids[obs.accepted] == cid):
            return ahead
        rec = begin.policy.recommend(obs, fork.streams.policy) if obs.n_rejected else None
        fork.respond(rec)
        if not np.any(fork.pool.waiting.ids == cid):
            return None  # gave up
    return None


def futures(begin: Start, keys: Sequence[int]) -> dict[str, list[int | None]]:
    """:func:`future` of each key in ``keys`` in both arms ({arm: [ticks or None, ...]}),
    every fork advanced in one batch (:class:`abm.batch.Batch`): each is bit for bit its
    future alone, so only the cost differs. A future leaves the batch when the applicant
    is accepted or gives up. The arms of one key share their streams' seeds (all keys'
    hashed in one pass, :meth:`RolloutStreams.many`), and the cyclic collector is paused
    over the request (:mod:`abm.collector`)."""
    with collector.paused():
        return _futures(begin, keys)


def _futures(begin: Start, keys: Sequence[int]) -> dict[str, list[int | None]]:
    snaps, twins = [], []
    # twins: each arm's streams start where future(begin, arm, key)'s do; every key's
    # seeds hashed in one pass
    for streams in RolloutStreams.many(begin.seed, begin.tick, list(keys)):
        for arm in ARMS:
            snaps.append(begin.snapshots[arm])
            twins.append(streams.twin())
    # one batch of every fork, built from the two snapshots at once
    batch = RecourseModel.forks(snaps, twins, begin.policy)
    forks = list(batch.models)
    out: list[int | None] = [None] * len(forks)
    at = {id(f): i for i, f in enumerate(forks)}
    policy, cid = begin.policy, begin.cid
    # futures that are over ride along (their draws are their own, so the others' bits
    # are untouched) until a quarter of the batch is over: then they leave together,
    # one cut of every array instead of one a tick
    over = np.zeros(batch.B, dtype=bool)
    for ahead in range(1, HORIZON + 1):
        # a row-wise policy needs no fork's observation
        observed = batch.decide(lazy=policy.rows_ready)
        done = batch.accepts(cid) & ~over
        for b in done.nonzero()[0].tolist():
            out[at[id(batch.models[b])]] = ahead
        over |= done
        if over.all():
            break
        if 4 * np.count_nonzero(over) >= batch.B:
            observed = [o for o, d in zip(observed, over.tolist(), strict=True) if not d]
            batch.part(over)
            over = np.zeros(batch.B, dtype=bool)
        batch.respond(batch.advise(policy, observed))
        waiting = batch.pool.waiting.ids == cid
        over |= segments.count(waiting, batch.pool.counts) == 0  # gave up
        if over.all():
            break
        if 4 * np.count_nonzero(over) >= batch.B:
            batch.part(over)
            over = np.zeros(batch.B, dtype=bool)
    for fork in forks:  # done with: no fork is left in a cycle with its batch
        fork._batch = None
    n = len(ARMS)
    return {arm: out[j::n] for j, arm in enumerate(ARMS)}


def summary(ticks: list[int | None]) -> dict[str, float]:
    """{n, median, p10, p90, never}: quantiles of the ticks until acceptance, a future
    without acceptance counting as later than any (inf), and the share of those."""
    if not ticks:
        return {"n": 0, "median": math.nan, "p10": math.nan, "p90": math.nan, "never": math.nan}
    a = np.array([math.inf if t is None else t for t in ticks], dtype=float)
    q = np.quantile(a, [0.1, 0.5, 0.9], method="inverted_cdf")
    return {
        "n": a.shape[0],
        "p10": float(q[0]),
        "median": float(q[1]),
        "p90": float(q[2]),
        "never": float(np.mean(np.isinf(a))),
    }


def run(
    begin: Start,
    keys: range,
    results: dict[str, list[int | None]],
    publish: Callable[[], None],
    cancel: threading.Event,
    every_s: float = 0.25,
) -> None:
    """Future ``key`` of both arms for each key in ``keys``, appended to ``results``
    ({arm: [...]}); ``publish()`` at most every ``every_s`` seconds and at the end.
    Stops early when ``cancel`` is set."""
    import time

    last = time.monotonic()
    keys = list(keys)
    for lo in range(0, len(keys), CHUNK):
        if cancel.is_set():
            return
        for arm, ticks in futures(begin, keys[lo : lo + CHUNK]).items():
            results[arm].extend(ticks)
        if time.monotonic() - last >= every_s:
            last = time.monotonic()
            publish()
    publish()


def chart_data(results: dict[str, list[int | None]]) -> dict[str, dict[str, list]]:
    """Datasets of the forecast chart: ``main`` the share of futures accepted within h
    ticks, h = 0..HORIZON, per arm {ahead, arm, share}; ``band`` per arm its 10-90 %
    range and median {arm, lo, hi, median} (a bound past the horizon is drawn at it)."""
    main: dict[str, list] = {"ahead": [], "arm": [], "share": []}
    band: dict[str, list] = {"arm": [], "lo": [], "hi": [], "median": []}
    for arm in ARMS:
        ticks = results.get(arm, [])
        if not ticks:
            continue
        a = np.array([math.inf if t is None else t for t in ticks], dtype=float)
        for h in range(HORIZON + 1):
            main["ahead"].append(h)
            main["arm"].append(arm)
            main["share"].append(round(float(np.mean(a <= h)), 4))
        s = summary(ticks)
        band["arm"].append(arm)
        band["lo"].append(min(s["p10"], HORIZON + 0.5))
        band["hi"].append(min(s["p90"], HORIZON + 0.5))
        band["median"].append(min(s["median"], HORIZON + 0.5))
    return {"main": main, "band": band}


CAPTION = (
    "A future is one way the next {h} ticks could go, drawn at random: who arrives, who "
    "gives up and how the applicant's changes turn out. Each future is run twice on the "
    "same draws, once with the applicant making every change advised and once with none, "
    "so the two differ by that choice alone."
)


def plural(n: float, one: str, many: str | None = None) -> str:
    """``n`` with its noun: "1 tick", "2 ticks", "more than 20 ticks" (inf)."""
    if math.isinf(n):
        return f"more than {HORIZON} {many or one + 's'}"
    return f"{n:.0f} {one if n == 1 else many or one + 's'}"


def _band(lo: float, hi: float) -> str:
    """The 10-90 % range of ticks as words: "2 ticks", "1 to 5 ticks"."""
    if lo == hi:
        return plural(lo, "tick")
    first = f"more than {HORIZON}" if math.isinf(lo) else f"{lo:.0f}"
    return f"{first} to {plural(hi, 'tick')}"


def summary_rows(results: dict[str, list[int | None]]) -> list[dict[str, str]]:
    """One row per arm for the forecast's table (:data:`SUMMARY_HEADERS`): {arm, median,
    band, never, futures} as text, the ticks until acceptance counted from the next
    tick (1)."""
    rows = []
    for arm in ARMS:
        s = summary(results.get(arm, []))
        if not s["n"]:
            rows.append({"arm": arm, "median": "—", "band": "—", "never": "—", "futures": "0"})
            continue
        rows.append(
            {
                "arm": arm,
                "median": plural(s["median"], "tick"),
                "band": _band(s["p10"], s["p90"]),
                "never": f"{100 * s['never']:.0f} %",
                "futures": f"{s['n']}",
            }
        )
    return rows


SUMMARY_HEADERS = {
    "arm": "",
    "median": "accepted after (median)",
    "band": "10–90 % of futures",
    "never": f"not accepted within {HORIZON} ticks",
    "futures": "futures",
}
