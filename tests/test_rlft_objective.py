"""Paper B's RLFT objective, each piece on a case worked out by hand (the arithmetic is in the
comments), and the batched log-probs against a naive full-logits computation on tiny random
models."""

import math

import numpy as np
import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from paperlib.training.rlft import CLIP_EPSILON, INVALID_PENALTY, KL_BETA, VALUE_COEF
from paperlib.training.rlft.objective import (
    ValueHead,
    clipped_surrogate,
    completion_logprobs,
    exploration_bonus,
    gae,
    gae_advantages,
    kl_k3,
    mc_advantages,
    pad_rows,
    per_step_baseline,
    ppo_loss,
    reference_logprobs,
    returns_to_go,
    shaped_rewards,
    standardise,
    value_loss,
)

# -- rewards -----------------------------------------------------------------------------------


def test_paper_settings():
    assert (INVALID_PENALTY, CLIP_EPSILON, KL_BETA) == (-5.0, 0.2, 0.05)


def test_shaped_rewards_penalty_bonus_and_padding():
    # Bernoulli rewards: mean 0.5, scale 0.5, so r = 1 -> +1 and r = 0 -> -1.
    rewards = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, np.nan]])
    valid = np.array([[True, True, True], [True, False, False]])
    mask = np.array([[True, True, True], [True, True, False]])
    actions = np.array([[2, 2, 0], [1, 3, -1]])
    plain = shaped_rewards(rewards, valid, mask, mean=0.5, scale=0.5)
    # episode 1, step 2 is invalid: -1 - 5 = -6; its padded step is 0
    np.testing.assert_allclose(plain, [[1, -1, 1], [1, -6, 0]])
    with_bonus = shaped_rewards(rewards, valid, mask, mean=0.5, scale=0.5, actions=actions)
    # +1 where an arm is played for the first time: arms 2 then 0 in episode 0; arm 1 in episode 1
    # (arm 3 is new at step 2 of episode 1 but that step is invalid, so no bonus)
    np.testing.assert_allclose(with_bonus, [[2, -1, 2], [2, -6, 0]])


def test_exploration_bonus_counts_fallback_arms_as_tried():
    actions = np.array([[1, 3, 3, 0]])
    valid = np.array([[True, False, True, True]])
    # arm 3 was first played by the fallback (invalid step): tried, so step 3 earns nothing
    np.testing.assert_array_equal(exploration_bonus(actions, valid), [[1, 0, 0, 1]])


# -- returns and advantages --------------------------------------------------------------------

REWARDS = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 100.0]])  # episode 1 has 2 steps; 100 is padding
MASK = np.array([[True, True, True], [True, True, False]])


def test_returns_to_go_undiscounted_and_discounted():
    # gamma = 1: [1+2+3, 2+3, 3] and [4+5, 5, pad]
    np.testing.assert_allclose(returns_to_go(REWARDS, MASK), [[6, 5, 3], [9, 5, 0]])
    # gamma = 0.5: G2 = 3, G1 = 2 + 0.5*3 = 3.5, G0 = 1 + 0.5*3.5 = 2.75; G1 = 5, G0 = 4 + 2.5 = 6.5
    np.testing.assert_allclose(returns_to_go(REWARDS, MASK, gamma=0.5), [[2.75, 3.5, 3], [6.5, 5, 0]])


def test_bandit_advantages_per_step_baseline_then_standardised():
    returns = returns_to_go(REWARDS, MASK)
    # step means over the episodes that have the step: (6+9)/2, (5+5)/2, 3 (episode 0 alone)
    np.testing.assert_allclose(per_step_baseline(returns, MASK), [7.5, 5, 3])
    advantages, rtg = mc_advantages(REWARDS, MASK)
    # centred: [[-1.5, 0, 0], [1.5, 0, pad]]; over the 5 real steps mean 0, variance (2.25+2.25)/5 = 0.9
    s = 1.5 / math.sqrt(0.9)
    np.testing.assert_allclose(advantages, [[-s, 0, 0], [s, 0, 0]], rtol=1e-6)
    np.testing.assert_allclose(rtg, returns)


