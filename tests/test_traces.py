"""Traces per seat on a hand-made episode, and a real one from the episode runner."""

import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

from paperlib.llm.traces import Trace, seat_traces


def encode(text):
    return [ord(c) for c in text]


STEPS = pd.DataFrame(
    {  # two seats, two turns, listed out of order
        "episode": [7, 7, 7, 7],
        "seed": [107] * 4,
        "seat": [1, 0, 0, 1],
        "turn": [2, 2, 1, 1],
        "prompt": ["q2", "p2", "p1", "q1"],
        "completion_ids": [[9], [5, 6], [3], [8, 8]],
        "completion_logprob": [-0.9, -0.5, -0.3, -0.8],
    }
)
EPISODES = pd.DataFrame({"episode": [7], "seed": [107], "reward": [0.75], "r_nd": [1.0]})


def test_one_trace_per_seat_with_its_turns_in_order_and_the_episode_reward():
    first, second = seat_traces(STEPS, EPISODES, encode, components=["r_nd"])
    assert (first.episode, first.seed, first.seat, second.seat) == (7, 107, 0, 1)
    assert first.prompt_ids == [[112, 49], [112, 50]] and first.completion_ids == [[3], [5, 6]]
    assert second.prompt_ids == [[113, 49], [113, 50]] and second.completion_ids == [[8, 8], [9]]
    assert first.completion_logprobs == [-0.3, -0.5] and first.turns == [1, 2]
    assert first.reward == second.reward == 0.75 and first.components == {"r_nd": 1.0}
    assert first.completion_token_logprobs == [None, None]  # rows that do not record them


def test_the_per_token_log_probabilities_follow_their_turns_where_recorded():
    recorded = STEPS.assign(completion_token_logprobs=[[-0.9], None, [-0.3], float("nan")])  # NaN: a concat's gap
    first, second = seat_traces(recorded, EPISODES, encode)
    assert first.completion_token_logprobs == [[-0.3], None] and second.completion_token_logprobs == [None, [-0.9]]


def test_packed_masks_the_later_prompts():
    trace = Trace(0, 0, 0, [[1, 2], [3, 4, 5]], [[6], [7, 8]], [-1.0, -2.0], 0.5)
    prompt, completion, mask = trace.packed()
    assert prompt == [1, 2]
    assert completion == [6, 3, 4, 5, 7, 8]
    assert mask == [1, 0, 0, 0, 1, 1]


def test_rows_that_cannot_be_traced_are_refused_in_one_line():
    with pytest.raises(ValueError, match="step rows lack completion_logprob"):
        seat_traces(STEPS.drop(columns="completion_logprob"), EPISODES, encode)
    with pytest.raises(ValueError, match="no prompt recorded"):
        seat_traces(STEPS.assign(prompt=""), EPISODES, encode)
    with pytest.raises(ValueError, match="no episode row for episode 7"):
        seat_traces(STEPS, EPISODES.assign(seed=1), encode)


def test_traces_of_a_real_episode_from_the_runner():
    """The philosophers' runner with the LLM policy over a scripted backend gives rows that trace."""
    from paperlib.philosophers.episode import run_episodes
    from paperlib.philosophers.llm import LLMPolicy

    backend = ScriptedBackend(['{"name": "think"}'] * 3 * 2 * 2)
    episodes, steps = run_episodes(LLMPolicy(backend, temperature=0.0), n=3, rounds=2, seeds=[4, 5])
    traces = seat_traces(steps, episodes, backend.encode, components=["r_nd", "r_idle"])
    assert [(t.episode, t.seat) for t in traces] == [(e, s) for e in (0, 1) for s in range(3)]
    for trace in traces:
        assert len(trace.prompt_ids) == 2 and trace.turns == [1, 2]
        assert trace.completion_ids == [encode('{"name": "think"}')] * 2
        assert trace.components["r_idle"] == 1.0  # every action was think
