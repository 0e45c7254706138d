"""The batched engine (abm/batch.py): every episode of a batch is bit for bit the run made
alone (tick and candidate tables, summary, outcome card, the pool it ends with), on every
preset with its extensions on, with ragged episodes, per-episode worlds and capacities."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from abm import ConfigError, RecourseModel
from abm.batch import Batch, Decisions
from abm.scenarios import PRESETS


def _same_run(alone: RecourseModel, batched: RecourseModel) -> None:
    pd.testing.assert_frame_equal(alone.tick_table(), batched.tick_table(), check_exact=True)
    pd.testing.assert_frame_equal(
        alone.candidate_table(), batched.candidate_table(), check_exact=True
    )
    a, b = alone.summary(), batched.summary()
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), key
    card_a, card_b = alone.outcome_card(), batched.outcome_card()
    assert repr(card_a.values) == repr(card_b.values) and card_a.reasons == card_b.reasons
    for column, values in alone.population.data.items():
        assert np.array_equal(values, batched.population.data[column], equal_nan=True), column
    assert alone.tick == batched.tick and alone.running == batched.running


def _batch_and_alone(scenario, policy, seeds, **overrides_each):
    """(alone, batched): the runs of ``seeds`` made alone and as one batch; keyword
    arguments are lists, one override per episode."""
    kw = [{k: v[i] for k, v in overrides_each.items()} for i in range(len(seeds))]
    alone = [
        RecourseModel(scenario, policy, seed=s, **k).run() for s, k in zip(seeds, kw, strict=True)
    ]
    models = [RecourseModel(scenario, policy, seed=s, **k) for s, k in zip(seeds, kw, strict=True)]
    Batch.of(models).run()
    return alone, models


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(s, marks=pytest.mark.slow) if s == "large" else s for s in sorted(PRESETS)],
)
def test_each_episode_of_a_batch_is_the_run_made_alone(scenario):
    """Every preset, its extensions on: three episodes of 12 ticks."""
    alone, batched = _batch_and_alone(scenario, "threshold", [0, 1, 2], ticks=[12] * 3)
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [
        ("paper", "none"),
        ("paper", "threshold-estimated"),
        ("paper", "threshold-explore"),
        ("paper", "last-threshold:margin=0.1+exact-linear:weights=true"),
        ("paper", "robust-l1"),
        ("paper", "roar-l1"),
        ("paper", "trend-threshold+exact-linear"),
        ("paper", "threshold-wachter"),
        ("improvement", "improve-linucb"),
        # SCARF trains its generator on first use in a fresh checkout (about 20 s)
        pytest.param("fair-scarf", "scarf", marks=pytest.mark.slow),
        ("paper-T5", "safear"),
    ],
)
def test_policies_with_and_without_state_keep_their_bits(scenario, policy):
    alone, batched = _batch_and_alone(scenario, policy, [3, 4], ticks=[10, 10])
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


@pytest.mark.parametrize(
    ("scenario", "policy", "ready"),
    [
        ("paper", "robust-l1", True),
        ("paper", "robust-linf:alpha=0.1", True),
        ("paper", "robust-l1:alpha=0,target=half", True),
        ("retraining", "robust-l1", True),  # the episodes' models in force part ways
        ("paper", "roar-l1", True),  # each row's Adam stops on its own test
        ("retraining", "roar-linf", True),
        ("paper", "robust-l2", False),  # its search's last bits depend on the other rows
        ("budget", "robust-l1", False),  # the budget paces each episode's advice
    ],
)
def test_the_robust_greedy_answers_every_episode_at_once(scenario, policy, ready):
    """Algorithm 2's exact greedy and ROAR are row-wise (one call for the batch, each
    episode's tick figures its own); the other solvers answer each episode alone. Either way each episode
    is its run alone, policy_* columns included."""
    from abm.interfaces import rows_ready

    ticks = [14, 9, 14]  # ragged: one episode leaves early
    alone, batched = _batch_and_alone(scenario, policy, [5, 6, 7], ticks=ticks)
    assert rows_ready(batched[0].policy) is ready
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)
    table = batched[0].tick_table()
    assert table["policy_lam"].notna().any() and table["policy_n_clipped"].notna().any()
    if scenario == "retraining":  # a refit happened, so episodes' models in force differ
        assert table["model_version"].max() > 0


def test_ragged_episodes_end_apart_and_keep_their_own_capacity():
    """Episodes of 4, 9 and 6 ticks with k 2, 9 and 5: each leaves when it is over and
    keeps its rows; the others go on."""
    alone, batched = _batch_and_alone(
        "paper-T5", "threshold", [5, 6, 7], ticks=[4, 9, 6], k=[2, 9, 5], n_initial=[10, 40, 25]
    )
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)
    assert [m.tick for m in batched] == [4, 9, 6]


def test_episodes_of_different_worlds_score_under_their_own_models():
    """World seeds 0, 1, 2: three decision models, scored row by row in one pass."""
    alone, batched = _batch_and_alone(
        "paper-T5", "threshold", [0, 0, 0], ticks=[15] * 3, world_seed=[0, 1, 2]
    )
    weights = {tuple(m.scorer.weights) for m in batched}
    assert len(weights) == 3
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


def test_a_nonlinear_decision_model_scores_each_episode_alone():
    alone, batched = _batch_and_alone(
        "paper", "none", [0, 1], ticks=[6, 6], decision_model=["mlp", "mlp"], world_seed=[0, 1]
    )
    assert not batched[0].scorer.is_linear
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


def test_a_batch_refuses_episodes_of_other_behaviour():
    models = [RecourseModel("paper", seed=0), RecourseModel("paper", seed=1, beta=0.5)]
    with pytest.raises(ConfigError, match="beta"):
        Batch.of(models)


def test_a_model_of_a_batch_steps_with_its_batch():
    models = [RecourseModel("paper", seed=s, ticks=3) for s in range(2)]
    batch = Batch.of(models)
    with pytest.raises(RuntimeError, match="episode 1 of a batch of 2"):
        models[1].step()
    batch.run()
    assert all(not m.running for m in models)
    with pytest.raises(RuntimeError, match="over"):
        batch.step()
    with pytest.raises(ValueError, match="fresh"):
        Batch.of([RecourseModel("paper", seed=0).run(2)])


def test_a_batch_of_one_is_the_run_alone():
    """RecourseModel.step is its batch of one: stepping that batch is the same run."""
    alone = RecourseModel("improvement", "threshold", seed=9, ticks=8).run()
    m = RecourseModel("improvement", "threshold", seed=9, ticks=8)
    m._batch.run()
    _same_run(alone, m)


# -- the flat kernels: each episode's value is its own call's, bit for bit ----------------


def _segments(rng, n_max=40):
    counts = rng.integers(0, n_max, size=int(rng.integers(1, 9)))
    return counts, np.concatenate([[0], np.cumsum(counts)])


@pytest.mark.parametrize("seed", range(20))
def test_segment_reductions_are_each_episodes_own(seed):
    from abm import metrics, segments

    rng = np.random.default_rng(seed)
    counts, at = _segments(rng, 300)
    x = rng.standard_normal(at[-1]) * 10.0 ** rng.integers(-6, 6, at[-1])
    if seed % 3 == 0:  # undefined values and ties
        x[rng.random(x.shape[0]) < 0.1] = np.nan
        x[rng.random(x.shape[0]) < 0.1] = 0.5
    if seed % 4 == 1:
        x = np.abs(x)
        x[rng.random(x.shape[0]) < 0.05] = np.inf
    sums, means, ginis = (
        segments.sums(x, counts),
        segments.nanmeans(x, counts),
        segments.ginis(x, counts),
    )
    for b in range(counts.shape[0]):
        part = x[at[b] : at[b + 1]].copy()
        assert np.add.reduce(part).tobytes() == sums[b].tobytes() or np.isnan(sums[b])
        assert np.array([metrics.nanmean(part)]).tobytes() == means[b : b + 1].tobytes()
        assert np.array([metrics.gini(part)]).tobytes() == ginis[b : b + 1].tobytes()


@pytest.mark.parametrize("seed", range(12))
def test_stacked_reductions_over_many_episodes_are_each_rows_own(seed):
    """(k, n) arrays over up to 60 episodes of many lengths (the grid path of ginis): each
    row's figures, bit for bit, are its 1-D call's, and those its episodes' own."""
    from abm import metrics, segments

    rng = np.random.default_rng(100 + seed)
    counts = rng.integers(0, 30, size=int(rng.integers(3, 60)))
    at = np.concatenate([[0], np.cumsum(counts)])
    x = np.abs(rng.standard_normal((3, at[-1])))
    if seed % 2:  # ties, equal values, zeros (a sum of 0 is undefined)
        x = np.round(x, 1)
    if seed % 3 == 0:
        x[0] = 0.0
    stacked = (segments.sums(x, counts), segments.nanmeans(x, counts), segments.ginis(x, counts))
    for row in range(x.shape[0]):
        alone = (
            segments.sums(x[row], counts),
            segments.nanmeans(x[row], counts),
            segments.ginis(x[row], counts),
        )
        for got, want in zip(stacked, alone, strict=True):
            assert got[row].tobytes() == want.tobytes()
        for b in range(counts.shape[0]):
            part = x[row, at[b] : at[b + 1]].copy()
            assert np.array([metrics.gini(part)]).tobytes() == alone[2][b : b + 1].tobytes()


