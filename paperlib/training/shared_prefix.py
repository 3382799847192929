"""Log-probabilities of completions whose prompts share a prefix, with the prefix fed once.

Both trainers score batches of rows that open with the same tokens: a philosopher's rules and
tools (≈ 85% of a GRPO turn row), a bandit's instructions (≈ 70% of an RLFT row without CoT).
:func:`shared_prefix_logprobs` runs the model on that prefix once per batch (with gradients,
so the adapter still learns through it) and on each row's own tokens attending to the
prefix's keys and values and to themselves (:func:`paperlib.backends.hf.shared_prefix_attention`,
the backend's own kernel, reached through the attention implementation
:data:`TRAINING_ATTENTION`); the LM head then runs at the completion positions only. The
log-probabilities and their gradients are those of the plain forward pass (tested in both
trainers' tests). A model opts in with :func:`use_training_attention`, which refuses (returns
False) what the kernel does not cover: attention other than sdpa, sliding-window layers, and
LM heads that scale or cap logits.

Layout (trl's, which RLFT's batches share): ``input_ids`` is each row's prompt, left-padded,
then its completion, right-padded; column j of the result is completion token j.
"""

from __future__ import annotations

from contextlib import nullcontext

TRAINING_ATTENTION = "paperlib_sdpa_or_shared_prefix"
# config fields that change how hidden states become logits: a model setting any of them is
# scored on the plain path
PLAIN_HEAD_ONLY = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)


def register_training_attention() -> None:
    """Register :data:`TRAINING_ATTENTION`: torch's sdpa attention (and its masks), except for a
    call given ``shared_prefix``, which takes the backend's shared-prefix attention. The
    choice rides on the call's own arguments, not on the model's config, so a layer that
    gradient checkpointing recomputes in the backward pass takes the same path again."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    from paperlib.backends.hf import shared_prefix_attention

    def attention(module, query, key, value, attention_mask, shared_prefix=None, **kwargs):
        if shared_prefix is None:
            return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return shared_prefix_attention(module, query, key, value, attention_mask, shared_prefix=shared_prefix, **kwargs)

    AttentionInterface.register(TRAINING_ATTENTION, attention)
    AttentionMaskInterface.register(TRAINING_ATTENTION, sdpa_mask)


def use_training_attention(lm) -> bool:
    """Put ``lm`` (a causal LM, before any peft wrapping) on :data:`TRAINING_ATTENTION` where the
    shared-prefix kernel covers it (sdpa, no sliding-window layers); whether it did."""
    text = lm.config.get_text_config()
    if text._attn_implementation != "sdpa" or "sliding_attention" in (getattr(text, "layer_types", None) or ()):
        return False
    register_training_attention()
    lm.set_attn_implementation(TRAINING_ATTENTION)
    return True


def shares_prefix(model) -> bool:
    """Whether ``model`` (peft-wrapped or not) is scored by :func:`shared_prefix_logprobs`."""
    text = model.config.get_text_config()
    return text._attn_implementation == TRAINING_ATTENTION and not any(
        getattr(text, k, None) is not None for k in PLAIN_HEAD_ONLY
    )


def shared_prefix_length(rows: list, prompt_lengths: list[int]) -> int:
    """Tokens every row starts with, short of each row's last prompt token (whose hidden state
    predicts the row's first completion token)."""
    limit = min(prompt_lengths) - 1
    first = rows[0][:limit]
    for row in rows[1:]:
        differs = (row[:limit] != first).nonzero()
        if len(differs):
            limit = int(differs[0, 0])
            first = first[:limit]
    return limit


def shared_prefix_logprobs(
    model,
    input_ids,
    attention_mask,
    logits_to_keep: int,
    *,
    pad_token_id: int = 0,
    temperature: float = 1.0,
    entropies: bool = False,
    states: bool = False,
    autocast=nullcontext,
    prefix_context=nullcontext,
):
    """(log-probs, entropies (with gradients) or None, last-prompt-token hidden states or None) of each row's
    completion tokens (layout: the module doc), or None where the rows share fewer than
    ``paperlib.backends.hf.MIN_SHARED_PREFIX`` tokens (the caller takes the plain path).

    ``model`` is on :data:`TRAINING_ATTENTION` (:func:`shares_prefix`); ``pad_token_id`` fills
    the rows' own tokens past their end (masked: any id will do); ``autocast`` and
    ``prefix_context`` are context-manager factories around the forward passes and around the
    prefix's alone (a trainer's mixed precision; gradient checkpointing off for the prefix,
    whose KV is kept rather than recomputed)."""
    import torch
    from transformers import DynamicCache
    from trl.trainer.utils import entropy_from_logits, selective_log_softmax

    from paperlib.backends.hf import MIN_SHARED_PREFIX

    real = attention_mask.bool()
    prompt_width = input_ids.size(1) - logits_to_keep
    prompt_lengths = real[:, :prompt_width].sum(1).tolist()
    rows = [ids[mask] for ids, mask in zip(input_ids, real)]  # prompt then completion, no padding
    n = shared_prefix_length(rows, prompt_lengths)
    if n < MIN_SHARED_PREFIX:
        return None
    cache = DynamicCache()
    with prefix_context(), autocast():  # a batch of one row: its KV kept, not recomputed
        model(input_ids=rows[0][None, :n], cache=cache, use_cache=True, logits_to_keep=1)
    prefix = [(layer.keys[0], layer.values[0]) for layer in cache.layers]
    own = [row[n:] for row in rows]
    width = max(len(r) for r in own)
    ids = input_ids.new_full((len(rows), width), pad_token_id)
    seen = torch.zeros_like(ids, dtype=torch.bool)
    for i, r in enumerate(own):
        ids[i, : len(r)], seen[i, : len(r)] = r, True
    causal = torch.ones(width, width, dtype=torch.bool, device=ids.device).tril()
    positions = n + torch.arange(width, device=ids.device).expand(len(rows), -1)
    # column j is completion token j, which sits at p - n + j of the row's own tokens and is
    # predicted at p - n + j - 1 (columns past a completion's end are masked by the caller)
    at = (
        torch.tensor(prompt_lengths, device=ids.device)[:, None]
        - n
        - 1
        + torch.arange(logits_to_keep, device=ids.device)
    ).clamp(max=width - 2)
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    backbone = getattr(causal_lm, causal_lm.base_model_prefix)
    with autocast():
        hidden = backbone(
            input_ids=ids,
            attention_mask=causal[None, None] & seen[:, None, None, :],
            position_ids=positions,
            shared_prefix=prefix,
            use_cache=False,
        ).last_hidden_state
        kept = hidden.gather(1, at[:, :, None].expand(-1, -1, hidden.size(-1)))
        logits = causal_lm.get_output_embeddings()(kept).float() / temperature
    logps = selective_log_softmax(logits, ids.gather(1, at + 1))
    return logps, entropy_from_logits(logits) if entropies else None, kept[:, 0] if states else None
