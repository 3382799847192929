"""The knowing-doing lens at the dining-philosophers table: the sensible rules against a
truth table written by hand and every state the rules reach, the rationale parser
against a corpus, the replay of pre-turn observations, and the matrix validated on a
scripted agent whose cells are known."""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paperlib.philosophers.env import TOOLS, Observation, act, initial_table, observe, play_round
from paperlib.philosophers.episode import episode_seeds, run_episodes
from paperlib.philosophers.knowing_doing import (
    ACTION_CLASSES,
    BEFORE_COLUMNS,
    ScriptedKnowingDoingPhilosopher,
    action_class,
    classify,
    matrix,
    no_rationale_share,
    observations_before,
    parse_rationale,
    sensible_tools,
    table_showing,
    valid_tools,
)
from paperlib.philosophers.prompts import RATIONALE_FORMAT, RATIONALE_INSTRUCTION
from paperlib.philosophers.scripted import RandomPolicy

FLAGS = ("holds_left", "holds_right", "left_free", "right_free", "ready")

# Every observation the rules can produce, as (holds_left, holds_right, left_free,
# right_free, ready), with its sensible set worked out by hand (rule numbers as in
# sensible_tools' docstring).
HAND = {
    (1, 1, 0, 0, 1): {"eat"},  # 1: both forks, ready
    (1, 1, 0, 0, 0): {"put_down_left", "put_down_right"},  # 2: both forks after eating
    (1, 0, 0, 0, 0): {"put_down_left"},  # 3: one fork after eating (right held by neighbour)
    (1, 0, 0, 1, 0): {"put_down_left"},  # 3: one fork after eating, right free: do not hoard it
    (0, 1, 0, 0, 0): {"put_down_right"},  # 3
    (0, 1, 1, 0, 0): {"put_down_right"},  # 3
    (1, 0, 0, 1, 1): {"pick_up_right"},  # 4: left in hand, right free
    (0, 1, 1, 0, 1): {"pick_up_left"},  # 4: right in hand, left free
    (1, 0, 0, 0, 1): {"put_down_left"},  # 5: left in hand, right held: break the hold-and-wait
    (0, 1, 0, 0, 1): {"put_down_right"},  # 5
    (0, 0, 1, 1, 1): {"pick_up_left", "pick_up_right"},  # 6: empty-handed, both free
    (0, 0, 1, 0, 1): {"think"},  # 7: only the left fork free
    (0, 0, 0, 1, 1): {"think"},  # 7: only the right fork free
    (0, 0, 0, 0, 1): {"think"},  # 8: both forks held by neighbours
}


def obs_of(flags, philosopher=1, n=5, rnd=4, meals=2) -> Observation:
    return Observation(
        philosopher=philosopher, n=n, round=rnd, meals=meals, **{name: bool(v) for name, v in zip(FLAGS, flags)}
    )


def flags_of(obs: Observation) -> tuple:
    return tuple(int(getattr(obs, name)) for name in FLAGS)


def hand_valid(flags) -> set[str]:
    """The rules restated by hand: an independent check of valid_tools (built on env.act)."""
    holds_left, holds_right, left_free, right_free, ready = flags
    valid = {"think"}
    valid |= {"pick_up_left"} if left_free else set()
    valid |= {"pick_up_right"} if right_free else set()
    valid |= {"put_down_left"} if holds_left else set()
    valid |= {"put_down_right"} if holds_right else set()
    valid |= {"eat"} if holds_left and holds_right and ready else set()
    return valid


# -- the sensible rules --------------------------------------------------------------


@pytest.mark.parametrize("flags", list(HAND), ids=[str(f) for f in HAND])
def test_sensible_tools_match_the_hand_table(flags):
    for philosopher, n in ((0, 2), (1, 5), (4, 5)):
        assert sensible_tools(obs_of(flags, philosopher, n)) == HAND[flags]


def test_sensible_tools_reject_exactly_the_observations_the_rules_cannot_produce():
    for flags in itertools.product((0, 1), repeat=5):
        holds_left, holds_right, left_free, right_free, ready = flags
        impossible = (
            (holds_left and left_free) or (holds_right and right_free) or not (ready or holds_left or holds_right)
        )
        assert impossible == (flags not in HAND), flags
        if impossible:
            with pytest.raises(ValueError, match="observation"):
                sensible_tools(obs_of(flags))
        else:
            sensible_tools(obs_of(flags))