def test_eq18_of_a_block_of_rows_is_the_product_of_its_own_array():
    """The record's cost (eq. 18) of a batch takes |x_cf - x| of all rows at once and the
    matrix-vector product of each episode's block of them (a view into the flat array):
    the BLAS product of a block must have the bits of the same rows in an array of their
    own, whatever the block's offset, row length or number of rows."""
    rng = np.random.default_rng(18)
    for _ in range(2000):
        z, n, lo = (int(v) for v in rng.integers(1, 40, size=3))
        moved = np.abs(rng.standard_normal((lo + n + 3, z)))
        d = rng.random(z)
        block = moved[lo : lo + n]
        assert (block @ d).tobytes() == (np.ascontiguousarray(block) @ d).tobytes(), (z, n, lo)


def test_a_plain_batch_keeps_its_record_in_blocks_with_the_same_views():
    """A batch whose episodes read nothing of a tick as it is recorded keeps each tick's
    row and exits once for all (abm.batch.TickBlock): every episode's last row, dashboard
    arrays, card and tick table are still its run alone's."""
    alone, batched = _batch_and_alone(
        "paper",
        "threshold",
        [3, 4, 5],
        ticks=[15] * 3,
        agents=[False] * 3,
        record_events=[False] * 3,
    )
    assert all(m.recorder.plain for m in batched)
    recorder = batched[0].recorder
    # nothing noted until read: the batch's journal holds the ticks once for all
    assert not recorder._exits and len(recorder._journal[0].blocks) == 15
    recorder._sync()
    assert len(recorder._exits) == 15
    assert type(recorder._row) is tuple  # not made a dict until read
    advices, _ = batched[0].recorder._last[1]  # the last tick's advice: flat, none made yet
    assert len(advices) == 3 and not any(advices._made) and advices.cf is not None
    for a, b in zip(alone, batched, strict=True):
        assert repr(a.last_row) == repr(b.last_row)
        ta, tb = a.tick_state, b.tick_state
        for name in ("ids", "scores", "accepted", "goal", "cf_scores", "dropped", "implemented"):
            assert np.array_equal(getattr(ta, name), getattr(tb, name), equal_nan=True), name
        assert ta.threshold == tb.threshold and ta.n_reapplied == tb.n_reapplied
        assert np.array_equal(a.recorder.spent(a.population), b.recorder.spent(b.population))
        _same_run(a, b)


