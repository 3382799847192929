"""Local transformers backend: batched generation that reuses computed KV, and scoring.

Every batch is laid out as left padding: row i's real tokens fill the last
``len_i`` slots, positions count real tokens only, padding is masked. What differs
between the paths is only how much of each row's prompt KV is already known:

- plain: nothing, the whole batch is prefilled;
- shared prefix (``reuse_prefix``): the longest token prefix common to all prompts
  of a call is computed once (batch 1; kept for the next call with the same prefix)
  and copied into every row;
- streams (``generate(..., streams=keys)``, ``score(..., streams=keys)``): each key
  keeps the KV of its last prompt, and the next prompt of that key reuses its
  longest common token prefix (a bandit history grows by one line per step; the
  generated CoT is not part of the next prompt, so it is never kept).

Each row then feeds its last N tokens, N being the most that any row still has to
compute, so the known KV sits right before them and no padding ever lies inside a
row: masks, positions (and sliding windows) are those of the plain path.

When every row of a batch starts with the call's shared prefix (``share_prefix``,
the philosophers' case: rules and tools are the same for all), the prefix KV is not
copied into the rows at all. It stays one batch-1 tensor per layer, the rows' cache
holds only their own tokens (left padded after the prefix), and attention
(``shared_prefix_attention``, registered with transformers' ``AttentionInterface``)
scores each query against the prefix and the row's own keys in one softmax. On a CPU,
a decode step of SmolLM2 at 150 rows took 1.9 s with a 350-token prompt copied into
every row against 0.5 s with 8 tokens: the copied KV cost more than the weights. A
model with sliding-window layers takes this path only while prompt + new tokens fit
in the window. The rows' cache (``RoomyLayer``) has room for the new tokens, so a
decode step writes in place instead of copying the batch's cache.

The decode loop is ours (not ``model.generate``): tokens are drawn by ``sample_``,
and rows that end (EOS or a stop string) leave the batch once carrying them costs
more than copying the others' KV. ``score`` feeds the candidates after each prompt as
one token tree (``token_tree``). On a CPU the backend makes glibc keep freed memory
(``keep_freed_memory``). Measured figures: ``paperlib.bench_hf``.

Prompts are raw text tokenised without special tokens (a rendered chat prompt
already holds them), except that a BOS is prepended where the tokenizer adds one
by default (Gemma) and the text lacks it.
"""

from __future__ import annotations

import ctypes
import json
import platform
import time
from collections.abc import Hashable, Sequence
from functools import partial

import numpy as np
import torch
from transformers import AttentionInterface, DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from paperlib.backends.base import CAPABILITIES, PROBE_TOOL, Completion, Conversation, continuation_ids
from paperlib.models import load_local

# Below this many shared tokens the extra batch-1 forward is not worth it.
MIN_SHARED_PREFIX = 16

TOOLS_IN_SYSTEM = (
    "You can call these tools:\n<tools>\n{tools}\n</tools>\n"
    'To call one, reply with <tool_call>{{"name": <tool name>, "arguments": <arguments as JSON>}}</tool_call>'
)

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (heads, tokens, head_dim) keys and values
SHARED_PREFIX_ATTENTION = "paperlib_shared_prefix"