def test_standardise_over_masked_entries():
    values = np.array([[1.0, 3.0], [5.0, 99.0]])
    mask = np.array([[True, True], [True, False]])
    # 1, 3, 5: mean 3, population std sqrt((4+0+4)/3)
    std = math.sqrt(8 / 3)
    np.testing.assert_allclose(standardise(values, mask), [[-2 / std, 0], [2 / std, 0]], rtol=1e-6)


def test_gae_on_two_episodes_of_different_lengths():
    rewards = np.array([[0.0, 0.0, 1.0], [-5.0, -1.0, 9.0]])  # episode 1: 2 steps, then padding
    values = np.array([[0.5, 0.2, 0.6], [0.1, -0.4, 9.0]])
    advantages, targets = gae(rewards, values, MASK, gamma=1.0, lam=0.5)
    # episode 0: d2 = 1 - 0.6 = 0.4, d1 = 0.6 - 0.2 = 0.4, d0 = 0.2 - 0.5 = -0.3
    #   A2 = 0.4, A1 = 0.4 + 0.5*0.4 = 0.6, A0 = -0.3 + 0.5*0.6 = 0
    # episode 1 (V = 0 after its last step): d1 = -1 - (-0.4) = -0.6, d0 = -5 + (-0.4) - 0.1 = -5.5
    #   A1 = -0.6, A0 = -5.5 + 0.5*(-0.6) = -5.8
    np.testing.assert_allclose(advantages, [[0, 0.6, 0.4], [-5.8, -0.6, 0]], atol=1e-12)
    # targets A + V: [0.5, 0.8, 1.0] and [-5.7, -1.0]
    np.testing.assert_allclose(targets, [[0.5, 0.8, 1.0], [-5.7, -1.0, 0]], atol=1e-12)
    # lambda = 1 is Monte Carlo, A = G - V; lambda = 0 is TD(0), A = r + V' - V
    mc, _ = gae(rewards, values, MASK, gamma=1.0, lam=1.0)
    np.testing.assert_allclose(mc, np.where(MASK, returns_to_go(rewards, MASK) - values, 0), atol=1e-12)
    td, _ = gae(rewards, values, MASK, gamma=1.0, lam=0.0)
    np.testing.assert_allclose(td, [[-0.3, 0.4, 0.4], [-5.5, -0.6, 0]], atol=1e-12)
    standardised, same_targets = gae_advantages(rewards, values, MASK, gamma=1.0, lam=0.5)
    np.testing.assert_allclose(standardised, standardise(advantages, MASK))
    np.testing.assert_allclose(same_targets, targets)


# -- the loss ----------------------------------------------------------------------------------

# Two rows of 3 completion tokens and one padded token each. Ratios new/old 0.5, 1, 1.5: below,
# inside and above the clip range [0.8, 1.2]. Row 0 has advantage +1, row 1 advantage -1.
RATIOS = torch.tensor([0.5, 1.0, 1.5])
OLD = torch.full((2, 4), -2.0)
TOKEN_MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]])
ADVANTAGES = torch.tensor([1.0, -1.0])


def new_logprobs():
    new = OLD.clone()
    new[:, :3] += torch.log(RATIOS)
    new[:, 3] = OLD[:, 3] + 5.0  # padding: ratio e^5, must not count
    return new.requires_grad_()


def test_clipped_surrogate_per_token_and_its_gradient():
    new = new_logprobs()
    per_token = clipped_surrogate(new[:, :3], OLD[:, :3], ADVANTAGES[:, None])
    # A = +1: -min(rho, clip(rho)) = -min(0.5, 0.8), -1, -min(1.5, 1.2)
    # A = -1: -min(-rho, -clip(rho)) = max(0.5, 0.8), 1, max(1.5, 1.2)
    torch.testing.assert_close(per_token, torch.tensor([[-0.5, -1.0, -1.2], [0.8, 1.0, 1.5]]))
    per_token.sum().backward()
    # d/dlogp of -rho*A is -rho*A where unclipped; 0 where the clip binds (row 0 token 2, row 1 token 0)
    torch.testing.assert_close(new.grad, torch.tensor([[-0.5, -1.0, 0, 0], [0, 1.0, 1.5, 0]]))


