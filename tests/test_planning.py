"""The public two-phase tick (decide / respond) and snapshots and forks (abm.planning)."""

import copy

import numpy as np
import pandas as pd
import pytest

from abm import RecourseModel
from abm.interfaces import Recommendation
from abm.planning import RolloutStreams, Simulator, Snapshot, WithoutFeedback
from abm.population import Population
from abm.registry import make_policy
from abm.rng import STREAMS, Streams, _spawn_keys, seed_states, seed_states_many
from abm.validation import ConfigError


def _model(policy="threshold", scenario="paper-T5", seed=4, ticks=12, **kw):
    return RecourseModel(scenario, policy, seed=seed, ticks=ticks, agents=False, **kw)


def test_step_is_decide_recommend_respond():
    stepped = _model().run()
    by_hand = _model()
    while by_hand.running:
        obs = by_hand.decide()
        rec = by_hand.policy.recommend(obs, by_hand.streams.policy) if obs.n_rejected else None
        by_hand.respond(rec)
    pd.testing.assert_frame_equal(stepped.tick_table(), by_hand.tick_table())
    pd.testing.assert_frame_equal(stepped.candidate_table(), by_hand.candidate_table())


def test_decide_and_respond_must_alternate():
    model = _model()
    with pytest.raises(RuntimeError, match="call decide"):
        model.respond(None)
    obs = model.decide()
    assert obs.tick == 0 and obs.n_rejected > 0
    with pytest.raises(RuntimeError, match="already decided"):
        model.decide()
    with pytest.raises(TypeError, match="needs a Recommendation"):
        model.respond(None)  # somebody was rejected: advice is required
    model.respond(model.policy.recommend(obs, model.streams.policy))
    assert model.tick == 1 and model.last_row["tick"] == 0


def test_respond_validates_before_anything_changes():
    model = _model()
    obs = model.decide()
    n, z = obs.X.shape
    population, tick = model.population, model.tick
    bad = [
        (Recommendation(goal=np.full(n - 1, 0.7), X_cf=obs.X[1:]), "expected"),
        (Recommendation(goal=np.full(n, 0.7), X_cf=obs.X + 2.0), "outside"),
    ]
    for rec, message in bad:
        with pytest.raises(RuntimeError, match=message):
            model.respond(rec)
        assert model.population is population and model.tick == tick
    good = model.policy.recommend(obs, model.streams.policy)
    model.respond(good)  # the decision was still pending
    assert model.tick == tick + 1


def test_snapshot_shares_state_and_a_fork_replays_the_model():
    model = _model()
    model.run(3)
    model.decide()
    snap = model.snapshot()
    assert isinstance(snap, Snapshot) and snap.tick == 3 and snap.pending is not None
    assert snap.population is model.population  # no copies: populations are never mutated
    # a fork with copies of the model's own streams and policy runs the very same ticks
    fork = RecourseModel.from_snapshot(snap, copy.deepcopy(model.streams), model.policy)
    n_agents = len(model.agents)
    for _ in range(4):
        for m in (model, fork):
            obs = m.pending_observation()
            m.respond(m.policy.recommend(obs, m.streams.policy))
            m.decide()
        assert fork.tick == model.tick
        np.testing.assert_array_equal(fork.population.ids, model.population.ids)
        np.testing.assert_array_equal(fork.population.X, model.population.X)
        assert fork.pending_success() == model.pending_success()
    assert len(model.agents) == n_agents  # the fork registered nothing with Mesa
    assert fork.running and not hasattr(fork, "datacollector")


def test_a_fork_leaves_the_model_unchanged():
    model = _model()
    reference = _model().run()
    while model.running:
        obs = model.decide()
        before = {n: g.bit_generator.state for n, g in model.streams._gens.items()}
        snap = model.snapshot()
        fork = RecourseModel.from_snapshot(
            snap, RolloutStreams(snap.config.seed, snap.tick, 0), WithoutFeedback(model.policy)
        )
        fork.run(3)
        assert {n: g.bit_generator.state for n, g in model.streams._gens.items()} == before
        assert model.snapshot() == snap
        model.respond(model.policy.recommend(obs, model.streams.policy))
    pd.testing.assert_frame_equal(model.tick_table(), reference.tick_table())