def shared_prefix_attention(
    module,
    query,
    key,
    value,
    attention_mask,
    dropout=0.0,
    scaling=None,
    softcap=None,
    shared_prefix: KV | None = None,
    **kwargs,
):
    """Attention over a prefix common to every row (``shared_prefix[layer]``: keys and values
    of shape (kv heads, prefix tokens, head dim), kept once) followed by each row's own keys
    (``key``, ``value``: (batch, kv heads, tokens, head dim); ``attention_mask``: boolean
    (batch, 1, queries, tokens), True where a query sees a key). Every query sees the whole
    prefix. Returns (batch, queries, heads, head dim), as transformers' attention functions do."""
    prefix_keys, prefix_values = shared_prefix[module.layer_idx]
    batch, heads, queries, dim = query.shape
    kv_heads, n_prefix = prefix_keys.shape[0], prefix_keys.shape[1]
    group = heads // kv_heads  # query head h reads kv head h // group
    q = query.reshape(batch, kv_heads, group * queries, dim)
    # the prefix as one matmul per kv head over all rows: (kv heads, batch * group * queries, prefix)
    rows_first = q.transpose(0, 1).reshape(kv_heads, -1, dim)
    on_prefix = (
        (rows_first @ prefix_keys.transpose(1, 2)).view(kv_heads, batch, group * queries, n_prefix).transpose(0, 1)
    )
    on_own = q @ key.transpose(2, 3)
    scores = torch.cat([on_prefix, on_own], dim=-1).float() * (scaling if scaling is not None else dim**-0.5)
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    visible = (
        attention_mask[:, :, None].expand(batch, 1, group, queries, key.shape[2]).reshape(batch, 1, group * queries, -1)
    )
    scores[..., n_prefix:].masked_fill_(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1).to(value.dtype)
    from_prefix = weights[..., :n_prefix].transpose(0, 1).reshape(kv_heads, -1, n_prefix) @ prefix_values
    out = from_prefix.view(kv_heads, batch, group * queries, dim).transpose(0, 1) + weights[..., n_prefix:] @ value
    return out.reshape(batch, heads, queries, dim).transpose(1, 2).contiguous(), None


AttentionInterface.register(SHARED_PREFIX_ATTENTION, shared_prefix_attention)


class RoomyLayer(DynamicLayer):
    """A cache layer whose keys and values are views into buffers with ``room`` slots to spare,
    so that a decode step writes its token in place: ``DynamicLayer`` concatenates, copying
    the whole batch's cache every step (a fresh 40 MB per layer at 450 rows of 90 tokens)."""

    def __init__(self, room: int):
        super().__init__()
        self.room = room

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        n, new = self.get_seq_length(), key_states.shape[-2]
        if not self.is_initialized or n + new > self._buffers[0].shape[-2]:
            self.device, self.is_initialized = key_states.device, True
            shape = (*key_states.shape[:2], n + new + self.room, key_states.shape[-1])
            buffers = (key_states.new_empty(shape), value_states.new_empty(shape))
            if n:
                buffers[0][:, :, :n], buffers[1][:, :, :n] = self.keys, self.values
            self._buffers = buffers
        self._buffers[0][:, :, n : n + new] = key_states
        self._buffers[1][:, :, n : n + new] = value_states
        self.keys, self.values = (b[:, :, : n + new] for b in self._buffers)
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        n = self.get_seq_length()
        if n:
            self._buffers = tuple(b[indices] for b in self._buffers)
            self.keys, self.values = (b[:, :, :n] for b in self._buffers)


SAMPLE_BLOCK = 512  # tokens per block of the two-level draw in ``sample_``


