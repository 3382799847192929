"""The standard-API adapters: PettingZoo's and Gymnasium's own checkers, and replays that
must agree with the batched runners (``run_episodes``, ``BanditEnv``) action for action."""

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

from paperlib.bandits.env import BanditEnv, BanditSpec
from paperlib.bandits.gym_env import BanditGymEnv
from paperlib.bandits.metrics import cumulative_regret
from paperlib.bandits.prompts import build_prompt
from paperlib.philosophers.env import NO_ACTION, TOOLS
from paperlib.philosophers.episode import run_episodes
from paperlib.philosophers.parallel_env import PhilosophersParallelEnv, agent_name
from paperlib.philosophers.scripted import SCRIPTED, make_scripted

MODES = ["simultaneous", "sequential"]
REWARD_KEYS = ["r_nd", "r_thru", "r_fair", "r_idle", "reward", "reward_unclipped", "reward_shaped"]


# --- dining philosophers: PettingZoo ParallelEnv -------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [3, 5])
def test_parallel_api_test_passes_without_warnings(n, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(PhilosophersParallelEnv(n, rounds=6, mode=mode), num_cycles=20)


@pytest.mark.parametrize("mode", MODES)
def test_random_rollouts_stay_in_their_spaces_and_end_together(mode):
    env = PhilosophersParallelEnv(5, rounds=12, mode=mode)
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        assert all(env.observation_space(agent).contains(obs[agent]) for agent in env.agents)
        steps = 0
        while env.agents:
            live = list(env.agents)
            actions = {agent: env.action_space(agent).sample() for agent in live}
            obs, rewards, terms, truncs, infos = env.step(actions)
            steps += 1
            assert set(obs) == set(rewards) == set(terms) == set(truncs) == set(infos) == set(live)
            for agent in live:
                assert env.observation_space(agent).contains(obs[agent])
            done = [terms[a] or truncs[a] for a in live]
            assert all(done) or not any(done)  # everyone leaves together
            if not env.agents:
                deadlock = all(terms.values())
                assert not any(truncs.values()) if deadlock else (steps == 12 and all(truncs.values()))
                assert 0.0 <= rewards[live[0]] <= 1.0
            else:
                assert all(r == 0.0 for r in rewards.values())


def test_text_max_length_is_the_longest_message_worked_by_hand():
    # last seat (4), round R + 1 = 6, both forks held by neighbours, 0 meals ("times"),
    # not ready: 31 + 1 + 41 + 1 + 42 + 1 + 23 + 1 + 54 + 2 + 120 = 317 characters
    longest = (
        "You are philosopher 4. Round 6.\n"
        "Your left fork is held by your neighbour.\n"
        "Your right fork is held by your neighbour.\n"
        "You have eaten 0 times.\n"
        "You must put both forks down before you can eat again.\n\n"
        "Choose one tool: pick_up_left, pick_up_right, put_down_left, put_down_right, eat, think. "
        "Answer with the tool call only."
    )
    assert len(longest) == 317
    env = PhilosophersParallelEnv(5, rounds=5)
    assert env.max_text_length == 317
    assert env.observation_space(agent_name(0))["text"].max_length == 317


def test_observation_encodes_the_table():
    env = PhilosophersParallelEnv(3, rounds=5)
    env.reset()
    # philosopher 0 takes fork 0; philosopher 1 takes fork 2 (its right); 2 thinks
    obs, *_ = env.step({agent_name(0): 0, agent_name(1): 1, agent_name(2): 5})
    p0, p2 = obs[agent_name(0)], obs[agent_name(2)]
    assert p0["round"] == 2 and p0["philosopher"] == 0 and p0["meals"] == 0
    assert p0["flags"].tolist() == [1, 0, 0, 1, 1]  # holds left, not right; right fork 1 free
    assert p2["flags"].tolist() == [0, 0, 0, 0, 1]  # fork 2 held by 1, fork 0 held by 0
    assert "Your left fork is held by your neighbour." in p2["text"]
    assert env.render() == "round 1/5 forks 0 - 1 meals 0 0 0"


# Hand-made scripts for N = 3: per round, one action per philosopher ("none": left out).
FED_ONE = [
    ["pick_up_left", "eat", "think"],  # philosopher 1's eat is invalid (no forks)
    ["pick_up_right", NO_ACTION, "think"],
    ["eat", "think", NO_ACTION],
    ["put_down_right", "put_down_left", "think"],  # philosopher 1's put-down is invalid
    ["put_down_left", NO_ACTION, NO_ACTION],
]
DEADLOCK_IN_ROUND_2 = [
    ["think", "pick_up_left", NO_ACTION],
    ["pick_up_left", "think", "pick_up_left"],  # now each holds its left fork
    ["eat", "eat", "eat"],  # never played
]


def play(env, script):
    """Play a script through the ParallelEnv; return the last step's infos and rewards."""
    env.reset()
    for round_actions in script:
        actions = {agent_name(i): TOOLS.index(a) for i, a in enumerate(round_actions) if a != NO_ACTION}
        _, rewards, terms, truncs, infos = env.step(actions)
        if not env.agents:
            return infos, rewards, terms, truncs
    raise AssertionError("the episode did not end")


def test_fed_one_episode_worked_by_hand():
    infos, rewards, terms, truncs = play(PhilosophersParallelEnv(3, rounds=5), FED_ONE)
    info = infos[agent_name(0)]
    # meals (1, 0, 0); at N = 3, R = 5 at most 2 meals: 0 eats in round 3, and 1, holding
    # fork 2 from round 1, takes fork 1 in round 4 as 0 puts it down and eats in round 5.
    # variance of (1, 0, 0) = 2/9, normaliser m^2/4 = 1/4 with m = 1; 4 thinks of 11 actions.
    assert info["meals"] == (1, 0, 0) and info["deadlock"] is False
    assert info["r_thru"] == pytest.approx(1 / 2)
    assert info["r_fair"] == pytest.approx(8 / 9)
    assert info["r_idle"] == pytest.approx(4 / 11)
    expected = 1 + 0.5 * (1 / 2) - 0.3 * (8 / 9) - 0.1 * (4 / 11)
    assert all(r == pytest.approx(expected) for r in rewards.values())
    assert info["reward"] == pytest.approx(expected)
    assert all(truncs.values()) and not any(terms.values())


def test_deadlock_terminates_with_the_clipped_reward():
    env = PhilosophersParallelEnv(3, rounds=5)
    infos, rewards, terms, truncs = play(env, DEADLOCK_IN_ROUND_2)
    assert all(terms.values()) and not any(truncs.values())
    assert env.agents == [] and env.render().endswith("deadlock")
    info = infos[agent_name(2)]
    assert info["rounds_played"] == 2 and info["deadlock"] is True
    # r_nd = 0, no meals, 2 thinks of 5 actions: -0.1 * 2/5 = -0.04, clipped to 0
    assert info["reward_unclipped"] == pytest.approx(-0.04)
    assert set(rewards.values()) == {0.0}


def replay_policy(script):
    """A run_episodes policy that plays ``script[round - 1][philosopher]``."""
    return lambda turns: [script[t.observation.round - 1][t.observation.philosopher] for t in turns]


def compare(env, episode, steps):
    """Replay run_episodes' recorded actions through the ParallelEnv and compare everything."""
    env.reset()
    for _, chosen in steps.groupby("turn"):  # a philosophers' turn is a round, its seat a philosopher
        rows = list(chosen.sort_values("seat").itertuples())
        actions = {agent_name(r.seat): TOOLS.index(r.action) for r in rows if r.action != NO_ACTION}
        _, rewards, terms, truncs, infos = env.step(actions)
        for r in rows:
            assert infos[agent_name(r.seat)]["valid"] == r.valid
            assert env.table.holds(r.seat) == (r.holds_left, r.holds_right)
            assert env.table.meals[r.seat] == r.meals
    assert env.agents == []
    info = infos[agent_name(0)]
    assert list(info["meals"]) == episode["meals"]
    assert info["deadlock"] == episode["deadlock"] == all(terms.values())
    assert info["rounds_played"] == episode["rounds_played"]
    for key in REWARD_KEYS:
        assert info[key] == pytest.approx(episode[key]), key
    assert all(r == pytest.approx(episode["reward"]) for r in rewards.values())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", [FED_ONE, DEADLOCK_IN_ROUND_2], ids=["fed_one", "deadlock"])
def test_hand_made_scripts_agree_with_run_episodes(script, mode):
    episodes, steps = run_episodes(replay_policy(script), n=3, rounds=5, seeds=[0], mode=mode)
    compare(PhilosophersParallelEnv(3, rounds=5, mode=mode), episodes.iloc[0], steps)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("policy", sorted(SCRIPTED))
@pytest.mark.parametrize("n", [3, 5])
def test_scripted_episodes_replay_identically(policy, n, mode):
    """Actions recorded by run_episodes (sequential seats saw their predecessors' moves)
    replayed through the ParallelEnv give the same table, meals, deadlock and reward."""
    seeds = [0, 1, 2]
    episodes, steps = run_episodes(make_scripted(policy), n=n, rounds=12, seeds=seeds, mode=mode)
    for e in range(len(seeds)):
        compare(PhilosophersParallelEnv(n, rounds=12, mode=mode), episodes.iloc[e], steps[steps["episode"] == e])


def test_scripted_runs_cover_deadlock_meals_and_invalid_actions():
    """The replays above exercise every ending: a deadlock, meals and invalid actions."""
    episodes, _ = run_episodes(make_scripted("left_first"), n=5, rounds=12, seeds=[0], mode="simultaneous")
    assert episodes["deadlock"].all()
    episodes, _ = run_episodes(make_scripted("random"), n=5, rounds=12, seeds=[0, 1, 2], mode="sequential")
    assert episodes["invalid_actions"].sum() > 0
    episodes, _ = run_episodes(make_scripted("waiter"), n=5, rounds=12, seeds=[0], mode="sequential")
    assert episodes["meals_total"].iloc[0] > 0 and not episodes["deadlock"].iloc[0]


def test_bad_actions_and_steps_raise():
    env = PhilosophersParallelEnv(3)
    env.reset()
    with pytest.raises(ValueError, match="not an index"):
        env.step({agent_name(0): 6})
    with pytest.raises(ValueError, match="not a live agent"):
        env.step({"philosopher_3": 0})
    play(env, DEADLOCK_IN_ROUND_2)
    with pytest.raises(ValueError, match="episode is over"):
        env.step({})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n": 1}, "at least 2 philosophers"),
        ({"n": 3, "rounds": 0}, "rounds must be at least 1"),
        ({"n": 3, "mode": "turns"}, "unknown mode"),
        ({"n": 3, "prompt": "nope"}, "unknown prompt version"),
    ],
)
def test_bad_constructor_args_raise_one_line_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        PhilosophersParallelEnv(**kwargs)
    assert "\n" not in str(error.value)


