"""HFBackend on the embedded models: every fast path against a plain or independent reference."""

import contextlib
import copy

import numpy as np
import pytest
import torch
from transformers import AttentionInterface

from paperlib.backends.base import continuation_ids
from paperlib.backends.hf import SHARED_PREFIX_ATTENTION, HFBackend, shared_prefix_attention, token_tree

pytestmark = pytest.mark.slow

RULES = (
    "You are a philosopher at a round table with five seats and five forks. "
    "Each turn choose one action: think, pick_up_left, pick_up_right, put_down_left, put_down_right, eat. "
    "You eat only while holding both forks. Deadlock happens when everyone holds one fork. " * 3
)
TOOL = {
    "type": "function",
    "function": {"name": "eat", "description": "Eat.", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture(scope="module")
def smol():
    return HFBackend("smollm2-135m", max_batch=4)


def observations(n):
    holds = ["no fork", "the left fork", "the right fork", "both forks"]
    return [
        f"Round {i}: you hold {holds[i % 4]}; your left neighbour is {'eating' if i % 3 else 'thinking'}. "
        f"{'The waiter is away. ' * (i % 3)}What do you do?"
        for i in range(n)
    ]


def chat_prompts(backend, n):
    return [
        backend.render([{"role": "system", "content": RULES}, {"role": "user", "content": o}]) for o in observations(n)
    ]


def hf_greedy(backend, prompt, max_new_tokens):
    """transformers' own generate on one unpadded prompt: the independent reference."""
    ids = torch.tensor([backend.encode(prompt)])
    out = backend.lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def test_batched_greedy_equals_per_prompt(smol):
    # prompts of different lengths, two chunks (max_batch=4), no shared-prefix reuse: padding only
    prompts = [
        "The capital of France is",
        "Once upon a time, in a small village by the sea, there lived",
        "1, 2, 3, 4,",
        "def fibonacci(n):",
        "Dear diary, today",
    ]
    smol.reuse_prefix = False
    try:
        batched = smol.generate(prompts, max_new_tokens=10)
    finally:
        smol.reuse_prefix = True
    for prompt, completion in zip(prompts, batched):
        assert completion.token_ids == hf_greedy(smol, prompt, 10)[: len(completion.token_ids)]
        assert completion.prompt_tokens == len(smol.encode(prompt))
        assert completion.finish_reason in ("stop", "length")


@contextlib.contextmanager
def counting_shared_prefix_calls():
    """Counts the calls of the shared-prefix attention while the block runs."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return shared_prefix_attention(*args, **kwargs)

    AttentionInterface.register(SHARED_PREFIX_ATTENTION, counted)
    try:
        yield calls
    finally:
        AttentionInterface.register(SHARED_PREFIX_ATTENTION, shared_prefix_attention)


def run_modes(backend, call):
    """``call()`` plain, with the shared prefix copied into rows, and attended to once."""
    out = {}
    for mode, reuse, share in [("plain", False, False), ("copied", True, False), ("shared", True, True)]:
        backend.reuse_prefix, backend.share_prefix = reuse, share
        before = backend.stats["computed_tokens"]
        try:
            with counting_shared_prefix_calls() as calls:
                out[mode] = call()
        finally:
            backend.reuse_prefix = backend.share_prefix = True
        out[mode + "_computed"] = backend.stats["computed_tokens"] - before
        out[mode + "_shared_calls"] = len(calls)
    return out


def test_prefix_reuse_equals_plain(smol):
    prompts = chat_prompts(smol, 6)
    out = run_modes(smol, lambda: smol.generate(prompts, max_new_tokens=12))
    assert (
        [c.token_ids for c in out["shared"]]
        == [c.token_ids for c in out["copied"]]
        == [c.token_ids for c in out["plain"]]
    )
    assert [c.text for c in out["shared"]] == [c.text for c in out["plain"]]
    assert out["shared_computed"] <= out["copied_computed"] < out["plain_computed"] / 2
    assert out["plain_shared_calls"] == out["copied_shared_calls"] == 0 < out["shared_shared_calls"]
    assert out["plain"][0].token_ids == hf_greedy(smol, prompts[0], 12)[: len(out["plain"][0].token_ids)]
    sampled = run_modes(smol, lambda: smol.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3, logprobs=True))
    assert [c.token_ids for c in sampled["shared"]] == [c.token_ids for c in sampled["plain"]]
    for a, b in zip(sampled["shared"], sampled["plain"]):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


@pytest.mark.parametrize("head", ["", RULES])  # without and with a shared prefix worth attending to once
def test_streams_equal_plain_and_compute_less(smol, head):
    history = [f"Step {t}: pressed {'blue' if t % 2 else 'green'}, reward {t % 3}." for t in range(6)]
    keys = ["a", "b", "c"]

    def prompt(k, t):
        return head + f"Buttons: blue, green, red. Instance {k}.\n" + "\n".join(history[:t]) + "\nACTION="

    smol.forget()
    streamed_computed = plain_computed = 0
    for t in range(1, 5):
        prompts = [prompt(k, t + i) for i, k in enumerate(keys)]
        before = smol.stats["computed_tokens"]
        streamed = smol.generate(prompts, max_new_tokens=8, streams=keys)
        streamed_computed += smol.stats["computed_tokens"] - before
        before = smol.stats["computed_tokens"]
        smol.reuse_prefix = False
        try:
            plain = smol.generate(prompts, max_new_tokens=8)
        finally:
            smol.reuse_prefix = True
        plain_computed += smol.stats["computed_tokens"] - before
        assert [c.token_ids for c in streamed] == [c.token_ids for c in plain]
        assert [len(smol._streams[k][1][0][0][0]) for k in keys] == [len(smol.encode(p)) for p in prompts]
    assert streamed_computed < plain_computed * 0.7
    smol.forget(["a"])
    assert set(smol._streams) == {"b", "c"}
    smol.forget()


def test_stop_strings(smol):
    prompts = chat_prompts(smol, 3)
    free = smol.generate(prompts, max_new_tokens=16)
    words = free[0].text.split()
    assert len(words) >= 3, free[0].text
    stop = " " + words[2]  # ends inside the completion, so generation must stop there
    stopped = smol.generate(prompts, max_new_tokens=16, stop=[stop, "</tool_call>"])
    text = stopped[0].text
    assert text.endswith(stop) and free[0].text.startswith(text)
    assert stopped[0].finish_reason == "stop"
    assert stopped[0].token_ids == free[0].token_ids[: len(stopped[0].token_ids)]
    assert len(stopped[0].token_ids) < len(free[0].token_ids)


def test_seeded_sampling_reproducible(smol):
    prompts = chat_prompts(smol, 5)
    a = smol.generate(prompts, max_new_tokens=12, temperature=1.0, seed=7, logprobs=True)
    b = smol.generate(prompts, max_new_tokens=12, temperature=1.0, seed=7, logprobs=True)
    c = smol.generate(prompts, max_new_tokens=12, temperature=1.0, seed=8)
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert [x.logprobs for x in a] == [x.logprobs for x in b]
    assert [x.token_ids for x in a] != [x.token_ids for x in c]
    assert all(len(x.logprobs) == len(x.token_ids) and max(x.logprobs) <= 0 for x in a)


def test_score_equals_naive_forward(smol):
    prompts = chat_prompts(smol, 5) + ["Press a button. ACTION="]
    candidates = ["eat", "think", "pick_up_left", " put_down_right", "blue"]
    scores = smol.score(prompts, candidates)
    assert scores.shape == (6, 5)
    with counting_shared_prefix_calls() as calls:
        assert np.allclose(smol.score(prompts[:5], candidates), scores[:5], atol=1e-4)  # the five share a prefix
    assert calls
    assert np.allclose(scores, naive_scores(smol, prompts, candidates), atol=1e-3)
    with pytest.raises(ValueError):
        smol.score(prompts, ["eat", ""])


def test_shared_prefix_kv_kept_across_calls_until_the_weights_change(smol):
    prompts, candidates = chat_prompts(smol, 4), ["eat", "pick_up_left"]
    shared = smol._shared_length([smol.encode(p) for p in prompts])

    def computed_tokens(call):
        before = smol.stats["computed_tokens"]
        return call(), smol.stats["computed_tokens"] - before

    smol.score(prompts, candidates)
    kept, with_kept_prefix = computed_tokens(lambda: smol.score(prompts, candidates))
    weight = smol.lm.model.layers[0].self_attn.k_proj.weight  # changes the prefix's keys
    saved = weight.detach().clone()
    try:
        with torch.no_grad():
            weight.mul_(0.5)  # in place, as an optimiser step
        changed, after_change = computed_tokens(lambda: smol.score(prompts, candidates))
        assert after_change == with_kept_prefix + shared > shared > 0
        assert np.allclose(changed, naive_scores(smol, prompts, candidates), atol=1e-3)
        assert not np.allclose(changed, kept, atol=1e-2)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    assert np.allclose(smol.score(prompts, candidates), kept, atol=1e-5)


def naive_scores(backend, prompts, candidates):
    """Each candidate's summed log-probability from one whole-sequence forward pass per pair."""
    out = np.zeros((len(prompts), len(candidates)))
    for i, prompt in enumerate(prompts):
        prompt_ids = backend.encode(prompt)
        for j, candidate in enumerate(candidates):
            cand = continuation_ids(backend, prompt_ids, prompt, candidate)
            with torch.inference_mode():
                logp = torch.log_softmax(backend.lm(input_ids=torch.tensor([prompt_ids + cand])).logits[0].float(), -1)
            out[i, j] = sum(logp[len(prompt_ids) - 1 + t, tok].item() for t, tok in enumerate(cand))
    return out


def test_token_tree_feeds_shared_prefixes_once():
    tokens, parents, reads = token_tree([[1, 2, 3], [1, 2, 4], [5], [1, 6]])
    # fed: [1], [1, 2], [1]'s other child is read, not fed; [5] is one token: nothing fed
    assert tokens == [1, 2] and parents == [-1, 0]
    assert reads == [(0, 2, 0), (1, 3, 0), (0, 2, 1), (1, 4, 1), (0, 6, 3)]


def test_candidate_tokens_from_joint_tokenisation(smol):
    prompt = "Press a button. ACTION="
    ids = smol.encode(prompt)
    assert continuation_ids(smol, ids, prompt, "blue") == smol.encode(prompt + "blue")[len(ids) :]


def test_render_tools_and_system_fallbacks(smol):
    assert not smol.supports_tools  # SmolLM2's template ignores tools: they go to the system message
    text = smol.render([{"role": "user", "content": "hi"}], tools=[TOOL])
    assert '"name": "eat"' in text and "<tool_call>" in text and text.endswith("<|im_start|>assistant\n")
    tokenizer = copy.deepcopy(smol.tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}"
        "{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
    )
    strict = HFBackend(lm=smol.lm, tokenizer=tokenizer)
    assert not strict.supports_system
    assert (
        strict.render([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
        == "user: S\n\nU\nassistant: "
    )


def test_gemma_long_shared_prefix_matches_reference():
    # longer than Gemma 3's 512-token sliding window; BOS added by the template
    gemma = HFBackend("gemma3-270m")
    assert gemma.bos is not None and not gemma.supports_tools
    prompts = [
        gemma.render([{"role": "system", "content": RULES * 3}, {"role": "user", "content": o}])
        for o in observations(3)
    ]
    assert prompts[0].startswith("<bos><start_of_turn>user\n") and prompts[0].endswith("<start_of_turn>model\n")
    assert len(gemma.encode(prompts[0])) > 600
    with counting_shared_prefix_calls() as calls:
        out = gemma.generate(prompts, max_new_tokens=6)
    assert not calls  # beyond the window the prefix is copied into the rows
    for prompt, completion in zip(prompts, out):
        assert completion.token_ids == hf_greedy(gemma, prompt, 6)[: len(completion.token_ids)]
    # candidates sharing a prefix, fed as a token tree beyond the window (a mask per layer type)
    candidates = ["pick_up_left", "pick_up_right", "eat", "put_down_left"]
    assert np.allclose(gemma.score(prompts, candidates), naive_scores(gemma, prompts, candidates), atol=1e-3)
    # within the window: attended to once (4 query heads on 1 kv head, head_dim 256)
    short = chat_prompts(gemma, 4)
    out = run_modes(gemma, lambda: gemma.generate(short, max_new_tokens=6))
    assert out["shared_shared_calls"] > 0
    assert [c.token_ids for c in out["shared"]] == [c.token_ids for c in out["plain"]]
    assert out["shared"][0].token_ids == hf_greedy(gemma, short[0], 6)[: len(out["shared"][0].token_ids)]