def test_simulator_serves_callers_outside_the_policy():
    # an env-like driver can plan between decide() and respond() too
    model = _model(scenario="paper", ticks=5)
    simulate = model.context.extra["simulator"]
    assert isinstance(simulate, Simulator)
    with pytest.raises(RuntimeError, match="between decide"):
        simulate(1)
    obs = model.decide()
    rows = simulate(2, key=1)
    assert [r["tick"] for r in rows] == [obs.tick + 1, obs.tick + 2]
    assert rows == simulate(2, key=1)  # equal keys replay equal draws
    assert set(rows[0]) == {"tick", "n_succ", "n_succ_accepted", "n_rejected_window", "rr", "rf"}
    with pytest.raises(ValueError, match="ticks must be an integer >= 1"):
        simulate(0)


def test_rollout_streams_are_those_of_seed_tick_and_key():
    a, b = RolloutStreams(5, 3, 1), RolloutStreams(5, 3, 1)
    x = a.dropout.random(4)
    np.testing.assert_array_equal(x, b.get("dropout").random(4))
    a.rewind()
    np.testing.assert_array_equal(x, a.dropout.random(4))
    assert not np.array_equal(x, RolloutStreams(5, 3, 2).dropout.random(4))
    assert not np.array_equal(x, RolloutStreams(5, 4, 1).dropout.random(4))


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2**31 + 7, 2**32, 2**64 + 5, 2**130 + 3])
def test_seed_states_are_numpys_seed_sequence_words(seed, loop):
    """The vectorised hash (NumPy, or the compiled loop for keys of one-word parts)
    equals SeedSequence(seed, spawn_key=k).generate_state(4, np.uint64) for keys of every
    length (none, one word, many, words above 2^32), the edges of a word included."""
    rng = np.random.default_rng(seed % 2**32)
    words = rng.integers(0, 2**62, (300, 6)) >> rng.integers(0, 62, (300, 6))
    lengths = rng.integers(1, 7, 300).tolist()
    keys = [()] + [tuple(row[:n]) for row, n in zip(words.tolist(), lengths, strict=True)]
    keys += [(0,), (2**32,), (2**70 + 1, 3), (1, 2, 3, 4, 5, 6, 7, 8, 9)]
    plain = [tuple(row[:4]) for row in (words >> 30).tolist()]  # one word a part, as streams'
    plain += [(0, 0, 0, 0), (2**32 - 1,) * 4]
    wide = [(2**64 + 1, 3)] * 3  # parts past 63 bits, keys of one length
    for ks in (keys, plain, wide):
        want = [np.random.SeedSequence(seed, spawn_key=k).generate_state(4, np.uint64) for k in ks]
        np.testing.assert_array_equal(seed_states(seed, ks, loop=loop), np.array(want))
    for bad in ([(1, -2)], [(1, 2), (-1, 2)]):
        with pytest.raises(ValueError, match="non-negative"):
            seed_states(seed, bad, loop=loop)


@pytest.mark.parametrize("n", [1, 7, 8, 40])
def test_streams_seeded_together_are_those_made_one_at_a_time(n):
    """Streams.many (one hashing pass from 8 seeds on, seed by seed below or for seeds
    past 32 bits) gives each seed's Streams: its words are numpy's SeedSequence's, and
    every stream, an extra one included, draws the same."""
    rng = np.random.default_rng(n)
    seeds = rng.integers(0, 2**31 - 1, n).tolist()
    seeds[0] = 0 if n < 8 else 2**32 - 1  # the edges of one word
    keys = _spawn_keys(STREAMS)
    want = [
        [np.random.SeedSequence(s, spawn_key=k).generate_state(4, np.uint64) for k in keys]
        for s in seeds
    ]
    np.testing.assert_array_equal(seed_states_many(seeds, keys), np.array(want))
    wide = [2**40 + 3] + seeds  # a seed of two words: seed by seed
    np.testing.assert_array_equal(
        seed_states_many(wide, keys), np.stack([seed_states(s, keys) for s in wide])
    )
    for together, s in zip(Streams.many(seeds), seeds, strict=True):
        alone = Streams(s)
        assert together.seed == s
        for name in [*STREAMS, "traits"]:
            np.testing.assert_array_equal(together.get(name).random(4), alone.get(name).random(4))


