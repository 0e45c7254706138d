"""RL environments (gymnasium check_env), reward eq. 16 and the observation encoding."""

import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("gymnasium", reason="needs the rl extra")
from gymnasium.utils.env_checker import check_env
from observing import observations

from abm.metrics import reward_eq16
from abm.model import RecourseModel
from lab.envs import PopulationEnv, RecommenderEnv
from policies.rl.encoding import encode_observation, observation_size


def _check(env):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a check_env warning is a failure
        check_env(env, skip_render_check=True)


def test_recommender_env_passes_check_env():
    _check(RecommenderEnv("paper", warmup_episodes=1))


@pytest.mark.parametrize("validity", [1, 3])
def test_population_env_passes_check_env(validity):
    env = PopulationEnv("paper", alpha=1.0, tau=1.0, ticks=8, validity=validity)
    _check(env)
    env.close()


def test_recommender_env_reward_is_eq15_and_estimates_difficulty():
    env = RecommenderEnv(
        "paper",
        warmup_episodes=1,
        phi=10.0,
        psi=300.0,
        epsilon=0.01,
        max_step=0.5,
        reward_scale=30.0,
    )
    env.reset(seed=3)
    x, g = env._x.copy(), env._g
    a = np.full(10, 0.1, dtype=np.float32)
    _, r, *_, info = env.step(a)
    x_cf = np.clip(x + 0.5 * 0.1, 0, 1)  # Δ = max_step a
    e = abs(env.ctx.decision_model.score(x_cf[None])[0] - g)
    assert info["error"] == pytest.approx(e)
    assert info["reward_eq15"] == pytest.approx(-300 * max(0.0, e - 0.01))  # warm-up: error only
    assert r == pytest.approx(info["reward_eq15"] / 30.0)  # SAC sees eq. 15 / reward_scale
    assert not np.allclose(env.estimator.d, 0.5)  # d̂ moved from d̂⁰ after one attempt
    env.reset()  # second episode: the cost term is on
    x, g = env._x.copy(), env._g
    d_hat = env.estimator.d.copy()
    _, r, *_, info = env.step(a)
    x_cf = np.clip(x + 0.05, 0, 1)
    c_hat = np.abs(x_cf - x) @ d_hat
    assert info["reward_eq15"] == pytest.approx(-10 * c_hat - 300 * max(0.0, info["error"] - 0.01))