def sample_(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """One token per row drawn from softmax(logits / temperature), overwriting ``logits``.

    Inverse-CDF sampling in two levels: one seeded uniform picks a block of
    ``SAMPLE_BLOCK`` tokens by the blocks' masses, then the token inside the block, each
    cumulative sum in float64 over at most a few hundred numbers. A single float32 cumsum
    over a 262k-token vocabulary misplaces bin edges by more than a tail token's mass;
    ``torch.multinomial`` is exact but took 0.9 s per step at 150 rows over Gemma 3's
    vocabulary on a CPU. Weights are computed in place: a fresh (rows, vocabulary) tensor
    costs more to allocate than to fill. A token of probability 0 is never drawn."""
    if temperature != 1:
        logits.div_(temperature)
    weights = logits.sub_(logits.amax(-1, keepdim=True)).exp_()
    rows, vocab = weights.shape
    full = vocab - vocab % SAMPLE_BLOCK
    mass = weights[:, :full].view(rows, -1, SAMPLE_BLOCK).sum(-1)
    if full < vocab:
        mass = torch.cat([mass, weights[:, full:].sum(-1, keepdim=True)], dim=1)
    mass = mass.double()
    cdf = mass.cumsum(-1)
    target = torch.rand((rows, 1), generator=generator, dtype=torch.float64, device=weights.device) * cdf[:, -1:]
    block = torch.searchsorted(cdf, target, right=True).clamp_(max=mass.shape[1] - 1)
    in_block = (target - cdf.gather(1, block) + mass.gather(1, block)) / mass.gather(1, block)  # in [0, 1)
    index = block * SAMPLE_BLOCK + torch.arange(SAMPLE_BLOCK, device=weights.device)
    inside = (weights.gather(1, index.clamp(max=vocab - 1)) * (index < vocab)).double().cumsum(-1)
    token = torch.searchsorted(inside, in_block.clamp_(0, 1 - 2**-40) * inside[:, -1:], right=True)
    return index.gather(1, token.clamp_(max=SAMPLE_BLOCK - 1))[:, 0]


def keep_freed_memory() -> None:
    """Make glibc's malloc keep freed memory for reuse instead of handing it back to the OS.

    A forward pass on a CPU allocates tensors of tens to hundreds of MB (Gemma 3's logits
    at 450 rows: 471 MB, every decode step) that glibc serves from fresh ``mmap`` and unmaps
    on ``free``, so the kernel faults in and zeroes every page again. Measured here on 2
    cores: a quarter of the CPU time went to the kernel, and 30 episodes at N = 15 (two
    rounds) ran 22% faster for SmolLM2 and 10% for Gemma 3 with freed memory kept (mmap
    off). Trimming is off, not just raised: a round's batch KV at N = 15 is about 2 GB for
    SmolLM2, freed when the round ends; under a 2 GiB threshold glibc handed it back and the
    next round faulted it in again (the same round at N = 15, run twice: 22 s with 0.55M
    page faults the second time, 19 s with none once trimming was off).
    Process-wide: memory goes back to the OS only when the process exits or calls
    :func:`release_freed_memory`. A no-op where the C library is not glibc."""
    if not _on_glibc():
        return
    mallopt = ctypes.CDLL(None).mallopt
    mallopt(-1, -1)  # M_TRIM_THRESHOLD: -1 never trims the heap top
    mallopt(-4, 0)  # M_MMAP_MAX: no mmap per allocation (glibc still maps when the heap cannot grow)


def release_freed_memory() -> None:
    """Hand the memory freed so far back to the OS (glibc's ``malloc_trim``), once a phase that
    peaked high is over. Under :func:`keep_freed_memory` what a phase frees stays resident in
    the process, which is what a loop of same-sized rounds wants; after a training run it is
    not (notebook 14's CoT ablation on a 24 GB machine: after updates that peaked at 23 GB, the
    held-out evaluation in the same process had 1.6 GB left and played its first 6 steps in
    3 min 24 s, against 1 min 6 s in a fresh process). A no-op off glibc."""
    if _on_glibc():
        ctypes.CDLL(None).malloc_trim(0)


def _on_glibc() -> bool:
    return platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class HFBackend:
    """A transformers causal LM behind the LocalBackend interface (``paperlib.backends.base``).

    Pass a model name (``paperlib.models``) or an already loaded ``lm``/``tokenizer``
    (a trainer's policy). ``max_batch`` caps the rows of one forward pass.
    """

    name = "hf"
    capabilities = CAPABILITIES["hf"]

    def __init__(
        self,
        model: str = "smollm2-135m",
        *,
        device: str = "cpu",
        dtype=None,
        max_batch: int = 64,
        reuse_prefix: bool = True,
        share_prefix: bool = True,
        lm=None,
        tokenizer=None,
    ):
        if lm is None:
            lm, tokenizer = load_local(model, device, dtype)
        if lm.device.type == "cpu":
            keep_freed_memory()
        self.model, self.lm, self.tokenizer = model, lm, tokenizer
        self.max_batch, self.reuse_prefix, self.share_prefix = max_batch, reuse_prefix, share_prefix
        config = lm.config.get_text_config()
        self.window = (
            config.sliding_window if "sliding_attention" in (getattr(config, "layer_types", None) or ()) else None
        )
        eos = lm.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
        self.eos.discard(None)
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)
        first = tokenizer("a").input_ids[:1]
        self.bos = (
            tokenizer.bos_token_id if tokenizer.bos_token_id is not None and first == [tokenizer.bos_token_id] else None
        )
        probe = [{"role": "system", "content": "paperlib_probe_system"}, {"role": "user", "content": "u"}]
        try:
            self.supports_system = "paperlib_probe_system" in self._template(probe, None)
        except Exception:  # a template that refuses the system role (Gemma 2)
            self.supports_system = False
        self.supports_tools = "paperlib_probe_tool" in self._template(probe[1:], [PROBE_TOOL])
        self._streams: dict[Hashable, tuple[list[int], KV, tuple]] = {}  # key -> (prompt ids, KV, weights version)
        self._last_prefix: tuple[tuple, KV] | None = None  # ((prefix ids, weights' versions), its KV)
        # since creation: prompt tokens seen and actually prefilled; seconds in prefill (scoring's
        # candidate tokens included) and in decoding
        self.stats = {"prompt_tokens": 0, "computed_tokens": 0, "prefill_s": 0.0, "decode_s": 0.0}

    # -- prompts -----------------------------------------------------------------
    def _template(self, conversation, tools) -> str:
        return self.tokenizer.apply_chat_template(conversation, tools=tools, add_generation_prompt=True, tokenize=False)

    def render(self, conversation: Conversation, *, tools: list[dict] | None = None) -> str:
        """The chat template applied. Tools go to the template where it renders them;
        otherwise they are listed in the system message (``TOOLS_IN_SYSTEM``, the
        ``<tool_call>`` convention). A template that refuses a system message gets it
        at the head of the first user message."""
        conversation = [dict(m) for m in conversation]
        if tools and not self.supports_tools:
            listing = TOOLS_IN_SYSTEM.format(tools="\n".join(json.dumps(t) for t in tools))
            if conversation and conversation[0]["role"] == "system":
                conversation[0]["content"] += "\n\n" + listing
            else:
                conversation.insert(0, {"role": "system", "content": listing})
            tools = None
        if not self.supports_system and conversation and conversation[0]["role"] == "system":
            system = conversation.pop(0)["content"]
            conversation[0]["content"] = system + "\n\n" + conversation[0]["content"]
        return self._template(conversation, tools or None)

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False).input_ids
        return [self.bos] + ids if self.bos is not None and ids[:1] != [self.bos] else ids

    # -- prefill -----------------------------------------------------------------
    @torch.inference_mode()
    def _kv_of(self, ids: list[int]) -> KV:
        """KV of one token sequence, computed as a batch of one."""
        start = time.perf_counter()
        cache = DynamicCache()
        self.lm(input_ids=torch.tensor([ids], device=self.lm.device), cache=cache, use_cache=True, logits_to_keep=1)
        self.stats["computed_tokens"] += len(ids)
        self.stats["prefill_s"] += time.perf_counter() - start
        return [(layer.keys[0], layer.values[0]) for layer in cache.layers]

    def _shared_length(self, rows: list[list[int]]) -> int:
        """Tokens common to all rows worth computing once (0: none)."""
        if not self.reuse_prefix or len(rows) < 2:
            return 0
        n = min(len(r) for r in rows) - 1  # every row computes at least its last token
        for r in rows[1:]:
            n = _common_prefix(rows[0][:n], r)
        return n if n >= MIN_SHARED_PREFIX else 0

    def weights_version(self) -> tuple:
        """Changes whenever a parameter is changed in place (an optimiser step bumps its
        ``_version``) or replaced: every kept KV is tied to the version it was computed under."""
        return tuple((id(w), w._version) for w in self.lm.parameters())

    def _known(self, rows: list[list[int]], keys: list[Hashable | None]) -> list[tuple[KV, int] | None]:
        """Per row, the longest known KV prefix: the row's stream (computed under the current
        weights; a stream from before a weight change is dropped), or the call's shared prefix
        (computed only when some row's stream does not already cover it)."""
        version = self.weights_version() if self._streams else None
        streamed = []
        for r, key in zip(rows, keys):
            prev, kv, made_under = self._streams.get(key, ([], None, None))
            if kv is not None and made_under != version:
                del self._streams[key]
                kv = None
            streamed.append((kv, min(_common_prefix(prev, r), len(r) - 1)) if kv is not None else None)
        n = self._shared_length(rows)
        if not n or all(s and s[1] >= n for s in streamed):
            return streamed
        shared = (self._prefix_kv(rows[0][:n]), n)
        return [s if s and s[1] >= n else shared for s in streamed]

    def _prefix_kv(self, ids: list[int]) -> KV:
        """KV of a call's shared prefix, kept for the next call that shares the same prefix
        under the same weights (the philosophers' rules and tools open every round's prompts;
        computing them took 0.5 s per call for either embedded model on a CPU). A parameter
        changed in place (an optimiser step) bumps its version, and the KV is computed anew."""
        key = (tuple(ids), self.weights_version())
        if self._last_prefix is None or self._last_prefix[0] != key:
            self._last_prefix = (key, self._kv_of(ids))
        return self._last_prefix[1]

    def _keep(self, rows: list[list[int]], keys: list[Hashable | None], cache, prefix: KV | None) -> None:
        """Keep each keyed row's prompt KV (the shared prefix, if any, then the row's own tokens
        in a prefilled batch cache) for its key's next prompt."""
        n_prefix = prefix[0][0].shape[1] if prefix else 0
        version = self.weights_version() if any(key is not None for key in keys) else None
        for i, key in enumerate(keys):
            if key is None:
                continue
            own = len(rows[i]) - n_prefix
            kv = [(layer.keys[i, :, -own:].clone(), layer.values[i, :, -own:].clone()) for layer in cache.layers]
            if prefix:
                kv = [(torch.cat([pk, k], 1), torch.cat([pv, v], 1)) for (pk, pv), (k, v) in zip(prefix, kv)]
            self._streams[key] = (rows[i], kv, version)

    def _shares(self, rows: list[list[int]], known: list[tuple[KV, int] | None], extra_tokens: int) -> bool:
        """Whether this batch takes the shared-prefix attention path (module doc)."""
        return (
            self.share_prefix
            and known[0] is not None
            and all(k is known[0] for k in known)
            and (self.window is None or max(len(r) for r in rows) + extra_tokens < self.window)
        )

    def _forward(self, ids, mask, positions, cache, prefix: KV | None, tree: torch.Tensor | None = None, **kwargs):
        """One forward pass of the batch: plain, or over the shared ``prefix`` first. ``tree``
        (rows, fed, fed; bool): which fed tokens each fed token sees, in place of the causal
        order (a token tree, ``score``); the known slots of ``mask`` are seen by all of them."""
        if prefix is None and tree is None:
            return self.lm(
                input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True, **kwargs
            )
        fed, slots = ids.shape[1], mask.shape[1]
        among = torch.ones(fed, fed, dtype=torch.bool, device=mask.device).tril() if tree is None else tree[:, None]
        known = torch.ones(fed, slots - fed, dtype=torch.bool, device=mask.device).expand(*among.shape[:-1], -1)
        visible = mask.bool()[:, None, None, :] & torch.cat([known, among], dim=-1)
        if prefix is None:
            return self.lm(
                input_ids=ids,
                attention_mask=self._model_mask(visible, mask, positions),
                position_ids=positions,
                cache=cache,
                use_cache=True,
                **kwargs,
            )
        config = self.lm.config
        before, config._attn_implementation = config._attn_implementation, SHARED_PREFIX_ATTENTION
        try:
            return self.lm(
                input_ids=ids,
                attention_mask=visible,
                position_ids=positions,
                cache=cache,
                use_cache=True,
                shared_prefix=prefix,
                **kwargs,
            )
        finally:
            config._attn_implementation = before

    def _model_mask(self, visible, mask, positions):
        """``visible`` (rows, 1, queries, slots; bool) as the model's own attention takes a custom
        mask: additive; for a model with sliding-window layers beyond its window, one mask per
        layer type, the sliding one also hiding keys a window or more behind the query."""

        def additive(seen):
            return torch.zeros(seen.shape, dtype=self.lm.dtype, device=seen.device).masked_fill_(
                ~seen, torch.finfo(self.lm.dtype).min
            )

        if self.window is None or positions.max() < self.window:
            return additive(visible)
        fed = positions.shape[1]
        key_positions = torch.cat([mask[:, :-fed].cumsum(-1) - 1, positions], dim=1)
        near = positions[:, None, :, None] - key_positions[:, None, None, :] < self.window
        return {"full_attention": additive(visible), "sliding_attention": additive(visible & near)}

    @torch.inference_mode()
    def _prefill(self, rows: list[list[int]], known: list[tuple[KV, int] | None], extra_tokens: int):
        """Batch cache, mask, last positions, last logits and shared prefix (or None) for
        ``rows``, each row reusing the first ``n`` tokens of its ``known`` KV (None: nothing
        known); ``extra_tokens``: how many more the caller will feed."""
        start = time.perf_counter()
        dev = self.lm.device
        prefix, offset = None, 0
        if self._shares(rows, known, extra_tokens):
            kv, offset = known[0]
            prefix = [(k[:, :offset], v[:, :offset]) for k, v in kv]
            rows, known = [r[offset:] for r in rows], [None] * len(rows)
        lens = [len(r) for r in rows]
        n_known = [k[1] if k else 0 for k in known]
        feed = max(length - n for length, n in zip(lens, n_known))
        slots = max(lens)
        cached = slots - feed  # slots before the fed ones
        ids = torch.full((len(rows), feed), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), slots), dtype=torch.long)
        for i, r in enumerate(rows):
            tail = r[-feed:]
            ids[i, feed - len(tail) :] = torch.tensor(tail)
            mask[i, slots - len(r) :] = 1
        positions = offset + (mask.cumsum(-1) - 1).clamp(min=0)[:, cached:]
        cache = Cache(layer_class_to_replicate=partial(RoomyLayer, extra_tokens)) if prefix else DynamicCache()
        if cached:
            layers = []
            for j, (k0, v0) in enumerate(next(k[0] for k in known if k)):
                keys = k0.new_zeros((len(rows), k0.shape[0], cached, k0.shape[2]))
                values = v0.new_zeros((len(rows), v0.shape[0], cached, v0.shape[2]))
                for i, (length, k) in enumerate(zip(lens, known)):
                    use = length - feed  # known tokens this row takes
                    if use > 0:
                        keys[i, :, cached - use :] = k[0][j][0][:, :use]
                        values[i, :, cached - use :] = k[0][j][1][:, :use]
                layers.append((keys, values))
            cache = DynamicCache(layers)
        out = self._forward(ids.to(dev), mask.to(dev), positions.to(dev), cache, prefix, logits_to_keep=1)
        self.stats["prompt_tokens"] += sum(lens) + offset * len(rows)
        self.stats["computed_tokens"] += sum(min(length, feed) for length in lens)
        self.stats["prefill_s"] += time.perf_counter() - start
        return cache, mask.to(dev), positions[:, -1].to(dev), out.logits[:, -1].float(), prefix

    # -- generation --------------------------------------------------------------
    def chat(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: list[dict] | None = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
        logprobs: bool = False,
    ) -> list[Completion]:
        prompts = [self.render(c, tools=tools) for c in conversations]
        return self.generate(
            prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, stop=stop, logprobs=logprobs
        )

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
        logprobs: bool = False,
        streams: Sequence[Hashable] | None = None,
    ) -> list[Completion]:
        """One completion per prompt, in batches of ``max_batch``.

        temperature 0 is greedy; otherwise sampling from a generator seeded with
        ``seed`` (the same call gives the same completions). A completion ends at an
        EOS token (kept in ``token_ids``, not in ``text``) or at the first stop string
        (kept in ``text``, which is cut right after it). ``logprobs``: the model's
        log-probability (temperature 1) of each generated token. ``streams``: one key
        per prompt whose prompt KV is kept for the key's next prompt (see module doc).
        """
        rows = [self.encode(p) for p in prompts]
        keys = list(streams) if streams is not None else [None] * len(rows)
        known = self._known(rows, keys)
        generator = torch.Generator(device=self.lm.device).manual_seed(seed)
        out = []
        for start in range(0, len(rows), self.max_batch):
            chunk = slice(start, start + self.max_batch)
            out += self._generate_batch(
                rows[chunk],
                known[chunk],
                keys[chunk],
                max_new_tokens,
                temperature,
                generator,
                list(stop or []),
                logprobs,
            )
        return out

    @torch.inference_mode()
    def _generate_batch(self, rows, known, keys, max_new_tokens, temperature, generator, stop, want_logprobs):
        first = {}  # identical prompts (every episode starts at the same table) are prefilled once, then copied
        for i, r in enumerate(rows):
            first.setdefault(tuple(r), i)
        unique = list(first.values())
        cache, mask, last_pos, logits, prefix = self._prefill(
            [rows[i] for i in unique], [known[i] for i in unique], max_new_tokens
        )
        if len(unique) < len(rows):
            slot = {i: k for k, i in enumerate(unique)}
            index = torch.tensor([slot[first[tuple(r)]] for r in rows], device=mask.device)
            cache.batch_select_indices(index)
            mask, last_pos, logits = mask[index], last_pos[index], logits[index]
            self.stats["prompt_tokens"] += sum(len(r) for r in rows) - sum(len(rows[i]) for i in unique)
        start = time.perf_counter()
        self._keep(rows, keys, cache, prefix)
        done: dict[int, Completion] = {}
        gen = [[] for _ in rows]
        lps = [[] for _ in rows]
        active: list[int | None] = list(range(len(rows)))  # batch row -> prompt index (None: done, not yet dropped)
        for step in range(max_new_tokens):
            if want_logprobs:  # before ``sample_`` overwrites the logits with its weights
                top, total = logits.amax(-1), torch.logsumexp(logits, -1)
            nxt = sample_(logits, temperature, generator) if temperature > 0 else logits.argmax(-1)
            if want_logprobs:  # log-softmax at temperature 1 of the chosen token
                picked = logits.gather(1, nxt[:, None])[:, 0]
                if temperature > 0:  # the weights are exp((logit - top) / temperature)
                    picked = top + temperature * picked.log()
                chosen = (picked - total).tolist()
            for b, (i, tok) in enumerate(zip(active, nxt.tolist())):
                if i is None:
                    continue
                gen[i].append(tok)
                if want_logprobs:
                    lps[i].append(chosen[b])
                if tok in self.eos:
                    done[i] = self._completion(gen[i], rows[i], "stop", lps[i] if want_logprobs else None, eos=True)
                    active[b] = None
                    continue
                text = self.tokenizer.decode(gen[i]) if stop else ""
                hits = [text.find(s) + len(s) for s in stop if s in text]
                if hits:
                    done[i] = Completion(
                        text[: min(hits)], gen[i], len(rows[i]), "stop", lps[i] if want_logprobs else None
                    )
                elif step == max_new_tokens - 1:
                    done[i] = self._completion(gen[i], rows[i], "length", lps[i] if want_logprobs else None)
                else:
                    continue
                active[b] = None
            live = [b for b, i in enumerate(active) if i is not None]
            if not live:
                break
            # Dropping finished rows copies the KV of the rows kept; until that costs less than
            # decoding the finished ones for the steps left, they ride along (measured on a
            # CPU: the copy costs about a quarter of a row's decode step per row kept).
            if (len(active) - len(live)) * (max_new_tokens - step - 1) * 4 >= len(live):
                index = torch.tensor(live, device=mask.device)
                cache.batch_select_indices(index)
                mask, last_pos, nxt = mask[index], last_pos[index], nxt[index]
                active = [active[b] for b in live]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            last_pos = last_pos + 1
            logits = self._forward(nxt[:, None], mask, last_pos[:, None], cache, prefix).logits[:, -1].float()
        self.stats["decode_s"] += time.perf_counter() - start
        return [done[i] for i in range(len(rows))]

    def _completion(self, ids, prompt, reason, logprobs, eos=False) -> Completion:
        text = self.tokenizer.decode(ids[:-1] if eos else ids)
        return Completion(text, ids, len(prompt), reason, logprobs)

    def forget(self, streams: Sequence[Hashable] | None = None) -> None:
        """Drop the kept KV of these stream keys, e.g. when an episode ends (default: of all
        keys, and the kept shared prefix)."""
        if streams is None:
            self._last_prefix = None
        for key in list(self._streams) if streams is None else streams:
            self._streams.pop(key, None)

    # -- scoring -----------------------------------------------------------------
    @torch.inference_mode()
    def score(
        self, prompts: Sequence[str], candidates: Sequence[str], streams: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        """Sum log-probability of each candidate continuing each prompt, (prompts, candidates).

        Each prompt's KV is computed once (reusing the shared prefix, or its stream's KV
        as in ``generate``, whose ``streams`` it shares) and a candidate's first token is
        read from the prompt's last logits. The candidates' further tokens follow in one row
        per prompt as a token tree (``token_tree``): a prefix common to several candidates
        (``pick_up_`` of ``pick_up_left`` and ``pick_up_right``) is fed once, and each fed
        token sees the prompt and its own ancestors only, so the prompt's KV is never copied.
        """
        if not candidates or not all(candidates):
            raise ValueError("score needs at least one candidate, and no empty one")
        rows = [self.encode(p) for p in prompts]
        keys = list(streams) if streams is not None else [None] * len(rows)
        known = self._known(rows, keys)
        every = [[continuation_ids(self, r, p, c) for c in candidates] for r, p in zip(rows, prompts)]
        trees = [token_tree(cs) for cs in every]
        result = np.zeros((len(rows), len(candidates)))
        # a forward pass holds (prompts x fed tokens) logits: at most max_batch rows' worth
        step = max(1, self.max_batch // max([1] + [len(t[0]) for t in trees]))
        for start in range(0, len(rows), step):
            chunk = range(start, min(start + step, len(rows)))
            fed = max(len(trees[i][0]) for i in chunk)
            cache, mask, last_pos, logits, prefix = self._prefill(
                [rows[i] for i in chunk], [known[i] for i in chunk], fed
            )
            self._keep([rows[i] for i in chunk], [keys[i] for i in chunk], cache, prefix)
            first = torch.tensor([[c[0] for c in every[i]] for i in chunk], device=logits.device)
            total = torch.log_softmax(logits, -1).gather(1, first)
            if fed:
                started = time.perf_counter()
                ids = torch.full((len(chunk), fed), self.pad, dtype=torch.long)
                depth = torch.ones((len(chunk), fed), dtype=torch.long)
                sees = torch.eye(fed, dtype=torch.bool).repeat(len(chunk), 1, 1)  # padding sees itself only
                reads = []  # (row, node, token, candidate)
                for b, i in enumerate(chunk):
                    tokens, parents, row_reads = trees[i]
                    ids[b, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
                    for node, parent in enumerate(parents):
                        if parent >= 0:
                            sees[b, node] |= sees[b, parent]
                            depth[b, node] = depth[b, parent] + 1
                    reads += [(b, *read) for read in row_reads]
                dev = mask.device
                mask = torch.cat([mask, mask.new_ones((len(chunk), fed))], dim=1)
                out = self._forward(
                    ids.to(dev), mask, last_pos[:, None] + depth.to(dev), cache, prefix, tree=sees.to(dev)
                ).logits
                row, node, token, column = torch.tensor(reads, device=dev).T
                picked = out[row, node, token].float() - torch.logsumexp(out.float(), -1)[row, node]
                total.index_put_((row, column), picked, accumulate=True)
                self.stats["prefill_s"] += time.perf_counter() - started
            result[start : start + len(chunk)] = total.cpu().numpy()
        return result


def token_tree(candidates: list[list[int]]) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    """The candidates' token lists as one tree to feed after a prompt: ``tokens``, every proper
    prefix's last token, a prefix common to several candidates once; ``parents``, the node each
    one follows (-1: the prompt; a parent comes before its children); ``reads``, one (node,
    token, candidate) per token after a candidate's first: that token's log-probability is
    read from the logits at that node."""
    node_of: dict[tuple[int, ...], int] = {}
    tokens, parents, reads = [], [], []
    for index, candidate in enumerate(candidates):
        for j in range(1, len(candidate)):
            prefix = tuple(candidate[:j])
            if prefix not in node_of:
                node_of[prefix] = len(tokens)
                tokens.append(candidate[j - 1])
                parents.append(node_of.get(prefix[:-1], -1))
            reads.append((node_of[prefix], candidate[j], index))
    return tokens, parents, reads
