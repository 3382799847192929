"""The bandit core: seeded means, rewards of the right law, exact bookkeeping."""

import numpy as np
import pytest

from paperlib.bandits.env import COLOURS, BanditEnv, BanditSpec, arm_names, instance_seeds


def test_an_instance_reruns_alone_with_the_same_means_and_rewards():
    spec = BanditSpec(5, horizon=6)
    batch, alone = BanditEnv(spec, [3, 4, 5]), BanditEnv(spec, [4])
    np.testing.assert_array_equal(batch.means[1], alone.means[0])
    arms = [0, 4, 4, 1, 2, 3]
    for a in arms:
        batch.step([2, a, 0])
        alone.step([a])
    np.testing.assert_array_equal(batch.history.rewards[1], alone.history.rewards[0])
    assert instance_seeds(7, 3) == [7, 8, 9]


def test_means_are_uniform_and_differ_between_seeds():
    env = BanditEnv(BanditSpec(10), range(400))
    assert env.means.shape == (400, 10) and (env.means >= 0).all() and (env.means < 1).all()
    assert abs(env.means.mean() - 0.5) < 0.02  # U(0, 1): sd of the mean of 4000 draws is 0.0046
    assert abs(env.best.mean() - 10 / 11) < 0.02  # E[max of 10 U(0,1)] = k / (k + 1)


@pytest.mark.parametrize("noise, sigma", [("low", 0.1), ("medium", 1.0), ("high", 3.0)])
def test_gaussian_rewards_have_mean_mu_and_the_noise_sigma(noise, sigma):
    env = BanditEnv(BanditSpec(3, horizon=50, noise=noise), range(200))
    for _ in range(50):
        env.step(np.zeros(200, int))
    residual = env.history.rewards - env.means[:, [0]]
    assert abs(residual.std() / sigma - 1) < 0.03  # 10 000 draws: sd of the sample sd is ~0.7%
    assert abs(residual.mean()) < 4 * sigma / 100
    np.testing.assert_array_equal(env.expected, np.repeat(env.means[:, [0]], 50, axis=1))


def test_bernoulli_rewards_are_zero_or_one_with_frequency_p():
    env = BanditEnv(BanditSpec(2, horizon=100, family="bernoulli"), range(300))
    for _ in range(100):
        env.step(np.ones(300, int))
    rewards = env.history.rewards
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    assert np.abs(rewards.mean(axis=1) - env.means[:, 1]).mean() < 0.06  # mean abs error ~ 0.04 at n = 100


def test_the_same_arm_at_the_same_step_pays_the_same_in_every_run():
    spec = BanditSpec(4, horizon=3)
    a, b = BanditEnv(spec, [11]), BanditEnv(spec, [11])
    a.step([0]), b.step([1])
    assert a.step([2]) == b.step([2])


def test_history_counts_sums_and_means():
    env = BanditEnv(BanditSpec(3, horizon=4), [0])
    rewards = [env.step([a])[0] for a in (2, 2, 0)]
    h = env.history
    assert h.t == 3 and h.counts.tolist() == [[1, 0, 2]]
    np.testing.assert_allclose(h.sums, [[rewards[2], 0, rewards[0] + rewards[1]]])
    np.testing.assert_allclose(h.means, [[rewards[2], 0, (rewards[0] + rewards[1]) / 2]])
    assert h.actions.tolist() == [[2, 2, 0, -1]] and np.isnan(h.rewards[0, 3])


def test_step_refuses_bad_actions_and_steps_past_the_horizon():
    env = BanditEnv(BanditSpec(3, horizon=1), [0, 1])
    with pytest.raises(ValueError, match="expected 2 arms"):
        env.step([0, 3])
    with pytest.raises(ValueError, match="expected 2 arms"):
        env.step([0])
    env.step([0, 1])
    with pytest.raises(ValueError, match="horizon"):
        env.step([0, 1])


def test_verbal_layer():
    assert arm_names(20) == COLOURS and COLOURS[:5] == ("blue", "green", "red", "yellow", "orange")
    assert COLOURS[-1] == "violet" and len(set(COLOURS)) == 20
    assert BanditSpec(3, variant="continuous").names == ("0", "1", "2")
    assert BanditSpec(25, variant="continuous").k == 25


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 1}, "at least 2 arms"),
        ({"k": 21}, "20 colours"),
        ({"k": 5, "horizon": 0}, "horizon"),
        ({"k": 5, "noise": "extreme"}, "unknown value 'extreme'"),
        ({"k": 5, "family": "poisson"}, "unknown value 'poisson'"),
        ({"k": 5, "variant": "slider"}, "unknown value 'slider'"),
    ],
)
def test_bad_specs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BanditSpec(**kwargs)