def test_recommender_observation_is_x_g_score_gap_and_d_hat():
    env = RecommenderEnv("paper", warmup_episodes=1)
    obs, _ = env.reset(seed=4)
    z = 10
    s = env.ctx.decision_model.score(env._x[None])[0]
    assert obs.shape == (2 * z + 4,) and env.observation_space.contains(obs)
    np.testing.assert_allclose(obs[:z], env._x, rtol=1e-6)
    logit_gap = (np.log(env._g / (1 - env._g)) - np.log(s / (1 - s))) / 10
    np.testing.assert_allclose(
        obs[z : z + 4], [env._g, s, env._g - s, logit_gap], rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(obs[z + 4 :], env.estimator.d, rtol=1e-6)
    obs, *_ = env.step(np.zeros(z, np.float32))  # d̂ in the observation follows the estimator
    np.testing.assert_allclose(obs[z + 4 :], env.estimator.d, rtol=1e-6)


def test_direction_action_reaches_the_goal_along_the_direction():
    from policies.rl.encoding import direction_to_counterfactual

    env = RecommenderEnv("paper", warmup_episodes=0, action="direction")
    _check(env)
    m = env.ctx.decision_model
    rng = np.random.default_rng(0)
    X = env.generator.sample(50, rng)
    s = m.score(X)
    goals = np.clip(s + rng.uniform(0, 0.3, 50), 0, 0.95)
    A = rng.uniform(-1, 1, (50, 10))
    X_cf = direction_to_counterfactual(X, A, goals, m.score, env.ctx.immutable)
    reach = goals > s
    assert np.all(m.score(X_cf[reach]) >= goals[reach] - 1e-12)
    assert np.abs(m.score(X_cf[reach]) - goals[reach]).max() < 1e-6
    np.testing.assert_array_equal(X_cf[~reach], X[~reach])  # goal met: unchanged
    delta = X_cf[reach] - X[reach]
    assert np.all(delta >= -1e-12)  # non-negative direction u = (a + 1) / 2
    with pytest.raises(ValueError, match="action must be one of"):
        RecommenderEnv("paper", action="absolute")
    with pytest.raises(
        ValueError, match=r"max_step = 0.0 is not allowed; allowed: a number in \(0, 1\]"
    ):
        RecommenderEnv("paper", max_step=0.0)


def test_reward_eq16_handles_undefined_and_zero_ratios():
    floor_term = 1 + 0.9 * np.log(1e-3)
    assert reward_eq16(1.0, 1.0, 2.0, 3.0, 1e-3) == pytest.approx(5.0)
    # an empty window (RF undefined): nothing to measure, reward 0
    assert reward_eq16(float("nan"), float("nan"), 2.0, 3.0, 1e-3) == 0.0
    # nobody carried out their advice (RR undefined, RF = 0): both terms at the floor
    assert reward_eq16(float("nan"), 0.0, 2.0, 3.0, 1e-3) == pytest.approx(5 * floor_term)
    assert reward_eq16(float("nan"), 0.5, 0.0, 1.0, 1e-3) == pytest.approx(1 + 0.9 * np.log(0.5))
    assert reward_eq16(0.0, 1.0, 1.0, 0.0, 1e-3) == pytest.approx(floor_term)
    # elementwise over ticks, the same numbers as one tick at a time
    rr, rf = [1.0, np.nan, 0.2, np.nan], [0.5, 0.0, 0.3, np.nan]
    many = reward_eq16(rr, rf, 7.0, 5.0, 1e-3)
    assert many.tolist() == [reward_eq16(a, b, 7.0, 5.0, 1e-3) for a, b in zip(rr, rf, strict=True)]


@pytest.mark.parametrize("n", [1, 3, 8, 17, 64, 257])
def test_reward_eq16_of_many_ticks_is_each_ticks_own_bits(n):
    """The vector env takes eq. 16 of all its environments' ticks at once (lab.envs): each
    value is what the tick alone gives, bit for bit, whatever the array's length."""
    rng = np.random.default_rng(n)
    den = rng.integers(1, 40, n)
    rr, rf = rng.integers(0, 41, n) % (den + 1) / den, rng.integers(0, 41, n) % (den + 1) / den
    rr[rng.random(n) < 0.2] = np.nan
    rf[rng.random(n) < 0.1] = np.nan
    for alpha, tau in [(1.0, 1.0), (0.3, 2.0), (0.0, 1.0)]:
        many = reward_eq16(rr, rf, alpha, tau, 1e-3)
        pairs = zip(rr.tolist(), rf.tolist(), strict=True)
        alone = [reward_eq16(a, b, alpha, tau, 1e-3) for a, b in pairs]
        assert many.tobytes() == np.array(alone).tobytes()


# The PopulationEnv's observation, reward and info sequence is a golden trace
# (tests/test_golden.py::test_population_env_trace).


def test_population_env_drives_the_model_and_matches_a_plain_run():
    """A constant action through the env gives the same ticks as the model run on its own."""
    env = PopulationEnv("paper", alpha=1.0, tau=1.0, ticks=15)
    obs, info = env.reset(seed=11)
    assert obs.shape == (observation_size(10, 1),) and env.observation_space.contains(obs)
    steps, done = 0, False
    while not done:
        # a = 0: half of max_margin (0.3) above the last threshold
        obs, r, done, trunc, info_step = env.step(np.array([0.0], dtype=np.float32))
        steps += 1
    assert steps == 15
    ours = env.model.tick_table()
    from policies.composite import CompositePolicy
    from policies.goals import LastThreshold
    from policies.recommenders import ExactLinear

    plain = (
        RecourseModel(
            "paper",
            CompositePolicy(LastThreshold(margin=0.15), ExactLinear()),
            seed=info["seed"],
            agents=False,
            record_events=False,
            ticks=15,
        )
        .run()
        .tick_table()
    )
    np.testing.assert_allclose(
        ours[["rr", "rf", "mean_goal"]].to_numpy(np.float64),
        plain[["rr", "rf", "mean_goal"]].to_numpy(np.float64),
        atol=1e-7,
    )
    env.close()


def test_population_env_abandons_an_episode_cleanly():
    env = PopulationEnv("paper", ticks=10)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([0.0], dtype=np.float32))
    env.reset(seed=0)
    env.step(np.array([0.0], dtype=np.float32))
    half_run = env.model
    obs, _ = env.reset(seed=1)  # a new model; the half-run one is simply dropped
    assert env.model is not half_run and env.model.tick == 0
    fresh, _ = PopulationEnv("paper", ticks=10).reset(seed=1)
    np.testing.assert_array_equal(obs, fresh)
    done = False
    while not done:
        *_, done, _, _ = env.step(np.array([0.0], dtype=np.float32))
    with pytest.raises(RuntimeError, match="reset"):  # the episode is over
        env.step(np.array([0.0], dtype=np.float32))
    env.close()