def test_a_model_takes_only_its_own_seeds_streams():
    """Streams made ahead serve the model of their seed, with the same run; others are a
    one-line error naming the field."""
    alone = _model(ticks=4).run().tick_table()
    given = _model(ticks=4, streams=Streams(4)).run().tick_table()
    pd.testing.assert_frame_equal(given, alone, check_exact=True)
    with pytest.raises(ConfigError, match=r"streams: 5 are not the episode's streams"):
        _model(streams=Streams(5))


def test_rollout_streams_seeded_together_are_those_made_one_at_a_time():
    many = RolloutStreams.many(11, 4, [0, 3, 9])
    for key, streams in zip([0, 3, 9], many, strict=True):
        alone = RolloutStreams(11, 4, key)
        for name in ["dropout", "ties", "arrivals", "traits", "mesa"]:  # seeded together or not
            np.testing.assert_array_equal(streams.get(name).random(5), alone.get(name).random(5))
        start = RolloutStreams(11, 4, key).dropout.random(5)
        np.testing.assert_array_equal(streams.twin().dropout.random(5), start)
        streams.rewind()
        np.testing.assert_array_equal(streams.dropout.random(5), start)


def test_a_decisions_copy_has_every_slot_and_its_own_states():
    """Decision.copy names its slots one by one (a fork makes one per rollout): every
    slot, present or added later, must come across; the mechanism states are copies."""
    from abm.tick import Decision

    d = Decision(3, 0.5, Population.empty(2), np.ones(2), np.ones(2, bool), 1, 4)
    for i, name in enumerate(Decision.__slots__):
        setattr(d, name, [i])  # a distinct object per slot
    d.states = ([7], [8])  # each mechanism's state
    other = d.copy()
    for name in Decision.__slots__:
        if name == "states":
            assert other.states == tuple(d.states) and other.states[0] is not d.states[0]
        else:
            assert getattr(other, name) is getattr(d, name), name


def test_rollout_streams_read_as_attributes_are_the_streams_and_rewind():
    s = RolloutStreams(5, 3, 1)
    gen = s.get("dropout")
    assert s.dropout is gen and s.get("dropout") is gen  # kept as an attribute once made
    x = s.dropout.random(3)
    s.rewind()
    np.testing.assert_array_equal(s.dropout.random(3), x)
    assert s.seed == 5  # a stream never shadows the object's own attributes


def test_simulator_takes_one_snapshot_per_pending_decision():
    model = _model(scenario="paper", ticks=5)
    simulate = model.context.extra["simulator"]
    model.decide()
    snap = simulate._snapshot()
    rows = simulate(2, key=0)
    assert simulate._snapshot() is snap and snap.tick == 0
    # a fresh snapshot rolls out the same
    simulate._snap = None
    assert simulate(2, key=0) == rows and simulate._snapshot() is not snap
    model.respond(model.policy.recommend(model.pending_observation(), model.streams.policy))
    model.decide()  # the next decision: a new snapshot
    assert simulate._snapshot().tick == 1


def test_decide_without_observation_counts_the_same():
    a, b = _model(), _model()
    for m in (a, b):
        m.run(3)
    obs = a.decide()
    assert b.decide(observe=False) is None and obs is not None
    assert a.pending_success() == b.pending_success()
    assert b.snapshot().population is b.population


def test_without_feedback_hides_observe():
    policy = make_policy("threshold-estimated")
    wrapped = WithoutFeedback(policy)
    assert wrapped.observe is None and wrapped.recommend == policy.recommend