def test_kl_k3_by_hand_and_unbiased():
    new = torch.zeros(3)
    ref = torch.log(torch.tensor([2.0, 1.0, 0.5]))  # d = ref - new = ln 2, 0, -ln 2
    # exp(d) - d - 1: 2 - ln2 - 1, 0, 0.5 + ln2 - 1
    expected = torch.tensor([1 - math.log(2), 0.0, math.log(2) - 0.5])
    torch.testing.assert_close(kl_k3(new, ref), expected)
    # two-token vocabulary, policy p = (1/2, 1/2), reference q = (1/4, 3/4): each token once,
    # weighted by p, the estimates average to KL(p || q) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
    p, q = torch.log(torch.tensor([0.5, 0.5])), torch.log(torch.tensor([0.25, 0.75]))
    assert kl_k3(p, q).mean().item() == pytest.approx(0.5 * math.log(4 / 3))


def test_value_loss_unclipped():
    # 0.5 * (0.5 - 1)^2 = 0.125, 0.5 * (-1 - 1)^2 = 2
    torch.testing.assert_close(
        value_loss(torch.tensor([0.5, -1.0]), torch.tensor([1.0, 1.0])), torch.tensor([0.125, 2.0])
    )


def test_ppo_loss_combines_terms_over_completion_tokens_only():
    new = new_logprobs()
    ref = new.detach() + math.log(2)  # every token: d = ln 2, k3 = 1 - ln 2
    ref[:, 3] = 50.0  # padding: must not count
    entropies = torch.tensor([[1.0, 2.0, 3.0, 9.0], [4.0, 5.0, 6.0, 9.0]])
    loss, stats = ppo_loss(new, OLD, ref, ADVANTAGES, TOKEN_MASK, entropies=entropies)
    surrogate = (-0.5 - 1.0 - 1.2 + 0.8 + 1.0 + 1.5) / 6  # = 0.1, the six per-token losses above
    kl = 1 - math.log(2)
    assert loss.item() == pytest.approx(surrogate + 0.05 * kl)
    # approx KL to the rollout policy, (rho - 1) - ln rho: ln2 - 0.5, 0, 0.5 - ln 1.5; mean over 3
    approx_kl = (math.log(2) - 0.5 + 0.5 - math.log(1.5)) / 3
    assert stats == pytest.approx(
        {"policy_loss": surrogate, "kl": kl, "approx_kl": approx_kl, "clip_fraction": 2 / 6, "entropy": 21 / 6}
    )
    loss.backward()
    # surrogate gradient / 6 tokens (test above), plus beta/6 * d k3/d new = beta/6 * (1 - exp(d)) = -beta/6
    surrogate_grad = torch.tensor([[-0.5, -1.0, 0, 0], [0, 1.0, 1.5, 0]]) / 6
    kl_grad = TOKEN_MASK * (-KL_BETA / 6)
    torch.testing.assert_close(new.grad, surrogate_grad + kl_grad)


def test_ppo_loss_value_term_and_micro_batches_add_up():
    new, ref = new_logprobs(), OLD + 0.3
    values, targets = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 1.0])
    loss, stats = ppo_loss(new, OLD, ref, ADVANTAGES, TOKEN_MASK, values=values, targets=targets)
    no_value, _ = ppo_loss(new, OLD, ref, ADVANTAGES, TOKEN_MASK)
    # value loss: (0.125 + 2) / 2 rows = 1.0625, weighted by VALUE_COEF = 0.1
    assert stats["value_loss"] == pytest.approx(1.0625)
    assert loss.item() == pytest.approx(no_value.item() + VALUE_COEF * 1.0625)
    # the same batch as two micro-batches of one row, normalised by the whole batch's 6 tokens, 2 rows
    halves = [
        ppo_loss(
            new[i : i + 1],
            OLD[i : i + 1],
            ref[i : i + 1],
            ADVANTAGES[i : i + 1],
            TOKEN_MASK[i : i + 1],
            values=values[i : i + 1],
            targets=targets[i : i + 1],
            tokens=6,
            rows=2,
        )
        for i in range(2)
    ]
    assert sum(h[0].item() for h in halves) == pytest.approx(loss.item())
    for key, value in stats.items():
        assert sum(h[1][key] for h in halves) == pytest.approx(value)
    with pytest.raises(ValueError, match="together"):
        ppo_loss(new, OLD, ref, ADVANTAGES, TOKEN_MASK, values=values)


