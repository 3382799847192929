"""The LLM bandit agent on an embedded model at smoke size: free and constrained, CoT and no-CoT."""

import numpy as np
import pytest

from paperlib.bandits.agents import make_agent
from paperlib.bandits.env import BanditSpec
from paperlib.bandits.llm import LLMAgent, frequency_bias_scores, make_llm_agent
from paperlib.bandits.metrics import frequency_bias, frequency_bias_cases, strategy_shares
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import ACTION_PREFIX, build_prompt
from paperlib.bandits.runner import run_bandit

SPEC = BanditSpec(4, horizon=5)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"decision": "greedy"}, "unknown decision mode 'greedy'"),
        ({"style": "react"}, "unknown prompt style 'react'"),
        ({"temperature": -1.0}, "temperature must be zero or more"),
        ({"max_new_tokens": 0}, "max_new_tokens must be at least 1"),
        ({"decision": "constrained", "backend": "openai"}, "which the openai backend cannot"),
        ({"backend": "tgi"}, "unknown backend 'tgi'"),
        ({"cot": False, "style": "knowing_doing"}, "cannot run without CoT"),
    ],
)
def test_bad_options_fail_before_loading_a_model(options, message):
    with pytest.raises(ValueError, match=message):
        make_llm_agent("gemma3-270m", **options)
    with pytest.raises(ValueError, match="needs a model name"):
        make_llm_agent()
    with pytest.raises(ValueError, match="decision is for the LLM agent"):
        make_agent("ucb", decision="constrained")


@pytest.fixture(scope="module")
def gemma():
    from paperlib.backends.hf import HFBackend

    return HFBackend("gemma3-270m")


def _no_streams_left(backend):
    return not any(isinstance(key, tuple) and key[0] == "bandit" for key in backend._streams)


@pytest.mark.slow
@pytest.mark.parametrize("cot", [False, True])
def test_constrained_always_plays_the_arm_its_scores_choose(gemma, cot):
    agent = make_llm_agent(backend=gemma, cot=cot, decision="constrained", max_new_tokens=6)
    episodes, steps = run_bandit(agent, SPEC, 2, seed=1)
    assert (episodes["invalid_steps"] == 0).all() and steps["valid"].all()
    assert (episodes["decision"] == "constrained").all() and (episodes["cot"] == cot).all()
    for _, row in steps.iterrows():
        assert len(row["candidate_logprobs"]) == 4 and np.all(np.asarray(row["candidate_logprobs"]) < 0)
        assert row["action"] == int(np.argmax(row["candidate_logprobs"]))  # temperature 0: the argmax
        assert parse_action(row["raw_completion"], SPEC.names) == row["action"]  # ends in ACTION=<arm>
        assert row["raw_completion"].endswith(ACTION_PREFIX + SPEC.names[row["action"]])
        # the completion's tokens: the model's own (at most max_new_tokens, with CoT only), then the forced answer
        forced = gemma.tokenizer(ACTION_PREFIX + SPEC.names[row["action"]], add_special_tokens=False)["input_ids"]
        own = len(row["completion_ids"]) - len(forced)  # with CoT the forced part may open with a newline token
        assert (0 < own <= 6 + 1) if cot else own == 0, row["raw_completion"]
        assert gemma.tokenizer.decode(row["completion_ids"]).endswith(ACTION_PREFIX + SPEC.names[row["action"]])
        assert np.isfinite(row["completion_logprob"]) and row["completion_logprob"] <= max(row["candidate_logprobs"])
    if not cot:
        assert (steps["raw_completion"] == ACTION_PREFIX + steps["arm"]).all() and steps["forced"].all()
    assert _no_streams_left(gemma)


@pytest.mark.slow
@pytest.mark.parametrize("cot", [False, True])
def test_free_flags_exactly_what_the_parser_rejects(gemma, cot):
    agent = make_llm_agent(backend=gemma, cot=cot, decision="free", max_new_tokens=8)
    episodes, steps = run_bandit(agent, BanditSpec(4, horizon=3), 2, seed=2)
    parsed = [parse_action(text, SPEC.names) for text in steps["raw_completion"]]
    assert steps["valid"].tolist() == [p is not None for p in parsed]
    assert all(a == p for a, p, v in zip(steps["action"], parsed, steps["valid"]) if v)
    assert episodes["invalid_steps"].sum() == (~steps["valid"]).sum()
    assert all(0 < len(ids) <= 8 for ids in steps["completion_ids"])
    # the text is the decoded completion (an end-of-turn token is kept in the ids only)
    for text, ids in zip(steps["raw_completion"], steps["completion_ids"]):
        assert gemma.tokenizer.decode(ids).startswith(text)
    assert _no_streams_left(gemma)


@pytest.mark.slow
def test_per_instance_kv_gives_the_same_decisions_as_recomputing(gemma):
    # CoT and constrained: both generate(streams=) and score(streams=) are on the path
    spec = BanditSpec(4, horizon=6)
    computed, results = {}, {}
    for reuse in (True, False):
        agent = LLMAgent(gemma, style="cot", decision="constrained", max_new_tokens=4, reuse_kv=reuse)
        before = gemma.stats["computed_tokens"]
        _, steps = run_bandit(agent, spec, 3, seed=3)
        computed[reuse] = gemma.stats["computed_tokens"] - before
        results[reuse] = steps
    for column in ("action", "raw_completion"):
        assert results[True][column].tolist() == results[False][column].tolist()
    np.testing.assert_allclose(
        np.stack(results[True]["candidate_logprobs"]), np.stack(results[False]["candidate_logprobs"]), atol=2e-3
    )
    assert computed[True] < 0.7 * computed[False]


@pytest.mark.slow
def test_sampling_is_reproducible_per_seed(gemma):
    def actions(seed):
        agent = make_llm_agent(backend=gemma, cot=False, decision="constrained", temperature=1.0)
        return run_bandit(agent, BanditSpec(5, horizon=6), 4, seed=seed)[1]["action"].tolist()

    first = actions(5)
    assert actions(5) == first
    assert actions(6) != first  # 24 draws from the arm distribution: equal only by a rare accident


@pytest.mark.slow
def test_frequency_bias_scores_with_streams_equal_plain_scoring(gemma):
    spec = BanditSpec(5)
    cases = frequency_bias_cases(spec, seed=0, lengths=[2, 4], repetitions=[0, 3, 6], histories=2)
    scores = frequency_bias_scores(gemma, spec, cases)
    prompts = [
        gemma.render([{"role": "user", "content": build_prompt(spec, a, r, "no_cot")}]) + ACTION_PREFIX
        for a, r in zip(cases["actions"], cases["rewards"])
    ]
    np.testing.assert_allclose(scores, gemma.score(prompts, list(spec.names)), atol=2e-3)
    assert not any(isinstance(key, tuple) and key[0] == "frequency_bias" for key in gemma._streams)
    result = frequency_bias(cases, scores, spec)
    assert np.all((result["entropy"] >= 0) & (result["entropy"] <= np.log(5) + 1e-9))
    assert strategy_shares(result).loc["all"].sum() == pytest.approx(1.0)
