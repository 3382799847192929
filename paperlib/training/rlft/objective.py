"""Paper B's RL fine-tuning objective (RLFT), piece by piece: rewards, advantages, the loss,
the log-probabilities it needs and a value head. No training loop here.

Schmied et al. 2025, "LLMs are Greedy Agents" (arXiv 2504.16078), Sec. 3: the model is
fine-tuned on its own chain of thought with PPO's clipped objective and a KL penalty to the
frozen model, on the environment's reward (normalised) plus -5 for an output with no valid
action; advantages are Monte-Carlo rewards-to-go for the bandits and GAE with a value head
for tic-tac-toe. Its Fig. 8 adds an exploration bonus (+1 for an arm not yet tried).

Shapes. The environment side works on numpy arrays of episodes x steps, with ``mask`` True
where a step exists (episodes of different lengths are padded at the end) and ``valid``
True where the model's output held a valid action. The model side works on one row per
step (one decision): its prompt left-padded, its completion right-padded, and a token mask
that is 1 on completion tokens only. A step's advantage applies to every token of its
completion.

Choices the paper leaves open, each a named constant in :mod:`paperlib.training.rlft` **[ours]**:

- Normalisation of the environment reward: standardised by the moments of one reward under
  the game's prior (the game's: ``paperlib.bandits.training.reward_moments``; tic-tac-toe's
  return is already on a unit scale), fixed for the whole run. A batch's own
  mean and spread would move as the policy changes (a policy that settles on good arms
  narrows them), changing what -5 and +1 weigh against the environment reward from one
  update to the next; with fixed moments the penalty is 5 standard deviations of a reward
  at every update, noise level and reward family.
- Exploration bonus: paid only on valid steps (the fallback's random arm is not the
  model's choice), and an arm counts as tried once played, validly or not.
- Rewards-to-go are undiscounted (gamma = 1): the bandit's objective, and its regret, are
  undiscounted sums over the horizon.
- Bandit baseline: the mean return-to-go of the batch's episodes at the same step. In a
  batch where every episode has that step (the bandits' fixed horizon) this differs from
  the leave-one-out mean (unbiased) only by the factor (n - 1) / n, which the
  standardisation below removes.
- Advantages standardised over the batch's steps (mean 0, population std 1), the usual
  PPO practice; for tic-tac-toe the value target is the GAE return, before standardising.
- KL penalty: the k3 estimator, per token, inside the loss (not in the reward).
- Value loss: unclipped squared error, weighted by :data:`VALUE_COEF`.
- Token-level averaging: every completion token of the batch weighs the same.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from trl.trainer.utils import pad, selective_log_softmax, selective_log_softmax_and_entropy

from paperlib.training.rlft import (
    ADVANTAGE_EPS,
    CLIP_EPSILON,
    EXPLORATION_BONUS,
    GAE_GAMMA,
    GAE_LAMBDA,
    GAMMA,
    INVALID_PENALTY,
    KL_BETA,
    VALUE_COEF,
)
from paperlib.training.shared_prefix import shared_prefix_logprobs, shares_prefix

# -- rewards (episodes x steps, numpy) ----------------------------------------------------------


def exploration_bonus(actions: np.ndarray, valid: np.ndarray, bonus: float = EXPLORATION_BONUS) -> np.ndarray:
    """``bonus`` at each valid step whose arm had not been played earlier in its episode
    (``valid`` must be False on padding, or the caller masks it, as :func:`shaped_rewards` does)."""
    first = np.zeros(actions.shape, dtype=bool)
    for row, episode in zip(first, actions):
        row[np.unique(episode, return_index=True)[1]] = True
    return np.where(first & valid, bonus, 0.0)


def shaped_rewards(
    rewards: np.ndarray,
    valid: np.ndarray,
    mask: np.ndarray,
    *,
    mean: float,
    scale: float,
    actions: np.ndarray | None = None,
    penalty: float = INVALID_PENALTY,
) -> np.ndarray:
    """Paper B's step reward: the environment reward standardised, ``(r - mean) / scale``,
    plus ``penalty`` where the step is invalid, plus the exploration bonus when ``actions``
    are given; 0 on padding."""
    shaped = (rewards - mean) / scale + np.where(valid, 0.0, penalty)
    if actions is not None:
        shaped = shaped + exploration_bonus(actions, valid)
    return np.where(mask, shaped, 0.0)


# -- returns and advantages (episodes x steps, numpy) -------------------------------------------


def returns_to_go(rewards: np.ndarray, mask: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """G_t = r_t + gamma * G_{t+1}, over each episode's own steps; 0 on padding."""
    rewards = np.where(mask, rewards, 0.0)
    returns = np.zeros(rewards.shape)
    following = np.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        following = rewards[:, t] + gamma * following
        returns[:, t] = following
    return np.where(mask, returns, 0.0)