# -- log-probs of completions on tiny random models --------------------------------------------

VOCAB = 64


def tiny(kind):
    """A two-layer random model of each family the package trains (SmolLM2, Qwen2.5, Gemma 3),
    and GPT-2, whose absolute position embeddings (unlike rotary ones) notice left padding
    unless the position ids skip it."""
    torch.manual_seed(0)
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=128)).eval()
    shape = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    if kind == "llama":
        return LlamaForCausalLM(LlamaConfig(**shape)).eval()
    if kind == "qwen2":
        return Qwen2ForCausalLM(Qwen2Config(**shape)).eval()
    return Gemma3ForCausalLM(Gemma3TextConfig(**shape, head_dim=8, sliding_window=4)).eval()


PROMPTS = [[5, 9, 2, 7, 11], [3, 8], [1, 4, 6]]
COMPLETIONS = [[12, 13], [20, 21, 22, 23], [30]]


def naive(model, prompt, completion):
    """One unpadded row, logits at every position, then log-softmax and entropy in float64."""
    ids = torch.tensor([prompt + completion])
    out = model(input_ids=ids, output_hidden_states=True)
    logp = out.logits[0, len(prompt) - 1 : -1].double().log_softmax(-1)
    chosen = logp.gather(-1, torch.tensor(completion)[:, None])[:, 0]
    entropy = -(logp.exp() * logp).sum(-1)
    return chosen, entropy, out.hidden_states[-1][0, len(prompt) - 1]


def batch():
    return pad_rows(PROMPTS, COMPLETIONS, pad_token_id=0)


def test_pad_rows_left_pads_prompts_and_right_pads_completions():
    rows = batch()
    torch.testing.assert_close(rows["prompt_ids"][1], torch.tensor([0, 0, 0, 3, 8]))
    torch.testing.assert_close(rows["prompt_mask"][1], torch.tensor([0, 0, 0, 1, 1]))
    torch.testing.assert_close(rows["completion_ids"][2], torch.tensor([30, 0, 0, 0]))
    torch.testing.assert_close(rows["completion_mask"][2], torch.tensor([1, 0, 0, 0]))


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma3", "gpt2"])
def test_completion_logprobs_equal_naive_full_logits(kind):
    model = tiny(kind)
    with torch.no_grad():
        scored = completion_logprobs(model, **batch(), entropies=True, states=True)
        assert scored.logprobs.shape == (3, 4) and scored.states.shape == (3, 32)
        for i, (prompt, completion) in enumerate(zip(PROMPTS, COMPLETIONS)):
            chosen, entropy, state = naive(model, prompt, completion)
            n = len(completion)
            torch.testing.assert_close(scored.logprobs[i, :n].double(), chosen, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(scored.entropies[i, :n].double(), entropy, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(scored.states[i], state, atol=1e-5, rtol=1e-5)
            assert (scored.logprobs[i, n:] == 0).all() and (scored.entropies[i, n:] == 0).all()


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_a_shared_prefix_gives_the_same_logprobs_entropies_states_and_gradients(kind):
    from paperlib.training.shared_prefix import shares_prefix, use_training_attention

    common = list(range(30, 50))  # 20 tokens every prompt opens with (at least MIN_SHARED_PREFIX)
    rows = pad_rows([common + [5, 9, 2], common + [3], common + [1, 4, 6, 7]], COMPLETIONS, pad_token_id=0)
    models = []
    for shared in (False, True):
        model = tiny(kind)
        assert not shared or use_training_attention(model)
        torch.manual_seed(1)
        models.append(lora(model))
    plain, shared = models
    assert shares_prefix(shared) and not shares_prefix(plain)
    results = []
    for model in models:
        scored = completion_logprobs(model, **rows, entropies=True, states=True)
        (scored.logprobs.sum() + scored.states.sum()).backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.requires_grad}
        results.append((scored, grads))
    (a, grads_a), (b, grads_b) = results
    for x, y in ((a.logprobs, b.logprobs), (a.entropies, b.entropies), (a.states, b.states)):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], atol=1e-5, rtol=1e-4)
    with torch.no_grad():  # rows sharing too few tokens take the plain path on the same model
        torch.testing.assert_close(
            completion_logprobs(shared, **batch()).logprobs, completion_logprobs(plain, **batch()).logprobs
        )


