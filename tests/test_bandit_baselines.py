"""The classic agents: regret against closed forms and each other, coverage, hand-checked choices."""

import math

import numpy as np
import pytest

from paperlib.bandits.agents import AGENTS, make_agent
from paperlib.bandits.baselines import BASELINES
from paperlib.bandits.env import BanditSpec, History
from paperlib.bandits.runner import run_bandit


def mean_regret(name, spec, instances=64, seed=0, **options):
    episodes, steps = run_bandit(make_agent(name, **options), spec, instances, seed)
    return episodes["regret"].mean(), episodes, steps


def test_random_regret_matches_its_closed_form():
    # E[mu* - mu_a] for k U(0,1) means and a uniform arm: k/(k+1) - 1/2, so 50 * (10/11 - 1/2) = 20.45;
    # per instance the regret has sd ~ 50 * 0.1, so 512 instances put the mean within ~0.25
    regret, _, _ = mean_regret("random", BanditSpec(10), instances=512)
    assert regret == pytest.approx(50 * (10 / 11 - 0.5), abs=1.0)


def test_ucb_and_thompson_beat_random_by_far_on_a_long_horizon():
    # 10 arms, 1000 steps, low noise, 64 instances. Measured at seeds 0/1000/2000:
    # random 395-400, ucb 56-59, epsilon_greedy 55-59, thompson 6.6-7.3, greedy 350-420
    spec = BanditSpec(10, horizon=1000)
    random, _, _ = mean_regret("random", spec)
    assert mean_regret("ucb", spec)[0] < 0.2 * random
    assert mean_regret("thompson", spec)[0] < 0.05 * random
    assert mean_regret("epsilon_greedy", spec)[0] < 0.25 * random
    assert mean_regret("greedy", spec)[0] > 0.6 * random  # it locks onto its first arm


def test_ucb_regret_grows_sublinearly():
    regret = [mean_regret("ucb", BanditSpec(10, horizon=t))[0] for t in (500, 2000)]
    assert regret[1] < 2 * regret[0]  # linear growth would be 4x; measured 42 -> 76


def test_at_the_papers_horizon_ucb_is_only_somewhat_better_than_random():
    # 10 arms, 50 steps: UCB spends 10 steps trying every arm and its alpha = 0.5 bonus keeps
    # exploring, so it earns only ~40% less regret than random. Measured ucb/random at seeds
    # 0/1000/2000: 0.583, 0.578, 0.579 (11.5 vs 19.8); thompson/random 0.24-0.25.
    spec = BanditSpec(10)
    random, _, _ = mean_regret("random", spec)
    assert 0.50 < mean_regret("ucb", spec)[0] / random < 0.66
    assert 0.15 < mean_regret("thompson", spec)[0] / random < 0.35


def test_thompson_on_bernoulli_bandits():
    # measured: random 396, ucb 57, thompson 29 at seed 0
    spec = BanditSpec(10, horizon=1000, family="bernoulli")
    assert mean_regret("thompson", spec)[0] < 0.1 * mean_regret("random", spec)[0]


@pytest.mark.parametrize("k", [5, 10, 20])
def test_ucb_tries_every_arm_in_its_first_k_steps(k):
    _, _, steps = mean_regret("ucb", BanditSpec(k), instances=8)
    first = steps[steps["turn"] <= k]
    assert (first.groupby("episode")["action"].apply(list) == [list(range(k))] * 8).all()
    assert (steps.loc[steps["turn"] == k, "coverage"] == 1).all()


def test_greedy_covers_far_fewer_arms_than_ucb():
    # low noise: greedy's first arm pays > 0 (mu ~ U(0,1), sigma 0.1), so it rarely leaves it
    _, greedy, _ = mean_regret("greedy", BanditSpec(10))
    _, ucb, _ = mean_regret("ucb", BanditSpec(10))
    assert (ucb["coverage"] == 1).all()
    assert greedy["coverage"].mean() < 0.2  # measured 0.11


def test_greedy_picks_the_best_empirical_mean_and_treats_untried_arms_as_zero():
    agent = make_agent("greedy")
    agent.reset(BanditSpec(3), list(range(200)))
    h = History(200, 3, 5)
    h.record(np.zeros(200, int), np.full(200, 0.4))
    assert (agent.act(h) == 0).all()  # 0.4 beats the untried arms' 0
    h.record(np.zeros(200, int), np.full(200, -1.0))  # arm 0's mean is now -0.3
    choices = agent.act(h)
    assert set(choices) == {1, 2}  # the two untried arms tie at 0; ties break at random


def test_ucb_choice_by_hand():
    # after 6 steps, counts (5, 1), means (0.6, 0.3), alpha 0.5:
    # UCB0 = 0.6 + sqrt(0.5 ln 6 / 5) = 0.6 + 0.4233 = 1.023; UCB1 = 0.3 + sqrt(0.5 ln 6) = 0.3 + 0.9465 = 1.247
    agent = make_agent("ucb")
    agent.reset(BanditSpec(2), [0])
    h = History(1, 2, 10)
    for a, r in [(0, 0.6)] * 5 + [(1, 0.3)]:
        h.record(np.array([a]), np.array([r]))
    assert agent.act(h).tolist() == [1]
    assert 0.6 + math.sqrt(0.5 * math.log(6) / 5) < 0.3 + math.sqrt(0.5 * math.log(6))


def test_epsilon_greedy_at_its_extremes_is_greedy_and_random():
    spec = BanditSpec(10)
    greedy, zero = mean_regret("greedy", spec)[2], mean_regret("epsilon_greedy", spec, epsilon=0.0)[2]
    assert greedy["action"].tolist() == zero["action"].tolist()
    uniform, _, _ = mean_regret("epsilon_greedy", spec, instances=512, epsilon=1.0)
    assert uniform == pytest.approx(50 * (10 / 11 - 0.5), abs=1.0)  # uniform play
    with pytest.raises(ValueError, match="epsilon"):
        make_agent("epsilon_greedy", epsilon=1.5)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_is_seeded(name):
    spec = BanditSpec(5, family="bernoulli")
    first, second = mean_regret(name, spec, 16, seed=3)[2], mean_regret(name, spec, 16, seed=3)[2]
    assert first["action"].tolist() == second["action"].tolist()


def test_make_agent():
    assert AGENTS == ("random", "greedy", "epsilon_greedy", "ucb", "thompson", "llm")
    assert make_agent("ucb").model == "baseline:ucb" and make_agent("ucb").cot is False
    with pytest.raises(ValueError, match="^the LLM agent needs a model name, e.g. gemma3-270m$"):
        make_agent("llm")
    with pytest.raises(ValueError, match="unknown agent 'oracle'"):
        make_agent("oracle")
    with pytest.raises(ValueError, match="model is for the LLM agent"):
        make_agent("ucb", model="x")