def per_step_baseline(returns: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean return at each step over the episodes that have that step (0 where none has)."""
    counts = mask.sum(axis=0)
    return np.divide(np.where(mask, returns, 0.0).sum(axis=0), counts, out=np.zeros(mask.shape[1]), where=counts > 0)


def standardise(values: np.ndarray, mask: np.ndarray, eps: float = ADVANTAGE_EPS) -> np.ndarray:
    """(x - mean) / (std + eps) over the masked entries (population std); 0 on padding."""
    kept = values[mask]
    return np.where(mask, (values - kept.mean()) / (kept.std() + eps), 0.0)


def mc_advantages(rewards: np.ndarray, mask: np.ndarray, gamma: float = GAMMA) -> tuple[np.ndarray, np.ndarray]:
    """The bandits' advantages: returns-to-go minus the per-step batch mean, standardised.
    Returns (advantages, returns-to-go)."""
    returns = returns_to_go(rewards, mask, gamma)
    return standardise(returns - per_step_baseline(returns, mask), mask), returns


def gae(
    rewards: np.ndarray, values: np.ndarray, mask: np.ndarray, gamma: float = GAE_GAMMA, lam: float = GAE_LAMBDA
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation (Schulman et al. 2016) on terminating episodes.

    delta_t = r_t + gamma V_{t+1} - V_t with V = 0 after an episode's last step;
    A_t = delta_t + gamma lam A_{t+1}. Returns (advantages, value targets A + V), 0 on padding.
    """
    rewards, values = np.where(mask, rewards, 0.0), np.where(mask, values, 0.0)
    advantages = np.zeros(rewards.shape)
    following = np.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        next_value = values[:, t + 1] if t + 1 < rewards.shape[1] else 0.0
        following = rewards[:, t] + gamma * next_value - values[:, t] + gamma * lam * following
        advantages[:, t] = following
    advantages = np.where(mask, advantages, 0.0)
    return advantages, np.where(mask, advantages + values, 0.0)


def gae_advantages(
    rewards: np.ndarray, values: np.ndarray, mask: np.ndarray, gamma: float = GAE_GAMMA, lam: float = GAE_LAMBDA
) -> tuple[np.ndarray, np.ndarray]:
    """Tic-tac-toe's advantages: GAE, standardised. Returns (advantages, value targets)."""
    advantages, targets = gae(rewards, values, mask, gamma, lam)
    return standardise(advantages, mask), targets


# -- the loss (torch) ---------------------------------------------------------------------------


def clipped_surrogate(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, epsilon: float = CLIP_EPSILON
) -> torch.Tensor:
    """PPO's per-token loss -min(rho A, clip(rho, 1 - eps, 1 + eps) A), rho = exp(new - old)."""
    ratio = torch.exp(logprobs - old_logprobs)
    return -torch.min(ratio * advantages, ratio.clamp(1 - epsilon, 1 + epsilon) * advantages)


def clipped_tokens(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, epsilon: float = CLIP_EPSILON
) -> torch.Tensor:
    """Where the clip binds (the token's gradient is zero): rho < 1 - eps with A < 0, or
    rho > 1 + eps with A > 0."""
    ratio = torch.exp(logprobs - old_logprobs)
    return ((ratio < 1 - epsilon) & (advantages < 0)) | ((ratio > 1 + epsilon) & (advantages > 0))


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference) on the policy's tokens (Schulman 2020,
    "Approximating KL divergence"; trl's GRPO penalty): exp(d) - d - 1, d = ref - new.
    Never negative, and unbiased: its mean under the policy is the KL."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def value_loss(values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Unclipped squared error 0.5 (V - target)^2 per step."""
    return 0.5 * (values - targets) ** 2