class _Counting:
    """A policy that counts its calls; ``deterministic`` as given."""

    def __init__(self, policy, deterministic):
        self.policy, self.deterministic, self.calls = policy, deterministic, 0

    def prepare(self, ctx):
        self.policy.prepare(ctx)

    def recommend(self, obs, rng):
        self.calls += 1
        return self.policy.recommend(obs, rng)

    def observe(self, feedback):
        self.policy.observe(feedback)


@pytest.mark.parametrize("ticks", [1, 3])
def test_rollouts_of_one_plan_share_the_first_advice(ticks):
    policy = _Counting(make_policy("threshold"), deterministic=True)
    model = _model(policy=policy, scenario="paper-T5", ticks=20)
    model.run(4)
    model.decide()
    policy.calls = 0
    simulate = model.context.extra["simulator"]
    plain = [simulate(ticks, key=r) for r in range(3)]
    asked = policy.calls
    assert asked == 3 * ticks  # once a simulated tick without a plan
    shared = [simulate(ticks, key=r, plan="a") for r in range(3)]
    assert shared == plain  # the same rollouts, draw for draw
    # the first tick's answer is asked for once for all three keys
    assert policy.calls - asked == 1 + 3 * (ticks - 1)
    simulate(ticks, key=0, plan="b")  # another plan asks again
    assert policy.calls - asked == 2 + 4 * (ticks - 1)


def test_a_policy_not_deterministic_is_asked_every_rollout():
    policy = _Counting(make_policy("threshold"), deterministic=False)
    model = _model(policy=policy, scenario="paper", ticks=6)
    model.decide()
    policy.calls = 0
    simulate = model.context.extra["simulator"]
    for r in range(3):
        simulate(1, key=r, plan=0)
    assert policy.calls == 3


def test_shared_advice_is_that_of_the_pending_decision():
    # a new decision asks again under the same plan
    policy = _Counting(make_policy("threshold"), deterministic=True)
    model = _model(policy=policy, scenario="paper", ticks=6)
    model.decide()
    simulate = model.context.extra["simulator"]
    simulate(1, key=0, plan=0)
    model.respond(model.policy.recommend(model.pending_observation(), model.streams.policy))
    model.decide()
    calls = policy.calls
    rows = simulate(1, key=0, plan=0)
    assert policy.calls == calls + 1 and rows[0]["tick"] == 2


def test_advice_for_is_what_respond_validates():
    a, b = _model(), _model()
    for m in (a, b):
        m.run(2)
    obs_a, obs_b = a.decide(), b.decide()
    a.respond(a.policy.recommend(obs_a, a.streams.policy))
    advice = b.advice_for(b.policy.recommend(obs_b, b.streams.policy))
    b.respond(advice)
    a.run(3)
    b.run(3)
    pd.testing.assert_frame_equal(a.tick_table(), b.tick_table())
    pd.testing.assert_frame_equal(a.candidate_table(), b.candidate_table())
    b.decide()
    n, z = b.pending_observation().X.shape
    with pytest.raises(RuntimeError, match="outside"):
        b.advice_for(Recommendation(goal=np.full(n, 0.7), X_cf=np.full((n, z), 2.0)))


def test_a_forks_last_entrants_are_kept_for_its_key():
    model = _model(scenario="paper", ticks=8)
    model.run(2)
    model.decide()
    simulate = model.context.extra["simulator"]
    first = simulate(2, key=1, plan="a")
    streams = simulate.streams(model.config.seed, model.tick, 1)
    kept = [k for k in streams.memo if k[0] == "arrivals"]
    assert [k[1] for k in kept] == [model.tick + 2]  # the last tick's only
    # a rollout with the key reuses them and counts what one without the memo counts
    again = simulate(2, key=1, plan="a")
    streams.memo.clear()
    assert again == first == simulate(2, key=1, plan="a")


