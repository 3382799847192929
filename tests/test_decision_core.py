"""The shared decision core on a scripted backend (every branch, no model), and the
weights-version rule of the hf backend's kept KV on a real model."""

import math

import numpy as np
import pytest
from scripted_backend import ScriptedBackend

from paperlib.backends.base import Capabilities
from paperlib.llm.core import ActionFormat, DecisionCore, Request, check_settings, choose_scored, with_answer_prefix

NAMES = ("red", "blue", "green")
FORMAT = ActionFormat(
    candidates=NAMES,
    parse=lambda t: NAMES.index(t.split("=")[-1]) if "=" in t and t.split("=")[-1] in NAMES else None,
    answer_prefix="A=",
    stop=("\n",),
)


def requests(*seeds, stream=False):
    return [Request([{"role": "user", "content": f"u{s}"}], s, ("k", s) if stream else None) for s in seeds]


def test_free_mode_parses_each_completion_and_records_the_step_columns():
    backend = ScriptedBackend(["A=blue", "no idea"])
    core = DecisionCore(backend, FORMAT, mode="free", temperature=1.0, max_new_tokens=7, seed=3)
    core.reset([10, 11])
    a, b = core.decide(requests(10, 11))
    assert (a.action, b.action) == (1, None)
    assert a.raw_completion == "A=blue" and a.completion_ids == [ord(c) for c in "A=blue"]
    assert a.completion_logprob == pytest.approx(-0.5 * 6) and a.prompt == "u10>" and a.prompt_tokens == 4
    assert a.decision_mode == "free" and a.candidate_logprobs is None and len(a.prompt_hash) == 12
    kind, prompts, options = backend.calls[0]
    assert kind == "generate" and prompts == ["u10>", "u11>"]
    assert options["stop"] == ["\n"] and options["max_new_tokens"] == 7 and options["logprobs"] is True
    assert "streams" not in options
    assert a.completion_token_logprobs is None  # kept only where a trainer asks


def test_a_trainers_core_keeps_each_completion_tokens_log_probability():
    core = DecisionCore(ScriptedBackend(["A=blue"]), FORMAT, mode="free", temperature=1.0, token_logprobs=True)
    core.reset([10])
    (a,) = core.decide(requests(10))
    assert a.completion_token_logprobs == [-0.5] * len(a.completion_ids)
    assert sum(a.completion_token_logprobs) == pytest.approx(a.completion_logprob)
    assert "completion_token_logprobs" in a.columns()


def test_free_call_seeds_follow_the_call_number_and_the_episode_seeds():
    def seed_of(seeds, calls=1):
        backend = ScriptedBackend(["A=red"] * (len(seeds) * calls))
        core = DecisionCore(backend, FORMAT, mode="free", seed=0)
        core.reset(seeds)
        for _ in range(calls):
            core.decide(requests(*seeds))
        return [c[2]["seed"] for c in backend.calls]

    assert seed_of([1, 2]) == seed_of([2, 1, 1])[:1]  # the distinct seeds, in any order
    first, second = seed_of([1, 2], calls=2)
    assert first != second and seed_of([1, 3]) != [first]


def test_constrained_without_writing_scores_after_the_prefix_and_takes_the_argmax_at_zero():
    backend = ScriptedBackend(scores={"u1>A=": [-3.0, -1.0, -2.0], "u2>A=": [-0.1, -5.0, -4.0]})
    core = DecisionCore(backend, FORMAT, mode="constrained", temperature=0.0)
    core.reset([1, 2])
    a, b = core.decide(requests(1, 2))
    assert (a.action, b.action) == (1, 0)
    assert a.raw_completion == "A=blue" and a.forced and a.candidate_logprobs == [-3.0, -1.0, -2.0]
    assert a.completion_logprob == -1.0  # nothing written: the chosen name's score alone
    assert a.completion_ids == [ord(c) for c in "A=blue"]
    assert [c[0] for c in backend.calls] == ["score"] and backend.calls[0][2]["candidates"] == list(NAMES)


def test_constrained_identical_prompts_are_scored_once():
    backend = ScriptedBackend(scores={"u1>A=": [-3.0, -1.0, -2.0]})
    core = DecisionCore(backend, FORMAT, mode="constrained", temperature=0.0)
    core.reset([1])
    choices = core.decide(requests(1, 1, 1))
    assert [c.action for c in choices] == [1, 1, 1] and backend.calls[0][1] == ["u1>A="]


