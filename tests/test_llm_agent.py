"""The LLM philosopher on the embedded models: free and constrained episodes, the step rows a
trainer reuses, reproducible sampling, and the batched paths against one-at-a-time references."""

import numpy as np
import pytest

from paperlib.backends.hf import HFBackend
from paperlib.philosophers.env import TOOLS, initial_table, observe
from paperlib.philosophers.episode import run_episodes
from paperlib.philosophers.llm import LLMPolicy, make_llm_policy
from paperlib.philosophers.parsing import parse_action
from paperlib.philosophers.prompts import CALL_PREFIX, CALL_SUFFIX

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smol():
    return HFBackend("smollm2-135m")


@pytest.fixture(scope="module")
def gemma():
    return HFBackend("gemma3-270m")


@pytest.fixture(params=["smol", "gemma"])
def backend(request):
    return request.getfixturevalue(request.param)


def play(backend, decision, seeds=(0, 1), n=3, rounds=2, **options):
    policy = LLMPolicy(backend, decision=decision, max_new_tokens=options.pop("max_new_tokens", 12), **options)
    return run_episodes(policy, n=n, rounds=rounds, seeds=seeds)


@pytest.mark.parametrize("mode", ["free", "constrained"])
def test_episode_rows_carry_what_a_trainer_needs(backend, mode):
    episodes, steps = play(backend, mode)
    assert len(episodes) == 2 and len(steps) == 3 * episodes["rounds_played"].sum()
    assert (steps["decision_mode"] == mode).all() and (steps["prompt_version"] == "options-v1").all()
    assert steps["prompt_hash"].str.fullmatch(r"[0-9a-f]{12}").all()
    # the same observation gives the same hash; round 1 of both episodes is the same table
    first = steps[steps["turn"] == 1]
    assert first.groupby("seat")["prompt_hash"].nunique().eq(1).all()
    assert steps.groupby("turn")["prompt_hash"].nunique().min() >= 3  # philosophers differ
    for row in steps.itertuples():
        assert row.action == parse_action(row.raw_completion)
        assert len(row.completion_ids) > 0
    if mode == "free":
        for row in steps.itertuples():  # the ids are the generated tokens; the text is cut at a stop string
            assert backend.tokenizer.decode(row.completion_ids).startswith(row.raw_completion)
            assert row.finish_reason in ("stop", "length") and row.prompt_tokens > 200
    else:
        assert set(steps["action"]) <= set(TOOLS)
        scores = np.array(steps["candidate_logprobs"].tolist())
        assert scores.shape == (len(steps), 6) and (scores < 0).all()
        assert (np.exp(scores).sum(1) <= 1.0 + 1e-6).all()  # six disjoint continuations


def test_constrained_at_temperature_zero_is_the_argmax_of_independent_scores(smol):
    _, steps = play(smol, "constrained", temperature=0.0, seeds=(0,), rounds=1)
    policy = LLMPolicy(smol, decision="constrained")
    for row in steps.itertuples():
        conversation = policy.prompt.conversation(observe(initial_table(3), row.seat), native_tools=False)
        prompt = smol.render(conversation) + CALL_PREFIX
        # one prompt alone: no batch of prompts, no shared prefix, no deduplication
        alone = smol.score([prompt], [name + CALL_SUFFIX for name in TOOLS])[0]
        np.testing.assert_allclose(row.candidate_logprobs, alone, atol=1e-3)
        assert row.action == TOOLS[int(np.argmax(alone))]


@pytest.mark.parametrize("mode", ["free", "constrained"])
def test_sampling_is_reproducible_per_seed(smol, mode):
    a = play(smol, mode, seeds=(3, 4), rounds=1, max_new_tokens=6)[1]
    b = play(smol, mode, seeds=(3, 4), rounds=1, max_new_tokens=6)[1]
    assert a["raw_completion"].tolist() == b["raw_completion"].tolist()
    other = play(smol, mode, seeds=(3, 4), rounds=1, max_new_tokens=6, seed=1)[1]
    assert other["raw_completion"].tolist() != a["raw_completion"].tolist()


def test_constrained_draws_of_an_episode_do_not_depend_on_the_batch(smol):
    together = play(smol, "constrained", seeds=(7, 8, 9), rounds=2)[1]
    alone = play(smol, "constrained", seeds=(8,), rounds=2)[1]
    assert together.loc[together["seed"] == 8, "action"].tolist() == alone["action"].tolist()


def test_identical_prompts_are_prefilled_once_and_still_sampled_apart(smol):
    prompts = ["The capital of France is", "Once upon a time", "The capital of France is", "The capital of France is"]
    before = dict(smol.stats)
    batch = smol.generate(prompts, max_new_tokens=6)
    computed = smol.stats["computed_tokens"] - before["computed_tokens"]
    alone = [smol.generate([p], max_new_tokens=6)[0].token_ids for p in prompts]
    assert [c.token_ids for c in batch] == alone  # greedy: the copies equal one-at-a-time generation
    assert computed == len(smol.encode(prompts[0])) + len(smol.encode(prompts[1]))
    sampled = smol.generate(["Once upon a time"] * 6, max_new_tokens=8, temperature=1.0, seed=0)
    assert len({tuple(c.token_ids) for c in sampled}) > 1


def test_make_llm_policy_reuses_a_built_backend_and_refuses_bad_options(smol):
    policy = make_llm_policy("smollm2-135m", backend=smol, prompt="rules-v1", decision="constrained", temperature=0.5)
    assert policy.backend is smol and policy.labels == {
        "backend": "hf",
        "decision": "constrained",
        "prompt_version": "rules-v1",
        "temperature": 0.5,
        "max_new_tokens": 32,
    }
    for options, message in [
        ({"decision": "beam"}, "unknown decision mode"),
        ({"prompt": "v9"}, "unknown prompt"),
        ({"temperature": -1}, "temperature"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_llm_policy("smollm2-135m", backend=smol, **options)


def test_bench_drives_the_real_agent(smol):
    from paperlib.bench_hf import bench_batch, report

    for decision in ("free", "constrained"):
        result = bench_batch(
            backend=smol, episodes=2, rounds=1, naive=2, max_new_tokens=2, decision=decision, temperature=0.0
        )
        assert result["results"]["shared_attention"]["same_as_batched"] == 10  # greedy: every mode agrees
        assert result["results"]["shared_attention"]["decisions"] == 10 and result["results"]["naive"]["decisions"] == 2
        r = result["results"]["prefix_reuse"]
        assert r["computed_tokens"] < result["results"]["batched"]["computed_tokens"] < r["prompt_tokens"] + 1
        assert result["results"]["shared_attention"]["computed_tokens"] <= r["computed_tokens"]
        assert f"{decision} mode" in report(batch=result)