def test_deterministic_flags_of_the_built_in_parts():
    assert make_policy("threshold").deterministic
    assert make_policy("lookahead").deterministic
    assert not make_policy("threshold-explore").deterministic
    assert not make_policy("trend-threshold+exact-linear").deterministic
    assert not getattr(make_policy("robust-l1"), "deterministic", False)  # says nothing


def _fresh_simulator(policy, scenario, ticks=16, at=4, seed=4):
    model = _model(policy=policy, scenario=scenario, ticks=ticks, seed=seed)
    model.run(at)
    model.decide()
    return model, model.context.extra["simulator"]


@pytest.mark.parametrize(
    ("policy", "scenario", "ticks", "plans"),
    [
        ("threshold", "paper", 1, [0, 1, None]),
        ("threshold", "paper-T5", 3, ["a", "b"]),
        ("robust-l1", "paper-T5", 2, [0]),  # a policy answered fork by fork
        ("threshold", "lending", 2, [0, 1]),  # extensions on: no counted last tick
    ],
)
def test_many_rollouts_in_one_batch_are_the_rollouts_one_at_a_time(policy, scenario, ticks, plans):
    """Simulator.many: every (key, plan) rollout's rows, bit for bit, whatever the order of
    the runs and with keys repeated across plans (each fork has streams of its own)."""
    runs = [(r, p) for p in plans for r in (2, 0, 1)]
    _, simulate = _fresh_simulator(policy, scenario)
    alone = [simulate(ticks, key=k, plan=p) for k, p in runs]
    _, again = _fresh_simulator(policy, scenario)
    seen = []
    batched = again.many(ticks, runs, on_plan=seen.append)
    assert batched == alone
    assert seen and all(set(s) <= set(plans) for s in seen)
    assert not again.running
    # the planner's arrays: rr and rf of every run and tick, NaN where undefined
    _, arrays = _fresh_simulator(policy, scenario)
    rr, rf = arrays.rates(ticks, runs)
    assert rr.shape == rf.shape == (len(runs), ticks)
    np.testing.assert_array_equal(rr, [[row["rr"] for row in rows] for rows in alone])
    np.testing.assert_array_equal(rf, [[row["rf"] for row in rows] for rows in alone])
    _, one = _fresh_simulator(policy, scenario)  # a single run: the rows' own figures
    np.testing.assert_array_equal(one.rates(ticks, runs[:1])[0], rr[:1])


@pytest.mark.parametrize("first_ticks", [1, 2])
def test_rollouts_that_read_kept_entrants_draw_later_ones_as_alone(first_ticks):
    """A batch of forks draws each tick's entrants once a key; rollouts of a later call
    that read those and must draw the next tick's themselves draw what they would alone."""
    runs = [(r, p) for p in (0, 1) for r in (1, 0)]
    _, simulate = _fresh_simulator("threshold", "paper")
    alone = [simulate(3, key=k, plan=p) for k, p in runs]
    _, again = _fresh_simulator("threshold", "paper")
    again.many(first_ticks, runs)  # keeps ticks 1..first_ticks' entrants of each key
    assert again.many(3, runs) == alone
    assert [again(3, key=k, plan=p) for k, p in runs] == alone


def test_twin_streams_start_where_their_key_starts_and_share_the_memo():
    streams = RolloutStreams(seed=7, t=3, key=2)
    first = streams.dropout.random(4)
    twin = streams.twin()
    assert np.array_equal(twin.dropout.random(4), first)  # its own generator, from the start
    assert twin.memo is streams.memo
    assert twin.reuse("x", lambda: 5) == 5 and streams.reuse("x", lambda: 6) == 5
    with pytest.raises(RuntimeError, match="twin"):
        twin.rewind()
    streams.rewind()
    assert np.array_equal(streams.dropout.random(4), first)