@pytest.mark.parametrize(("size", "keep"), [(1, None), (3, None), (3, 150)])
def test_a_deferred_record_is_made_with_the_same_bits_when_read(size, keep, monkeypatch):
    """A batch that defers its record (what the RL environments read: RR and RF alone)
    keeps each tick's figures and makes the columns when read, or once more than
    DEFER_ROWS applicants' ticks wait: the same tables, cards and dashboard arrays."""
    import abm.batch

    if keep is not None:
        monkeypatch.setattr(abm.batch, "DEFER_ROWS", keep)
    seeds = list(range(7, 7 + size))
    kw = {"agents": False, "record_events": False, "ticks": 15}
    alone = [RecourseModel("paper", "threshold", seed=s, **kw).run() for s in seeds]
    models = [RecourseModel("paper", "threshold", seed=s, **kw) for s in seeds]
    batch = models[0]._batch if size == 1 else Batch.of(models)
    batch.defer_record = True
    batch.run()
    waiting = [block for block, _ in batch._waiting_blocks]
    if keep is None:  # every tick waits: RR and RF read without making the rest
        assert len(waiting) == 15
        rr = batch.last_block.column("rr")
        assert repr(rr) == repr([a.last_row["rr"] for a in alone])
        assert all(block._figures is not None for block in waiting)
        if size > 1:  # a waiting tick keeps neither the applicants' rows nor the advice
            kept = waiting[0]._figures
            assert kept._f.applicants is None and kept._advices is None
    else:  # the oldest were made once more than `keep` applicants' ticks waited
        assert 0 < len(waiting) < 15
        assert waiting[0]._figures is not None and waiting[-1]._figures is not None
    for a, b in zip(alone, models, strict=True):
        ta, tb = a.tick_state, b.tick_state  # the last tick's arrays, before any column
        for name in ("ids", "scores", "accepted", "goal", "cf_scores", "dropped", "implemented"):
            assert np.array_equal(getattr(ta, name), getattr(tb, name), equal_nan=True), name
        _same_run(a, b)
    assert all(block._figures is None for block in waiting)  # made when the tables were read


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kind", ["random", "standard_normal"])
def test_a_tape_reads_each_episodes_stream_as_its_generator_would(seed, kind):
    """abm.rng.BatchTape: ragged draws (some larger than a block), direct reads of a lent
    stream in between, and the generators where plain draws would leave them."""
    from abm.rng import BatchTape, Streams

    rng = np.random.default_rng(seed)
    B = int(rng.integers(2, 7))
    lent, plain = [Streams(s) for s in range(B)], [Streams(s) for s in range(B)]
    tape = BatchTape(lent, "arrivals", length=int(rng.integers(2, 30)), kind=kind)
    for _ in range(25):
        counts = rng.integers(0, 40, B)
        want = [getattr(p.arrivals, kind)(int(c)) for p, c in zip(plain, counts, strict=True)]
        assert tape.draw(counts).tobytes() == np.concatenate(want).tobytes()
        if rng.random() < 0.3:  # another reader of one stream: it is given back first
            b = int(rng.integers(B))
            got = lent[b].arrivals.random(2) if b % 2 else lent[b].uniform("arrivals", 2)
            assert got.tobytes() == plain[b].arrivals.random(2).tobytes()
    for a, p in zip(lent, plain, strict=True):
        a.settle()
        assert a._gens["arrivals"].bit_generator.state == p._gens["arrivals"].bit_generator.state
        assert a.arrivals is a._gens["arrivals"]  # an attribute again once given back