def test_constrained_with_writing_first_stops_at_the_prefix_and_joins_the_text():
    fmt = ActionFormat(candidates=NAMES, parse=FORMAT.parse, answer_prefix="A=", write_first=True)
    backend = ScriptedBackend(
        ["green looks good", "so A="],
        scores={"u1>green looks good\nA=": [-2.0, -3.0, -0.5], "u2>so A=": [-0.2, -3.0, -4.0]},
    )
    core = DecisionCore(backend, fmt, mode="constrained", temperature=0.0, max_new_tokens=5)
    core.reset([1, 2])
    a, b = core.decide(requests(1, 2, stream=True))
    assert backend.calls[0][2]["stop"] == ["A="] and backend.calls[0][2]["streams"] == [("k", 1), ("k", 2)]
    assert backend.calls[1][2]["streams"] == [("k", 1), ("k", 2)]
    assert a.raw_completion == "green looks good\nA=green" and a.forced and a.action == 2
    assert b.raw_completion == "so A=red" and not b.forced and b.action == 0
    # the model's own tokens, then the forced tokens; their log-probability: own text and chosen name
    assert a.completion_ids == [ord(c) for c in "green looks good\nA=green"]
    assert a.completion_logprob == pytest.approx(-0.5 * len("green looks good") - 0.5)


def test_constrained_draws_come_from_one_generator_per_episode():
    scores = {f"u{s}>A=": [-1.0, -1.1, -1.2] for s in range(6)}

    def draws(seeds):
        core = DecisionCore(ScriptedBackend(scores=scores), FORMAT, mode="constrained", temperature=1.0, seed=5)
        core.reset(seeds)
        return {r.seed: [core.decide([r])[0].action for _ in range(20)] for r in requests(*seeds)}

    alone, batch = draws([3]), draws([0, 3, 5])
    assert alone[3] == batch[3]  # an episode's draws do not depend on the rest of the batch
    expected_rng = np.random.default_rng([5, 3])
    assert alone[3] == [choose_scored(np.array([-1.0, -1.1, -1.2]), 1.0, expected_rng) for _ in range(20)]


def test_a_backend_without_rendering_gets_conversations_and_no_logprob():
    backend = ScriptedBackend(["A=green"], capabilities=Capabilities(False, False, False, False))
    core = DecisionCore(backend, FORMAT, mode="free")
    (choice,) = core.decide(requests(4))
    assert backend.calls[0][0] == "chat" and choice.action == 2 and math.isnan(choice.completion_logprob)
    assert '"messages"' in choice.prompt  # the conversation as JSON: what the endpoint got


def test_settings_are_refused_in_one_line_before_anything_loads():
    with pytest.raises(ValueError, match="constrained decisions score text, which the openai backend cannot"):
        check_settings("constrained", "openai", 0.0, 16)
    with pytest.raises(ValueError, match="unknown decision mode 'greedy'"):
        check_settings("greedy", "hf", 0.0, 16)
    with pytest.raises(ValueError, match="unknown backend 'tgi'"):
        check_settings("free", "tgi", 0.0, 16)
    with pytest.raises(ValueError, match="temperature must be zero or more"):
        check_settings("free", "hf", -1.0, 16)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        check_settings("free", "hf", 1.0, 0)
    no_scores = ScriptedBackend(capabilities=Capabilities(True, False, False, False))
    with pytest.raises(ValueError, match="which the scripted backend cannot"):
        DecisionCore(no_scores, FORMAT, mode="constrained")


def test_the_answer_prefix_is_forced_once():
    assert with_answer_prefix("", "ACTION=") == "ACTION="
    assert with_answer_prefix("Red paid most.", "ACTION=") == "Red paid most.\nACTION="
    assert with_answer_prefix("Red paid most.\n", "ACTION=") == "Red paid most.\nACTION="
    assert with_answer_prefix("So: ACTION=", "ACTION=") == "So: ACTION="


@pytest.mark.slow
def test_kept_kv_from_before_a_weight_change_is_never_used_after_it():
    import torch

    from paperlib.backends.hf import HFBackend

    backend = HFBackend("smollm2-135m")
    prompts = ["Colours: red, blue, green. Pick one:", "Numbers: one, two, three. Pick one:"]
    keys = ["a", "b"]
    backend.score(prompts, [" red", " two"], streams=keys)  # keeps both prompts' KV
    with torch.no_grad():
        backend.lm.model.norm.weight.mul_(1.5)  # an optimiser step would change weights in place like this
    before = backend.stats["computed_tokens"]
    kept = backend.score(prompts, [" red", " two"], streams=keys)
    recomputed = backend.stats["computed_tokens"] - before
    fresh = HFBackend("smollm2-135m", lm=backend.lm, tokenizer=backend.tokenizer).score(prompts, [" red", " two"])
    assert recomputed >= sum(len(backend.encode(p)) for p in prompts) - 2  # every prompt token computed again
    np.testing.assert_allclose(kept, fresh, atol=1e-5)
    # with the weights unchanged, the kept KV is used: only the last token of each prompt is fed again
    before = backend.stats["computed_tokens"]
    backend.score(prompts, [" red", " two"], streams=keys)
    assert backend.stats["computed_tokens"] - before <= 2