@pytest.mark.parametrize("seed", range(6))
def test_uniforms_read_from_a_keys_tape_are_its_generators_draws(seed):
    """RolloutStreams.uniform: any rollout's reads, in any sizes and interleaved with its
    twins', are the generator's own draws; a generator asked for after some reads starts
    where they end; a rewind reads from the start again."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 40, 6).tolist()
    want = RolloutStreams(3, 5, seed).dropout.random(sum(sizes) + 9)
    streams = RolloutStreams(3, 5, seed)
    twins = [streams.twin() for _ in range(3)]
    at = [0] * 4
    for n in sizes:
        for i, s in enumerate([streams, *twins]):
            got = s.uniform("dropout", n)
            np.testing.assert_array_equal(got, want[at[i] : at[i] + n])
            assert not got.flags.writeable  # shared by the twins: nobody writes it
            at[i] += n
        twins.append(streams.twin())  # a late twin reads from the start
        at.append(0)
    # another kind of draw makes the generator where this rollout's reading ends
    np.testing.assert_array_equal(twins[0].dropout.random(7), want[at[1] : at[1] + 7])
    np.testing.assert_array_equal(twins[0].uniform("dropout", 2), want[at[1] + 7 : at[1] + 9])
    streams.rewind()
    np.testing.assert_array_equal(streams.uniform("dropout", 5), want[:5])


@pytest.mark.parametrize("seed", range(4))
def test_twins_read_together_draw_what_each_draws_alone(seed):
    """TwinDraws: a batch of twins' uniforms (two keys, counts with zeros, reads that
    advance) are each twin's own reads joined; once a twin reads a stream alone, or makes
    its generator, the batch reads that stream twin by twin and every draw stays its own."""
    from abm.planning import TwinDraws

    rng = np.random.default_rng(seed)
    parents = RolloutStreams.many(9, 4, [0, 1])
    order = [0, 1, 1, 0, 0, 1]
    draws = TwinDraws([parents[k] for k in order])
    fresh = RolloutStreams.many(9, 4, [0, 1])
    alone = [fresh[k].twin() for k in order]
    assert all(s._twins is draws for s in draws.streams)

    def both(name, counts):
        want = np.concatenate([s.uniform(name, n) for s, n in zip(alone, counts, strict=True)])
        got = draws.uniform(name, np.asarray(counts, dtype=np.int64))
        return got, want

    for _ in range(3):
        counts = rng.integers(0, 5, len(order)).tolist()
        counts[1] = 0
        got, want = both("dropout", counts)
        np.testing.assert_array_equal(got, want)
    # twin 2 reads alone: every twin's place goes back, then the batch reads twin by twin
    np.testing.assert_array_equal(
        draws.streams[2].uniform("dropout", 3), alone[2].uniform("dropout", 3)
    )
    assert draws.uniform("dropout", np.ones(len(order), dtype=np.int64)) is None
    for s, a in zip(draws.streams, alone, strict=True):
        np.testing.assert_array_equal(s.uniform("dropout", 2), a.uniform("dropout", 2))
    # a generator made after batch reads starts where they end
    got, want = both("implementation", [2, 1, 0, 3, 1, 1])
    np.testing.assert_array_equal(got, want)
    gen = draws.streams[4].get("implementation")
    np.testing.assert_array_equal(gen.random(3), alone[4].get("implementation").random(3))
    assert draws.uniform("implementation", np.ones(len(order), dtype=np.int64)) is None


def test_forks_reading_together_that_part_go_on_as_forks_reading_alone():
    """A batch of forks whose uniforms are read together (Episodes.together) that parts
    reads them twin by twin from then on (the first twin to read a stream alone gives
    every twin its place back): both batches go on with the draws, counts and pools of
    the same forks reading their streams one by one."""
    from abm.planning import TwinDraws

    model = RecourseModel("paper-T5", "threshold", seed=2, ticks=12, agents=False)
    model.run(5)
    model.decide()
    snap, blind = model.snapshot(), WithoutFeedback(model.policy)
    order = [0, 1, 0, 1, 1, 0]
    leave = np.array([True, False, False, True, False, False])
    seen = []
    for together in (True, False):
        parents = RolloutStreams.many(2, 5, [0, 1])
        draws = TwinDraws([parents[k] for k in order])
        streams = draws.streams if together else [parents[k].twin() for k in order]
        batch = RecourseModel.forks([snap] * len(order), streams, blind)
        batch.episodes.together = draws if together else None
        batch.respond(batch.advise(model.policy))
        batch.decide()
        out = batch.part(leave)
        assert batch.episodes.together is None
        figures = []
        for b in (batch, out):
            b.respond(b.advise(model.policy))
            b.decide()
            figures += [*b.success_counts(), b.pool.waiting.X, b.pool.waiting.ids]
        seen.append(figures)
    for a, b in zip(*seen, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("scenario", ["paper", "lending"])
def test_forks_of_one_snapshot_own_their_state(scenario):
    """RecourseModel.forks: forks of one snapshot share what nothing writes (the config,
    the world, the feature facts, extensions without state) and each owns its streams,
    decision-maker, pending decision and any extension with state."""
    model = RecourseModel(scenario, "threshold", seed=3, ticks=12, agents=False)
    model.run(4)
    model.decide()
    snap = model.snapshot()
    streams = [RolloutStreams(3, 4, key) for key in range(3)]
    forks = RecourseModel.forks([snap] * 3, streams, WithoutFeedback(model.policy)).models
    for b, fork in enumerate(forks):
        assert fork.streams is streams[b] and fork._episode == b
        assert fork.decision_maker.model.streams is fork.streams  # a proxy of the fork
        assert fork.config is snap.config and fork.difficulty is forks[0].difficulty
    for name in ("decision_maker", "_pending"):
        assert len({id(getattr(f, name)) for f in forks}) == 3, name
    stateful = bool(snap.mechanisms.stages)  # lending's: outcomes, retraining
    assert stateful == (scenario == "lending")
    assert len({id(f.mechanisms) for f in forks}) == (3 if stateful else 1)


@pytest.mark.parametrize("scenario", ["paper", "paper-T5", "lending"])
def test_forks_built_in_one_pass_are_the_forks_joined(scenario):
    """RecourseModel.forks (Batch.of_snapshots): the pool, window, counts and decided
    tick of Batch.join over forks made one by one, and the same ticks after."""
    from abm.batch import Batch

    model = RecourseModel(scenario, "threshold", seed=2, ticks=12, agents=False)
    model.run(6)
    model.decide()
    snaps = [model.snapshot(), model.snapshot()]
    order = [0, 1, 1, 0, 0]

    def streams():
        return [RolloutStreams(2, 6, key) for key in range(len(order))]

    policy = WithoutFeedback(model.policy)
    one = [
        RecourseModel.from_snapshot(snaps[i], st, policy)
        for i, st in zip(order, streams(), strict=True)
    ]
    joined = Batch.join([f._batch for f in one])
    built = RecourseModel.forks([snaps[i] for i in order], streams(), policy)
    assert built.B == joined.B == len(order)
    np.testing.assert_array_equal(built.pool.counts, joined.pool.counts)
    for name, column in joined.pool.waiting.data.items():
        np.testing.assert_array_equal(built.pool.waiting.data[name], column)
    assert [t for t, _, _ in built.pool.dropped] == [t for t, _, _ in joined.pool.dropped]
    for (_, a, na), (_, b, nb) in zip(built.pool.dropped, joined.pool.dropped, strict=True):
        np.testing.assert_array_equal(na, nb)
        np.testing.assert_array_equal(a.ids, b.ids)
    for x, y in zip(built._flat, joined._flat, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    for batch in (built, joined):
        batch.respond(batch.advise(model.policy))
        batch.decide()
    np.testing.assert_array_equal(built.success_counts(), joined.success_counts())
    np.testing.assert_array_equal(built.pool.waiting.X, joined.pool.waiting.X)


def test_a_planner_answers_its_own_rollouts_row_wise():
    """The lookahead inside a batch of its rollouts is row-wise (each fork's goal from its
    own margin) and its choices are those of the rollouts asked one at a time."""
    from abm.metrics import reward_eq16
    from policies.lookahead import Lookahead

    look = Lookahead(goals=3, rollouts=2)
    assert not look.rows_ready
    look._plan([0, 2, 1])
    assert look.rows_ready
    np.testing.assert_array_equal(look._rollout_margins, look.margins[[0, 2, 1]])
    batched = RecourseModel("paper-T5", "lookahead:goals=3,rollouts=2", seed=1, ticks=10)
    batched.run()

    class OneAtATime(Lookahead):
        """Every rollout asked for alone, margin after margin (the planner before batches)."""

        def evaluate(self, obs, horizon):
            values = np.empty(self.n_goals)
            for j in range(self.n_goals):
                self._plan([j])
                rows = [row for r in range(self.rollouts) for row in self._simulate(horizon, r, j)]
                self._rollout_margin = self._rollout_margins = None
                rr, rf = [row["rr"] for row in rows], [row["rf"] for row in rows]
                values[j] = reward_eq16(rr, rf, self.alpha, self.tau, self.floor).mean()
            return np.minimum(obs.threshold + self.margins, 1.0), values

    from policies.composite import CompositePolicy
    from policies.recommenders import ExactLinear

    alone = RecourseModel(
        "paper-T5",
        CompositePolicy(OneAtATime(goals=3, rollouts=2), ExactLinear()),
        seed=1,
        ticks=10,
    )
    alone.run()
    pd.testing.assert_frame_equal(
        batched.tick_table(), alone.tick_table(), check_exact=True, check_like=True
    )


@pytest.mark.parametrize(
    "scenario", ["retraining", pytest.param("lending", marks=pytest.mark.slow)]
)
def test_forks_skip_the_shift_figures_share_their_fits_and_roll_out_the_same(monkeypatch, scenario):
    """A planning fork records nothing, so its refits measure no shifts (MMD² tests, the
    bulk of a refit's cost), and the forks of one key fit once on rows they share
    (`retraining` refits on rows drawn from the key's stream, `lending` on outcomes revealed
    of acceptances before the fork): their rollouts are those of forks that measure the
    shifts and fit alone, bit for bit, and the run itself still records its own shifts."""
    from sklearn.linear_model import LogisticRegression

    from abm.mechanisms import Mechanisms
    from abm.mechanisms.retraining import Retraining

    measured, fits = [], []
    shifts, fit = Retraining._shifts, LogisticRegression.fit

    def counted(self, *args):
        measured.append(self.recorded)
        return shifts(self, *args)

    def fitted(self, X, y, *args, **kw):
        fits.append(X.shape[0])
        return fit(self, X, y, *args, **kw)

    monkeypatch.setattr(Retraining, "_shifts", counted)
    monkeypatch.setattr(LogisticRegression, "fit", fitted)
    runs = [(0, 0), (1, 0), (0, 1)]
    model, simulate = _fresh_simulator("threshold", scenario, ticks=14, at=8)
    fits.clear()  # the world's own fit
    skipped = [simulate(4, key=k, plan=p) for k, p in runs], simulate.many(4, runs)
    assert model.mechanisms.find("retraining").recorded and measured == []
    # the refit at tick 10: once a key (2 keys; the batched forks, twins of the same
    # keys, find them made), not once a fork
    assert len(fits) == 2

    fork = Mechanisms.fork
    monkeypatch.setattr(Mechanisms, "fork", lambda self, recorded=True: fork(self))
    _, simulate = _fresh_simulator("threshold", scenario, ticks=14, at=8)
    fits.clear()
    assert ([simulate(4, key=k, plan=p) for k, p in runs], simulate.many(4, runs)) == skipped
    assert len(measured) == len(fits) == 2 * len(runs) and all(measured)  # each fork alone

    measured.clear()
    model.respond(model.policy.recommend(model.pending_observation(), model.streams.policy))
    model.run()
    assert measured == [True]  # its own refit at tick 10
    assert np.isfinite(model.tick_table()["domain_mmd"].to_numpy()[10])