def test_completion_logprobs_rejects_wrong_padding():
    rows = batch()
    with pytest.raises(ValueError, match="left-padded"):
        completion_logprobs(
            tiny("llama"),
            rows["prompt_ids"],
            rows["prompt_mask"].flip(1),
            rows["completion_ids"],
            rows["completion_mask"],
        )
    with pytest.raises(ValueError, match="right-padded"):
        completion_logprobs(
            tiny("llama"),
            rows["prompt_ids"],
            rows["prompt_mask"],
            rows["completion_ids"],
            rows["completion_mask"].flip(1),
        )


def lora(model):
    # init_lora_weights=False: random A and B, so the adapter changes the model's outputs
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    return get_peft_model(model, config)


def test_reference_logprobs_are_the_model_without_its_adapter():
    model = tiny("llama")
    with torch.no_grad():
        frozen = completion_logprobs(model, **batch()).logprobs
    peft_model = lora(model)
    with torch.no_grad():
        tuned = completion_logprobs(peft_model, **batch()).logprobs
    assert (tuned - frozen).abs().max() > 1e-3
    torch.testing.assert_close(reference_logprobs(peft_model, **batch()), frozen, atol=1e-6, rtol=1e-6)
    # and the adapter is back on afterwards
    with torch.no_grad():
        torch.testing.assert_close(completion_logprobs(peft_model, **batch()).logprobs, tuned)


def test_value_head_shape_and_gradient_reach_head_and_adapter_only():
    peft_model = lora(tiny("llama"))
    head = ValueHead(peft_model.config.hidden_size)
    scored = completion_logprobs(peft_model, **batch(), states=True)
    values = head(scored.states)
    assert values.shape == (3,)
    value_loss(values, torch.tensor([1.0, -1.0, 0.0])).mean().backward()
    assert head.linear.weight.grad.abs().sum() > 0 and head.linear.bias.grad.abs().sum() > 0
    trained = {name: p.grad for name, p in peft_model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in name for name in trained)
    assert any(g is not None and g.abs().sum() > 0 for g in trained.values())
    frozen = [p.grad for name, p in peft_model.named_parameters() if not p.requires_grad]
    assert frozen and all(g is None for g in frozen)


@pytest.mark.slow
def test_completion_logprobs_on_smollm2_with_and_without_lora():
    from paperlib.models import load_local

    model, tokenizer = load_local("smollm2-135m")
    prompts = [tokenizer.encode(text) for text in ("Step=1 Action=blue Reward=0.3\nWhat do you predict next?", "Hi")]
    completions = [tokenizer.encode(text) for text in (" ACTION=green", " ACTION=red then blue")]
    rows = pad_rows(prompts, completions, pad_token_id=tokenizer.pad_token_id or 0)
    with torch.no_grad():
        frozen = completion_logprobs(model, **rows).logprobs
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            torch.testing.assert_close(
                frozen[i, : len(completion)].double(), naive(model, prompt, completion)[0], atol=1e-4, rtol=1e-4
            )
    torch.testing.assert_close(reference_logprobs(lora(model), **rows), frozen, atol=1e-5, rtol=1e-5)