# --- bandits: Gymnasium Env ------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 5},
        {"k": 10, "noise": "high", "variant": "continuous"},
        {"k": 5, "family": "bernoulli", "prompt_style": "cot"},
        {"k": 20, "prompt_style": None},
    ],
)
def test_check_env_passes_without_warnings(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(BanditGymEnv(**kwargs), skip_render_check=True)


@pytest.mark.parametrize("family, noise", [("gaussian", "low"), ("gaussian", "high"), ("bernoulli", "low")])
def test_same_seed_and_actions_give_the_same_rewards_as_bandit_env(family, noise):
    spec = BanditSpec(k=5, horizon=30, family=family, noise=noise)
    actions = np.random.default_rng(7).integers(0, 5, size=30)
    batch = BanditEnv(spec, [11, 12, 13])  # the gym env's instance is instance 12 of this batch
    batch_rewards = np.array([batch.step([a, a, a]) for a in actions])[:, 1]
    env = BanditGymEnv(5, horizon=30, family=family, noise=noise)
    obs, info = env.reset(seed=12)
    assert info["seed"] == 12 and obs["t"] == 0 and obs["counts"].tolist() == [0] * 5
    rewards, expected, best = [], [], []
    for t, a in enumerate(actions, start=1):
        obs, reward, terminated, truncated, info = env.step(a)
        assert env.observation_space.contains(obs)
        rewards.append(reward)
        expected.append(info["expected_reward"])
        best.append(info["best_mean"])
        assert not terminated and truncated == (t == 30)
    np.testing.assert_array_equal(rewards, batch_rewards)
    np.testing.assert_array_equal(expected, batch.means[1, actions])
    np.testing.assert_array_equal(best, [batch.best[1]] * 30)
    np.testing.assert_array_equal(env.bandit.means[0], batch.means[1])
    # the numeric summary, recomputed from the played actions and rewards
    counts = np.bincount(actions, minlength=5)
    sums = np.bincount(actions, weights=rewards, minlength=5)
    np.testing.assert_array_equal(obs["counts"], counts)
    np.testing.assert_allclose(obs["means"], np.where(counts > 0, sums / np.maximum(counts, 1), 0.0))
    assert obs["text"] == build_prompt(spec, actions, rewards, "no_cot")
    assert obs["text"].count("\nStep=") == 30
    # regret after the fact from the infos, against the batch's own cumulative regret
    regret = np.cumsum(np.subtract(best, expected))
    np.testing.assert_allclose(regret, cumulative_regret(batch.means[1:2], actions[None])[0])


def test_unseeded_resets_continue_from_the_seeded_generator():
    env = BanditGymEnv(5)
    seeds_a = [env.reset(seed=3)[1]["seed"]] + [env.reset()[1]["seed"] for _ in range(3)]
    seeds_b = [env.reset(seed=3)[1]["seed"]] + [env.reset()[1]["seed"] for _ in range(3)]
    assert seeds_a == seeds_b and len(set(seeds_a)) == 4


def test_bandit_bad_input_raises():
    env = BanditGymEnv(3, horizon=1)
    with pytest.raises(ValueError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not an arm"):
        env.step(3)
    env.step(0)
    with pytest.raises(ValueError, match="horizon"):
        env.step(0)
    for kwargs in ({"k": 1}, {"k": 3, "family": "poisson"}, {"k": 3, "horizon": 0}, {"k": 3, "prompt_style": "x"}):
        with pytest.raises(ValueError):
            BanditGymEnv(**kwargs)