def test_meals_and_round_play_no_part():
    for flags in HAND:
        sets = {sensible_tools(obs_of(flags, rnd=r, meals=m)) for r in (1, 9) for m in (0, 7)}
        assert sets == {frozenset(HAND[flags])}


# -- every state the rules reach ------------------------------------------------------


def _bare(table):
    return replace(table, meals=(0,) * table.n, round=0)  # meals and round never change what comes next


def _effective(table, i):
    """Think stands for every action with no effect; the others are the ones that may act."""
    holds_left, holds_right = table.holds(i)
    out = ["think"]
    out += ["put_down_left"] if holds_left else ["pick_up_left"]
    out += ["put_down_right"] if holds_right else ["pick_up_right"]
    out += ["eat"] if holds_left and holds_right and table.ready[i] else []
    return out


def reachable(n, mode, every_action=True):
    """Tables (meals and round zeroed) reachable from the start, breadth first.

    ``mode`` is a round mode, or "single": one philosopher acts alone (``act``), which
    gives every table a sequential round passes through, mid-round ones included.
    """
    start = _bare(initial_table(n))
    seen, frontier = {start}, [start]
    while frontier:
        nxt = []
        for table in frontier:
            choices = [TOOLS] * n if every_action else [_effective(table, i) for i in range(n)]
            if mode == "single":
                afters = [act(table, i, a)[0] for i in range(n) for a in choices[i]]
            else:
                afters = [play_round(table, actions, mode)[0] for actions in itertools.product(*choices)]
            for after in map(_bare, afters):
                if after not in seen:
                    seen.add(after)
                    nxt.append(after)
        frontier = nxt
    return seen


@pytest.fixture(scope="module")
def reached():
    """Every table simultaneous rounds reach; the test below shows sequential ones reach the same."""
    return {3: reachable(3, "simultaneous"), 5: reachable(5, "simultaneous", every_action=False)}


def test_the_shortcut_and_both_modes_find_the_same_tables(reached):
    # trying only the actions that can change something finds what trying every action finds
    assert reachable(3, "simultaneous", every_action=False) == reached[3]
    # sequential rounds, and single moves (every table a sequential round passes through), reach the same
    assert reachable(3, "sequential") == reachable(3, "single") == reached[3]
    assert reachable(5, "single", every_action=False) == reached[5]


@pytest.mark.parametrize("n", [3, 5])
def test_every_reachable_observation_is_in_the_hand_table(reached, n):
    observations = {observe(table, i) for table in reached[n] for i in range(n)}
    kinds = {(obs.philosopher, flags_of(obs)) for obs in observations}
    # each seat sees each of the 14 kinds and nothing else: 42 at N = 3, 70 at N = 5
    assert kinds == {(i, flags) for i in range(n) for flags in HAND}
    assert len(kinds) == {3: 42, 5: 70}[n]
    assert len(reached[n]) == {3: 93, 5: 1973}[n]  # tables, meals and round aside


@pytest.mark.parametrize("n", [3, 5])
def test_sensible_is_never_empty_and_always_valid(reached, n):
    for table in reached[n]:
        for i in range(n):
            obs = observe(table, i)
            sensible, valid = sensible_tools(obs), valid_tools(table, i)
            assert sensible and sensible <= valid, (table, i)
            assert valid == hand_valid(flags_of(obs))
            # the observation alone decides validity, so classify can judge from step rows
            shown = table_showing(obs)
            assert observe(shown, i) == obs and valid_tools(shown, i) == valid
            # valid-but-not-sensible exists everywhere except empty-handed between two held forks
            stuck = not (obs.holds_left or obs.holds_right or obs.left_free or obs.right_free)
            assert (not valid - sensible) == stuck


INVERSE = {
    "pick_up_left": "put_down_left",
    "put_down_left": "pick_up_left",
    "pick_up_right": "put_down_right",
    "put_down_right": "pick_up_right",
}


@pytest.mark.parametrize("n", [3, 5])
def test_no_sensible_move_is_undone_by_the_next_sensible_move(reached, n):
    """The reason for rule 7: on the way to a meal (ready), with the table otherwise
    still, sensible moves never go back and forth. (After a meal, putting a fork down
    and later taking it again is the next meal's cycle.)"""
    for table in reached[n]:
        for i in filter(lambda i: table.ready[i], range(n)):
            for tool in sensible_tools(observe(table, i)) & set(INVERSE):
                after = observe(act(table, i, tool)[0], i)
                assert INVERSE[tool] not in sensible_tools(after), (table, i, tool)