def test_population_env_reward_is_eq16_over_the_step_ticks():
    env = PopulationEnv("paper", alpha=2.0, tau=0.5, ticks=12)
    env.reset(seed=3)
    rewards = []
    done = False
    while not done:
        _, r, done, _, info = env.step(np.array([-0.5], dtype=np.float32))
        rewards.append(r)
        assert info["ticks"] == 1  # m > k: every tick has rejected applicants to advise
    t = env.model.tick_table()
    expected = [reward_eq16(a, b, 2.0, 0.5, 1e-3) for a, b in zip(t["rr"], t["rf"], strict=True)]
    assert rewards == expected


def test_encoding_is_order_invariant():
    obs = observations("paper", 3)[-1]
    s = np.arange(obs.history.ids.shape[0]) * 0.01
    a = encode_observation(obs, s, 9, 100, 1)
    assert a.shape == (observation_size(10, 1),) and np.isfinite(a).all()
    perm = np.random.default_rng(0).permutation(s.shape[0])
    b = encode_observation(obs, s[perm], 9, 100, 1)
    np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("bad", [dict(alpha=-1.0), dict(tau=float("nan")), dict(log_floor=0.0)])
def test_population_env_rejects_bad_parameters(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        PopulationEnv("paper", **bad)


def test_predictor_action_is_a_margin_above_the_last_threshold():
    from policies.rl.encoding import goal_from_action

    a = np.array([[-1.0], [0.0], [1.0], [5.0]])
    np.testing.assert_allclose(goal_from_action(a, 0.6, 0.3), [0.6, 0.75, 0.9, 0.9])
    np.testing.assert_allclose(goal_from_action(a[2:3], 0.9, 0.3), [1.0])  # capped at 1
    np.testing.assert_allclose(goal_from_action(a[1:2], float("nan"), 0.3), [0.15])
    with pytest.raises(
        ValueError, match=r"max_margin = 0.0 is not allowed; allowed: a number in \(0, 1\]"
    ):
        PopulationEnv("paper", max_margin=0.0)


# -- many environments, one batch (issue 49, item 5) --------------------------------------

# k = 10 of 12 at start and 9 entrants a tick: some ticks reject nobody, so episodes fall
# out of step and the batch is split (Batch.part)
_IDLE = dict(ticks=12, k=10, m=9, n_initial=12)


def _same(a, b):
    """Equal structure and bits (NaN equal to NaN), through dicts, lists and object arrays."""
    if isinstance(a, dict):
        assert set(a) == set(b), set(a) ^ set(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif a is None or isinstance(a, str | bool):
        assert a == b
    else:
        x, y = np.asarray(a), np.asarray(b)
        assert x.shape == y.shape and x.dtype == y.dtype, (x, y)
        if x.dtype == object:
            for u, v in zip(x.ravel(), y.ravel(), strict=True):
                _same(u, v)
        else:
            assert np.array_equal(x, y, equal_nan=True), (x, y)


@pytest.mark.parametrize(
    ("scenario", "over", "n"),
    [
        ("paper", {"ticks": 6}, 4),
        ("paper", {"ticks": 4}, 9),  # 8 or more: the episodes' streams seeded in one pass
        ("paper", _IDLE, 4),
        ("paper-T5", {"ticks": 9}, 4),  # windows of several ticks
        ("recession", {"ticks": 9, "capacity_obs": True}, 4),  # a capacity schedule observed
        # each episode's policy answers its own observation, at its own goal
        ("paper", {"ticks": 5, "recommender": "gravitational"}, 4),
    ],
)
def test_vector_env_is_gymnasiums_sync_vector_env_bit_for_bit(scenario, over, n, monkeypatch):
    """Sub-environment i of the batched vector env is PopulationEnv reset with seed + i:
    observations, rewards, flags and infos (final_obs/final_info of same-step resets)."""
    import gymnasium as gym

    import abm.batch
    from lab.envs import PopulationVectorEnv

    parts = []
    part = abm.batch.Batch.part
    monkeypatch.setattr(abm.batch.Batch, "part", lambda b, m: parts.append(m) or part(b, m))
    if scenario == "paper-T5":  # the oldest deferred ticks' columns made on the way
        monkeypatch.setattr(abm.batch, "DEFER_ROWS", 60)
    batched = PopulationVectorEnv(scenario, n, **over)
    sync = gym.vector.SyncVectorEnv(
        [lambda: PopulationEnv(scenario, **over) for _ in range(n)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    assert batched.observation_space == sync.observation_space
    assert batched.action_space == sync.action_space
    _same(batched.reset(seed=7), sync.reset(seed=7))
    rng = np.random.default_rng(0)
    ended = 0
    for step in range(40):
        action = rng.uniform(-1.0, 1.0, (n, 1))
        if step % 2:  # what SB3's actor gives; float64 otherwise, each as it comes
            action = action.astype(np.float32)
        got, want = batched.step(action), sync.step(action)
        _same(got, want)
        assert got[0] in batched.observation_space
        ended += int(got[2].sum())
    assert ended >= n  # every environment was reset at least once on the way
    assert not np.array_equal(got[0][0], got[0][1])  # the envs do differ
    # each episode's record, its columns made from the deferred ticks when read
    assert all(env.model._batch.defer_record for env in batched.envs)
    for env, alone in zip(batched.envs, sync.envs, strict=True):
        pd.testing.assert_frame_equal(
            env.model.tick_table(), alone.model.tick_table(), check_exact=True
        )
        _same(env.model.outcome_card().rows(), alone.model.outcome_card().rows())
    groups = {id(env.model._batch) for env in batched.envs}
    if over is _IDLE:
        assert parts  # episodes fell out of step and went on in batches of their own
    else:
        assert not parts and len(groups) == 1  # in step all along: one batch


def test_sb3_vec_env_is_dummy_vec_env_bit_for_bit():
    """The SB3 adapter gives what DummyVecEnv over as many PopulationEnvs gives."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from lab.envs import PopulationVectorEnv
    from lab.training import BatchedVecEnv

    n = 3
    ours = BatchedVecEnv(PopulationVectorEnv("paper", n, **_IDLE))
    theirs = DummyVecEnv([lambda: PopulationEnv("paper", **_IDLE) for _ in range(n)])
    ours.seed(5)
    theirs.seed(5)
    _same(ours.reset(), theirs.reset())
    _same(ours.reset_infos, theirs.reset_infos)
    rng = np.random.default_rng(1)
    for _ in range(30):
        action = rng.uniform(-1.0, 1.0, (n, 1)).astype(np.float32)
        _same(list(ours.step(action)), list(theirs.step(action)))
        _same(ours.reset_infos, theirs.reset_infos)
    assert ours.get_attr("max_margin") == [0.3] * n
    assert ours.env_is_wrapped(PopulationEnv) == [True] * n


def test_vector_env_refuses_bad_sizes():
    from lab.envs import PopulationVectorEnv

    with pytest.raises(ValueError, match="^n_envs = 0 is not allowed"):
        PopulationVectorEnv("paper", 0)
    env = PopulationVectorEnv("paper", 2, ticks=4)
    with pytest.raises(ValueError, match="3 seeds for 2 environments"):
        env.reset(seed=[1, 2, 3])