def ppo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float = CLIP_EPSILON,
    beta: float = KL_BETA,
    entropies: torch.Tensor | None = None,
    values: torch.Tensor | None = None,
    targets: torch.Tensor | None = None,
    value_coef: float = VALUE_COEF,
    tokens: float | None = None,
    rows: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Paper B's loss on one batch of steps: token mean of (clipped surrogate + beta k3 KL),
    plus ``value_coef`` times the step mean of the value loss when ``values`` are given.

    Log-probs, masks and ``entropies`` are (rows, completion tokens); ``advantages``,
    ``values`` and ``targets`` one per row. ``tokens`` and ``rows`` are the denominators
    of the means: by default this batch's completion tokens and rows; under gradient
    accumulation pass the whole batch's, so the micro-batches' losses and stats add up to
    the whole batch's. Stats: policy_loss, kl (to the reference), approx_kl (to the
    rollout policy, k3), clip_fraction, and entropy and value_loss when given.
    """
    if (values is None) != (targets is None):
        raise ValueError("values and targets go together: give both or neither")
    mask = mask.bool()
    tokens = mask.sum().clamp(min=1) if tokens is None else tokens
    per_row = advantages[:, None]

    def token_mean(x):
        return torch.where(mask, x, 0.0).sum() / tokens

    policy = token_mean(clipped_surrogate(logprobs, old_logprobs, per_row, epsilon))
    kl = token_mean(kl_k3(logprobs, ref_logprobs))
    loss = policy + beta * kl
    with torch.no_grad():
        stats = {
            "policy_loss": policy.item(),
            "kl": kl.item(),
            "approx_kl": token_mean(kl_k3(old_logprobs, logprobs)).item(),
            "clip_fraction": token_mean(clipped_tokens(logprobs, old_logprobs, per_row, epsilon)).item(),
        }
        if entropies is not None:
            stats["entropy"] = token_mean(entropies).item()
    if values is not None:
        critic = value_loss(values, targets).sum() / (len(values) if rows is None else rows)
        loss = loss + value_coef * critic
        stats["value_loss"] = critic.item()
    return loss, stats


# -- log-probabilities of completions (torch, a causal LM) --------------------------------------


class Scored(NamedTuple):
    """Per-token log-probs (rows, completion tokens; 0 on padding), their entropies (or
    None) and each row's last hidden state at its last prompt token (or None)."""

    logprobs: torch.Tensor
    entropies: torch.Tensor | None
    states: torch.Tensor | None


def pad_rows(prompts: list[list[int]], completions: list[list[int]], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Token ids of steps as a batch: prompts left-padded, completions right-padded (trl's
    ``pad``), each with its 0/1 mask."""

    def batch(rows, side):
        ids = [torch.tensor(row, dtype=torch.long) for row in rows]
        ones = [torch.ones(len(row), dtype=torch.long) for row in rows]
        return pad(ids, pad_token_id, side), pad(ones, 0, side)

    prompt_ids, prompt_mask = batch(prompts, "left")
    completion_ids, completion_mask = batch(completions, "right")
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
    }


def completion_logprobs(
    model,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    entropies: bool = False,
    states: bool = False,
) -> Scored:
    """Log-probs of the completion tokens given their prompts, in one forward pass.

    The LM head runs only at the positions that predict a completion token (the last prompt
    token and every completion token but the last; transformers' ``logits_to_keep``), not at
    every prompt position, which with a 152k-token vocabulary is half the cost on a CPU.
    Position ids count real tokens only, as in generation, so left padding changes nothing.
    ``entropies``: also each position's entropy (no gradient; a statistic). ``states``: also
    the last hidden state at the last prompt token, what :class:`ValueHead` reads. A model on
    the shared-prefix attention (``paperlib.training.shared_prefix``) feeds the prefix its
    rows share once; the log-probabilities and gradients are the same.
    """
    if not bool(prompt_mask[:, -1].all()):
        raise ValueError("prompts must be left-padded: every row's last prompt token must be real")
    if bool((completion_mask[:, 1:] > completion_mask[:, :-1]).any()):
        raise ValueError("completions must be right-padded: a row's mask may not rise after a 0")
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention = torch.cat([prompt_mask, completion_mask], dim=1)
    start, length = prompt_ids.shape[1] - 1, completion_ids.shape[1]
    if shares_prefix(model):
        scored = shared_prefix_logprobs(model, input_ids, attention, length, entropies=entropies, states=states)
        if scored is not None:
            logprobs, entropy, hidden = scored
            return Scored(
                logprobs * completion_mask, None if entropy is None else (entropy * completion_mask).detach(), hidden
            )
    out = model(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=(attention.cumsum(dim=1) - 1).clamp(min=0),
        logits_to_keep=torch.arange(start, start + length, device=prompt_ids.device),
        output_hidden_states=states,
        use_cache=False,
    )
    logits = out.logits.float()  # under bfloat16 autocast, the log-softmax still in float32
    if entropies:
        logprobs, entropy = selective_log_softmax_and_entropy(
            logits, completion_ids, entropy_requires_grad=False, row_mask=completion_mask
        )
    else:
        logprobs, entropy = selective_log_softmax(logits, completion_ids, row_mask=completion_mask), None
    return Scored(logprobs, entropy, out.hidden_states[-1][:, start] if states else None)


def reference_logprobs(
    model,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
) -> torch.Tensor:
    """Log-probs under the frozen model: the same peft model with its adapter disabled."""
    with torch.no_grad(), model.disable_adapter():
        return completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask).logprobs


# -- the value head (tic-tac-toe) ---------------------------------------------------------------


class ValueHead(torch.nn.Module):
    """V(s) = w . h + b on the LLM's last hidden state h at the step's last prompt token
    (:attr:`Scored.states`), as paper B puts a value head on the LLM for tic-tac-toe. The
    gradient of the value loss reaches the adapter through h (a shared trunk) **[ours]**."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden_size, 1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        """(rows, hidden) -> (rows,)."""
        return self.linear(states.to(self.linear.weight.dtype)).squeeze(-1)