def test_taking_the_one_free_fork_would_be_undone():
    """Rule 7's counterfactual: the literal 'pick up a free fork' fails the property above."""
    table = replace(initial_table(3), holder=(-1, 1, -1))  # philosopher 0: left fork 0 free, right fork 1 held by 1
    assert sensible_tools(observe(table, 0)) == {"think"}
    after, ok = act(table, 0, "pick_up_left")
    assert ok and "put_down_left" in sensible_tools(observe(after, 0))


# -- the rationale ----------------------------------------------------------------------

CORPUS_PATH = Path(__file__).parent / "data" / "sensible_rationale_corpus.jsonl"
CORPUS = [json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_corpus_is_large_and_exercises_every_outcome():
    assert len(CORPUS) >= 30
    assert all(set(row) == {"text", "expected", "note"} for row in CORPUS)
    assert {row["expected"] for row in CORPUS} == set(TOOLS) | {None}


@pytest.mark.parametrize("row", CORPUS, ids=[row["note"] for row in CORPUS])
def test_corpus(row):
    assert parse_rationale(row["text"]) == row["expected"]


def test_parse_rationale_never_raises_and_is_fast():
    for junk in (None, 3, b"<sensible>eat</sensible>", ["eat"], "<" * 1000, "<sensible>" * 5000, "\x00\ud800"):
        assert parse_rationale(junk) is None
    text = ("< sensible " * 20000) + "<sensible>eat</sensible>"
    start = time.perf_counter()
    assert parse_rationale(text) == "eat"
    assert time.perf_counter() - start < 1.0


def test_the_instruction_shows_a_format_the_parser_reads():
    assert RATIONALE_FORMAT in RATIONALE_INSTRUCTION
    for tool in TOOLS:
        assert parse_rationale(RATIONALE_FORMAT.replace("TOOL_NAME", tool)) == tool


# -- replaying pre-turn observations ------------------------------------------------------


class Recording:
    """Wraps a policy and keeps every observation it was shown, keyed like the step rows."""

    def __init__(self, inner):
        self.inner, self.seen = inner, {}

    def reset(self, seeds):
        self.inner.reset(seeds)

    def act(self, turns):
        for turn in turns:
            self.seen[(turn.episode, turn.observation.round, turn.observation.philosopher)] = turn.observation
        return self.inner.act(turns)


@pytest.mark.parametrize("mode", ["simultaneous", "sequential"])
@pytest.mark.parametrize("n", [3, 5])
def test_replay_recovers_exactly_what_each_philosopher_saw(n, mode):
    policy = Recording(RandomPolicy())
    _, steps = run_episodes(policy, n=n, rounds=8, seeds=episode_seeds(11, 12), mode=mode, stop_on_deadlock=False)
    before = observations_before(steps, mode=mode)
    assert len(before) == len(steps) == len(policy.seen)
    for row in before.itertuples():
        shown = policy.seen[(row.episode, row.turn, row.seat)]
        assert row.n == n
        assert tuple(getattr(row, c) for c in BEFORE_COLUMNS) == tuple(
            getattr(shown, c.removeprefix("before_")) for c in BEFORE_COLUMNS
        )


def test_replay_refuses_the_wrong_mode_and_broken_rows():
    _, seq = run_episodes(
        RandomPolicy(), n=5, rounds=8, seeds=episode_seeds(0, 20), mode="sequential", stop_on_deadlock=False
    )
    _, sim = run_episodes(RandomPolicy(), n=5, rounds=8, seeds=episode_seeds(0, 20), stop_on_deadlock=False)
    with pytest.raises(ValueError, match="does not replay in simultaneous mode"):
        observations_before(seq, mode="simultaneous")
    with pytest.raises(ValueError, match="does not replay in sequential mode"):
        observations_before(sim, mode="sequential")
    with pytest.raises(ValueError, match="turn 2 is not round 1"):
        observations_before(sim[sim["turn"] != 1])
    with pytest.raises(ValueError, match="seats 0..4 once each"):
        observations_before(pd.concat([sim, sim]))  # two runs under one key
    with pytest.raises(ValueError, match="lack column"):
        observations_before(sim.drop(columns="valid"))
    with pytest.raises(ValueError, match="unknown mode"):
        observations_before(sim, mode="parallel")
    # two runs apart by a key column replay fine
    two = pd.concat([sim.assign(model="a"), sim.assign(model="b")])
    assert len(observations_before(two, by=("model", "episode"))) == 2 * len(sim)


def test_validity_as_seen_matches_the_runner_in_sequential_mode_only():
    kw = dict(n=5, rounds=8, seeds=episode_seeds(5, 20), stop_on_deadlock=False)
    _, seq = run_episodes(RandomPolicy(), mode="sequential", **kw)
    judged = classify(observations_before(seq, mode="sequential"))
    assert (judged["valid_as_seen"] == judged["valid"]).all()
    _, sim = run_episodes(RandomPolicy(), **kw)
    judged = classify(observations_before(sim))
    differ = judged[judged["valid_as_seen"] != judged["valid"]]
    # a pick-up lost to a lower id, or a pick-up of a fork seen held whose holder put it down
    assert differ["valid_as_seen"].any() and differ["valid"].any()
    assert differ["action"].str.startswith("pick_up").all()


# -- classification and the matrix ---------------------------------------------------------


def turn_row(flags, action, text):
    obs = obs_of(flags)
    return {
        "n": obs.n,
        "turn": obs.round,
        "seat": obs.philosopher,
        "action": action,
        "raw_completion": text,
        **{f"before_{f}": getattr(obs, f) for f in FLAGS + ("meals",)},
    }


BOTH_READY, LEFT_RIGHT_HELD, EMPTY_ONE_FREE = (1, 1, 0, 0, 1), (1, 0, 0, 0, 1), (0, 0, 1, 0, 1)
# (state, action, completion) -> (rationale, right, class), judged by hand
CASES = [
    (BOTH_READY, "eat", "I hold both. <sensible>eat</sensible>", ("eat", True, "sensible")),
    (BOTH_READY, "think", "<sensible>eat</sensible>", ("eat", True, "valid_not_sensible")),
    (BOTH_READY, "put_down_left", "<sensible>put_down_left</sensible>", ("put_down_left", False, "valid_not_sensible")),
    (BOTH_READY, "pick_up_left", "<sensible>eat</sensible>", ("eat", True, "invalid_or_none")),
    (BOTH_READY, "none", "I could eat.", (None, False, "invalid_or_none")),
    (
        LEFT_RIGHT_HELD,
        "pick_up_right",
        "<sensible>pick_up_right</sensible>",
        ("pick_up_right", False, "invalid_or_none"),
    ),
    (LEFT_RIGHT_HELD, "think", "<sensible>put_down_left</sensible>", ("put_down_left", True, "valid_not_sensible")),
    (EMPTY_ONE_FREE, "pick_up_left", "<sensible>think</sensible>", ("think", True, "valid_not_sensible")),
    (EMPTY_ONE_FREE, "think", "<sensible>pick_up_left", (None, False, "sensible")),
]


def test_classify_hand_cases():
    judged = classify(pd.DataFrame([turn_row(s, a, t) for s, a, t, _ in CASES]))
    rationale = [None if pd.isna(r) else r for r in judged["rationale"]]  # pandas keeps a missing str as NaN
    got = list(zip(rationale, judged["rationale_right"], judged["action_class"]))
    assert got == [expected for *_, expected in CASES]
    assert judged["no_rationale"].tolist() == [r is None for (r, _, _) in (e for *_, e in CASES)]
    assert judged["sensible"].iloc[0] == ("eat",)
    for state, action, _, (_, _, cls) in CASES:
        assert action_class(obs_of(state), action) == cls


def test_classify_and_action_class_refuse_bad_input():
    with pytest.raises(ValueError, match="lack column"):
        classify(pd.DataFrame([turn_row(BOTH_READY, "eat", "")]).drop(columns="before_ready"))
    with pytest.raises(ValueError, match="unknown action"):
        action_class(obs_of(BOTH_READY), "dance")


def _wilson_by_hand(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_matrix_of_ten_hand_counted_turns():
    cells = {
        ("right", "sensible"): 3,
        ("right", "valid_not_sensible"): 1,
        ("wrong", "sensible"): 2,
        ("wrong", "invalid_or_none"): 4,
    }
    turns = pd.DataFrame(
        [
            {"rationale_right": r == "right", "action_class": c, "no_rationale": i == 0}
            for (r, c), k in cells.items()
            for i in range(k)
        ]
    )
    m = matrix(turns)
    assert list(m.index) == ["right", "wrong"]
    shares = m.xs("share", axis=1, level=1)
    assert list(shares.columns) == list(ACTION_CLASSES)
    np.testing.assert_allclose(shares.to_numpy(), [[0.3, 0.1, 0.0], [0.2, 0.0, 0.4]])
    np.testing.assert_allclose(m.loc["right", ("sensible", "low")], _wilson_by_hand(3, 10)[0], atol=1e-9)
    np.testing.assert_allclose(m.loc["wrong", ("invalid_or_none", "high")], _wilson_by_hand(4, 10)[1], atol=1e-9)
    assert m.loc["wrong", ("valid_not_sensible", "low")] == 0.0
    share, low, high = no_rationale_share(turns)
    assert share == pytest.approx(0.4) and (low, high) == pytest.approx(_wilson_by_hand(4, 10))


def test_matrix_refuses_bad_input():
    with pytest.raises(ValueError, match="no turns"):
        matrix(pd.DataFrame({"rationale_right": [], "action_class": []}))
    with pytest.raises(ValueError, match="unknown action class"):
        matrix(pd.DataFrame({"rationale_right": [True], "action_class": ["optimal"]}))
    with pytest.raises(ValueError, match="lack column"):
        matrix(pd.DataFrame({"action_class": ["sensible"]}))


# -- the scripted agent: the matrix is known in advance --------------------------------------

P_RIGHT, MIX, P_MISSING = 0.7, (0.6, 0.25, 0.15), 0.3


def scripted(mode, episodes, seed):
    _, steps = run_episodes(
        ScriptedKnowingDoingPhilosopher(P_RIGHT, MIX, P_MISSING),
        n=5,
        rounds=8,
        seeds=episode_seeds(seed, episodes),
        mode=mode,
    )
    return classify(observations_before(steps, mode=mode))


@pytest.fixture(scope="module")
def many_turns():
    return scripted("simultaneous", 250, seed=100)


def intended_matrix(judged):
    return matrix(
        judged.assign(rationale_right=judged["intended_rationale"] == "right", action_class=judged["intended_class"])
    )


@pytest.mark.parametrize("mode", ["simultaneous", "sequential"])
def test_the_matrix_of_the_texts_is_the_matrix_of_the_intentions(mode, many_turns):
    judged = many_turns if mode == "simultaneous" else scripted(mode, 60, seed=7)
    assert (judged["action_class"] == judged["intended_class"]).all()
    assert (judged["rationale_right"] == (judged["intended_rationale"] == "right")).all()
    assert (judged["no_rationale"] == judged["intended_no_rationale"]).all()
    computed = matrix(judged)
    pd.testing.assert_frame_equal(computed, intended_matrix(judged))
    shares = computed.xs("share", axis=1, level=1).to_numpy()
    assert shares.sum() == pytest.approx(1.0)
    assert (shares > 0).all(), computed  # every cell exercised, so none is right by being empty


def test_each_cell_is_within_its_interval_of_the_known_share(many_turns):
    judged = many_turns
    assert len(judged) > 5000
    # the class mix, renormalised where valid-not-sensible is impossible (empty-handed, both forks held)
    stuck = ~(
        judged["before_holds_left"]
        | judged["before_holds_right"]
        | judged["before_left_free"]
        | judged["before_right_free"]
    )
    mix = np.array(MIX)
    per_turn = np.where(stuck.to_numpy()[:, None], mix * [1, 0, 1] / (mix[0] + mix[2]), mix / mix.sum())
    known = {"right": P_RIGHT * per_turn.mean(axis=0), "wrong": (1 - P_RIGHT) * per_turn.mean(axis=0)}
    m = matrix(judged, confidence=0.99)
    for rationale, expected in known.items():
        for cls, share in zip(ACTION_CLASSES, expected):
            assert m.loc[rationale, (cls, "low")] <= share <= m.loc[rationale, (cls, "high")], (rationale, cls, share)
    _, low, high = no_rationale_share(judged, confidence=0.99)
    assert low <= (1 - P_RIGHT) * P_MISSING <= high


def test_bad_scripted_settings_fail():
    for kwargs in ({"p_right": 1.5}, {"p_missing": -0.1}, {"mix": (0.5, 0.5)}, {"mix": (0, 1, 0)}):
        with pytest.raises(ValueError, match="p_right"):
            ScriptedKnowingDoingPhilosopher(**kwargs)


def test_the_lens_tables_on_the_scripted_philosopher():
    """lens_table and knowing_vs_doing agree with the matrix and with counts made here."""
    from paperlib.philosophers.episode import run_episodes
    from paperlib.philosophers.knowing_doing import knowing_vs_doing, lens_table
    from paperlib.reports.n06_knowing_doing_table import lens_sentences

    _, steps = run_episodes(
        ScriptedKnowingDoingPhilosopher(p_right=0.9, mix=(0.2, 0.1, 0.7)), n=5, rounds=5, seeds=list(range(20))
    )
    judged = classify(observations_before(steps.assign(model="m", n=5), by=("model", "n", "episode")))
    judged["adapter"] = "base"
    table = lens_table(judged)
    assert len(table) == 6 and table["share"].sum() == pytest.approx(1.0)
    cell = table[(table["rationale"] == "right") & (table["action_class"] == "sensible")].iloc[0]
    assert cell["share"] == pytest.approx((judged["rationale_right"] & (judged["action_class"] == "sensible")).mean())
    summary = knowing_vs_doing(judged)
    (row,) = summary.itertuples()
    assert row.knowing == pytest.approx(judged["rationale_right"].mean()) and row.turns == len(judged)
    assert row.doing == pytest.approx((judged["action_class"] == "sensible").mean())
    # drawn with 90% right rationales and 20% sensible actions: knowing is clearly ahead
    assert row.knowing_low > row.doing_high
    assert "a knowing-doing gap" in lens_sentences(summary)
    reversed_ = summary.assign(
        knowing=0.1, knowing_low=0.05, knowing_high=0.15, doing=0.8, doing_low=0.7, doing_high=0.9
    )
    assert "doing ahead of knowing" in lens_sentences(reversed_)
    close = summary.assign(knowing=0.5, knowing_low=0.4, knowing_high=0.6, doing=0.55, doing_low=0.45, doing_high=0.65)
    assert "do not differ beyond their intervals" in lens_sentences(close)
    silent = reversed_.assign(no_rationale=0.99, no_rationale_low=0.95, no_rationale_high=1.0)
    assert "does not measure what it knows" in lens_sentences(silent)


def test_adapter_change_tests_knowing_and_doing_on_per_episode_shares():
    from paperlib.reports import n06_knowing_doing_table as n06

    # per episode (4 turns each): the base model right in 1-2 turns and sensible in 2-3, the adapter
    # right in 3-4 and sensible in none
    plan = {"base": ([1, 2, 2], [2, 3, 2]), "GRPO step 16": ([4, 3, 4], [0, 0, 0])}
    rows = [
        {
            "model": "m",
            "n": 5,
            "adapter": adapter,
            "seed": seed,
            "episode": e,
            "rationale_right": turn < right[e],
            "action_class": "sensible" if turn < sensible[e] else "invalid",
        }
        for adapter, (right, sensible) in plan.items()
        for e, seed in enumerate((10, 11, 12))
        for turn in range(4)
    ]
    change = n06.adapter_change(pd.DataFrame(rows))
    (row,) = change.to_dict("records")
    assert row["knowing_base"] == pytest.approx(5 / 12) and row["knowing"] == pytest.approx(11 / 12)
    assert row["doing_base"] == pytest.approx(7 / 12) and row["doing"] == 0.0
    assert row["knowing_p"] < 0.05 and row["doing_p"] < 0.05 and row["episodes"] == 3
    sentence = n06.adapter_sentences(change)
    assert "right rationale 42% → 92%" in sentence and "both changed at p < 0.05" in sentence
    copy = [dict(r, adapter="copy") for r in rows if r["adapter"] == "base"]
    base = [r for r in rows if r["adapter"] == "base"]
    assert "neither changed significantly" in n06.adapter_sentences(n06.adapter_change(pd.DataFrame(base + copy)))
    with pytest.raises(ValueError, match="not played on the base model's episodes"):
        n06.adapter_change(pd.DataFrame(base + [dict(r, seed=r["seed"] + 5) for r in copy]))