@pytest.mark.parametrize("every_one_full", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_the_top_k_of_many_episodes_is_each_ones_own(seed, every_one_full):
    from abm.selection import select_each, select_top_k

    rng = np.random.default_rng(seed)
    counts, at = _segments(rng, 16)
    if every_one_full:  # more applicants than places in every episode (the usual tick)
        counts += 10
        at = np.concatenate([[0], np.cumsum(counts)])
    ks = rng.integers(1, 10, counts.shape[0])
    n = int(at[-1])
    # ties at the threshold in half the cases: the draw must be the episode's own
    scores = rng.choice([0.2, 0.5, 0.5 + 1e-12, 0.7], n) if seed % 2 else rng.random(n)
    seeds = rng.integers(0, 1000, counts.shape[0])
    gens = [np.random.default_rng(s) for s in seeds]
    accepted, thresholds = select_each(scores, counts, ks, gens)
    for b in range(counts.shape[0]):
        alone = np.random.default_rng(seeds[b])
        a, th = select_top_k(scores[at[b] : at[b + 1]], int(ks[b]), alone)
        assert np.array_equal(a, accepted[at[b] : at[b + 1]])
        assert th == thresholds[b] or (np.isnan(th) and np.isnan(thresholds[b]))
        assert alone.random() == gens[b].random()  # the same draws were used


@pytest.mark.parametrize("seed", range(20))
def test_advice_checked_flat_is_each_episodes_own(seed):
    from abm.advice import checked_advice, checked_rows
    from abm.interfaces import Recommendation

    rng = np.random.default_rng(seed)
    counts, at = _segments(rng, 12)
    n, z = int(at[-1]), 3
    X = rng.random((n, z))
    X_cf = np.clip(X + rng.normal(0, 0.2, (n, z)) * (rng.random((n, z)) < 0.6), 0, 1)
    X_cf[rng.random(n) < 0.2] += 1e-12  # round-off only: no advice
    X_cf[rng.random((n, z)) < 0.05] = 1 + 1e-10  # just outside the box: clipped
    advised = rng.random(n) < 0.8
    rec = Recommendation(
        rng.random(n),
        X_cf,
        advised,
        {"risk": rng.random(n)},
        unreached=~advised & (rng.random(n) < 0.5),
    )
    flat = checked_rows(X, rec, counts, None, "p")
    for b, got in enumerate(flat):
        lo, hi = at[b], at[b + 1]
        part = Recommendation(
            rec.goal[lo:hi],
            rec.X_cf[lo:hi],
            advised[lo:hi],
            {"risk": rec.info["risk"][lo:hi]},
            unreached=rec.unreached[lo:hi],
        )
        alone = checked_advice(X[lo:hi], part, None, "p")
        for name in ("goal", "X", "X_cf", "advised"):
            assert (
                getattr(alone, name).tobytes() == np.ascontiguousarray(getattr(got, name)).tobytes()
            )
        assert alone.counts == got.counts and alone.all_advised == got.all_advised
        assert alone.info.keys() == got.info.keys()
        for key in alone.info:
            assert alone.info[key].tobytes() == got.info[key].tobytes()


def test_advice_that_breaks_a_rule_raises_what_its_episode_raises():
    from abm.advice import checked_advice, checked_rows
    from abm.interfaces import Recommendation

    X = np.full((5, 2), 0.5)
    X_cf = X.copy()
    X_cf[:, 0] = 0.7
    X_cf[3, 1] = 0.9  # episode 1's second row moves the immutable feature 1
    immutable = np.array([False, True])
    rec = Recommendation(np.full(5, 0.6), X_cf)
    with pytest.raises(RuntimeError) as flat:
        checked_rows(X, rec, np.array([2, 3]), immutable, "p")
    with pytest.raises(RuntimeError) as alone:
        checked_advice(X[2:], Recommendation(rec.goal[2:], X_cf[2:]), immutable, "p")
    assert str(flat.value) == str(alone.value) == "policy 'p' changed an immutable feature"


# -- studies run their episodes in batches ----------------------------------------------------


_TIMINGS = ["elapsed_s", "setup_s", "run_s", "finished_at"]


def _stored(out):
    from lab.study import load_study

    ticks, runs = load_study(out)
    runs = runs.drop(columns=[c for c in _TIMINGS if c in runs.columns])
    return ticks, runs


def test_a_study_in_batches_stores_each_runs_own_results(tmp_path):
    """Seeds x policies x worlds, in batches and one episode at a time: the stored ticks
    and runs are the same bits (timings aside), run ids and order included."""
    from lab.study import Study, run_study
    from lab.study.runner import batch_tasks, episode_bytes

    study = Study.build(
        "paper-T5",
        sweep={"policy": ["threshold", "none", "robust-l1"], "world_seed": [0, 1]},
        seeds=3,
        ticks=12,
    )
    tasks = [r.task(study.metrics) for r in study.runs()]
    units = batch_tasks(tasks, workers=1)
    assert len(units) == 3 and all(len(u["batch"]) == 6 for u in units)  # per policy
    assert len(batch_tasks(tasks, workers=2)) == 6  # each group shared out among workers
    two = 2.5 * episode_bytes(tasks[0]["config"]) / 2**20  # two episodes fit
    assert len(batch_tasks(tasks, workers=1, memory_mib=two)) == 9
    batched = run_study(study, tmp_path / "batched", workers=1)
    alone = run_study(study, tmp_path / "alone", workers=1, batch_memory=0)
    assert batched.complete and alone.complete and batched.completed == 18
    for a, b in zip(_stored(tmp_path / "alone"), _stored(tmp_path / "batched"), strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_a_study_resumes_after_its_batches(tmp_path):
    """Runs stored by an earlier invocation are not run again; the rest run in batches."""
    from lab.study import Study, run_study

    small = Study.build("paper", sweep={"policy": ["threshold"]}, seeds=2, ticks=6)
    full = Study.build("paper", sweep={"policy": ["threshold"]}, seeds=5, ticks=6)
    run_study(small, tmp_path / "s", workers=1)
    status = run_study(full, tmp_path / "s", workers=1, force=True)
    assert status.complete
    fresh = run_study(full, tmp_path / "f", workers=1, batch_memory=0)
    assert fresh.complete
    for a, b in zip(_stored(tmp_path / "f"), _stored(tmp_path / "s"), strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_a_bad_batch_memory_is_one_line(tmp_path):
    from lab.study import Study, run_study

    study = Study.build("paper", seeds=1, ticks=2)
    with pytest.raises(ConfigError, match="batch_memory = -1"):
        run_study(study, tmp_path / "x", workers=1, batch_memory=-1)


def test_a_batch_decides_and_responds_in_halves_as_it_steps():
    """decide() hands one observation per episode, respond() takes one recommendation per
    episode (as the RL environment and planners use a model's halves): the same run."""
    stepped = [RecourseModel("paper-T5", "threshold", seed=s, ticks=6) for s in range(3)]
    Batch.of(stepped).run()
    halves = [RecourseModel("paper-T5", "threshold", seed=s, ticks=6) for s in range(3)]
    batch = Batch.of(halves)
    for _ in range(6):
        obs = batch.decide()
        assert [o.tick for o in obs] == [m.tick for m in halves]
        recs = [
            m.policy.recommend(o, m.streams.policy) if o.n_rejected else None
            for m, o in zip(halves, obs, strict=True)
        ]
        batch.respond(recs)
    for a, b in zip(stepped, halves, strict=True):
        _same_run(a, b)


def test_flat_decisions_and_the_journal_follow_episodes_through_a_part():
    """A tick decided flat (each episode's decision made when first read, Decisions) and
    recorded once for the batch (abm.record.Journal): the decisions made are those an
    eager decide() makes, and with one episode's record read mid-run and the batch parted
    at such a tick, every episode is still its run alone."""
    kw = {"agents": False, "record_events": False, "ticks": 12}
    alone = [RecourseModel("paper", "threshold", seed=s, **kw).run() for s in range(4)]
    models = [RecourseModel("paper", "threshold", seed=s, **kw) for s in range(4)]
    twins = [RecourseModel("paper", "threshold", seed=s, **kw) for s in range(4)]
    batch, twin = Batch.of(models), Batch.of(twins)
    batch.run(4)
    twin.run(4)
    # read mid-run: its record notes the journal's 4 ticks now, the rest later
    pd.testing.assert_frame_equal(models[1].tick_table(), twins[1].tick_table())
    batch.decide(lazy=True)
    twin.decide()  # each episode's decision made at once, with its observation
    assert all(type(m._pending) is Decisions for m in models)
    for b in (2, 0, 3, 1):
        made, eager = models[b]._require_pending(), twins[b]._pending
        assert models[b]._pending is made  # made once, then the model's own
        for name in ("t", "threshold", "n_ret", "n_window"):
            x, y = getattr(made, name), getattr(eager, name)
            assert type(x) is type(y) and repr(x) == repr(y), name
        assert np.array_equal(made.scores, eager.scores)
        assert np.array_equal(made.accepted, eager.accepted)
        assert np.array_equal(made.applicants.ids, eager.applicants.ids)
    other = batch.part(np.array([False, True, False, True]))
    for part in (batch, other):
        part.respond(part.advise_rows(part.models[0].policy.recommend_rows))
        part.run()
    for a, b in zip(alone, models, strict=True):
        _same_run(a, b)


def test_a_record_following_a_journal_is_read_and_copied_with_every_tick():
    """Mesa's collector read directly (model.datacollector) notes the journal's ticks as
    the record does, and a copy of a record holds every tick."""
    import copy

    kw = {"agents": False, "record_events": False, "ticks": 6}
    alone = [RecourseModel("paper", "threshold", seed=s, **kw).run() for s in range(2)]
    models = [RecourseModel("paper", "threshold", seed=s, **kw) for s in range(2)]
    Batch.of(models).run()
    collector = models[0].datacollector  # read before the record is
    pd.testing.assert_frame_equal(
        collector.get_model_vars_dataframe(), alone[0].datacollector.get_model_vars_dataframe()
    )
    recorder = copy.deepcopy(models[1].recorder)
    assert recorder._journal is None and recorder.collector._owner() is recorder
    pd.testing.assert_frame_equal(recorder.tick_table(), alone[1].tick_table())


@pytest.mark.parametrize("scenario", ["paper-T5", "lending"])
def test_episodes_leave_mid_tick_and_join_again_with_their_bits(scenario):
    """Batch.part() at a decided tick (the leavers take it with them), each part answered
    row-wise and finished apart for two ticks, then Batch.join() of both: every episode is
    still its run alone; accepted_ids(), accepts() and success_counts() are each episode's
    own."""
    alone = [RecourseModel(scenario, "threshold", seed=s, ticks=9) for s in range(4)]
    for m in alone:
        m.run()
    models = [RecourseModel(scenario, "threshold", seed=s, ticks=9) for s in range(4)]
    batch = Batch.of(models)
    batch.run(3)
    batch.decide()
    for m, ids in zip(models, batch.accepted_ids(), strict=True):
        d = m._pending
        assert np.array_equal(ids, d.applicants.ids[d.accepted])
    counts = np.stack(batch.success_counts(), axis=1).tolist()
    assert counts == [list(m.pending_success()) for m in models]
    # accepts(cid): the same ids, episode by episode (ids repeat across episodes)
    each = batch.accepted_ids()
    for cid in np.unique(np.concatenate(each)).tolist()[:6] + [-1]:
        assert batch.accepts(cid).tolist() == [bool(np.any(ids == cid)) for ids in each]
    other = batch.part(np.array([False, True, False, True]))
    assert [m._episode for m in models] == [0, 0, 1, 1] and (batch.B, other.B) == (2, 2)
    with pytest.raises(ValueError, match="some, not all"):
        batch.part(np.array([True, True]))
    for part in (batch, other):
        part.respond(part.advise_rows(part.models[0].policy.recommend_rows))
    with pytest.raises(ValueError, match="nothing pending"):
        other.decide()
        Batch.join([batch, other])
    other.respond(
        [m.policy.recommend(m.pending_observation(), m.streams.policy) for m in other.models]
    )
    batch.step()
    joined = Batch.join([other, batch])
    assert [m._episode for m in models] == [2, 0, 3, 1]
    joined.run()
    for a, b in zip(alone, models, strict=True):
        _same_run(a, b)


def test_the_pools_windows_are_each_episodes_history():
    """Pool.windows(): every episode's HistoryWindow rows, flat and in the episode's order;
    Batch.decided(): each episode's threshold and rejected."""
    models = [RecourseModel("paper-T5", "threshold", seed=s, ticks=12) for s in range(3)]
    batch = Batch.of(models)
    batch.run(6)
    batch.decide()
    rows, counts = batch.pool.windows(("X_obs", "last_tick", "n_apps", "goal"))
    decided = batch.decided()
    lo = 0
    for b, m in enumerate(models):
        h = m.pending_observation().history
        hi = lo + int(counts[b])
        np.testing.assert_array_equal(rows.X_obs[lo:hi], h.X)
        np.testing.assert_array_equal(rows.last_tick[lo:hi], h.last_tick)
        np.testing.assert_array_equal(rows.n_apps[lo:hi], h.n_applications)
        np.testing.assert_array_equal(rows.goal[lo:hi], h.goal)
        assert decided.thresholds[b] == m.pending_observation().threshold
        assert decided.n_rejected[b] == m.pending_observation().n_rejected
        lo = hi
    assert lo == rows.X_obs.shape[0] and len(batch.pool.dropped) > 1  # dropped of several ticks
