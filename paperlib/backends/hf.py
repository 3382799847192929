"""Local transformers backend: batched generation that reuses computed KV, and scoring.

Every batch is laid out as left padding: row i's real tokens fill the last
``len_i`` slots, positions count real tokens only, padding is masked. What differs
between the paths is only how much of each row's prompt KV is already known:

- plain: nothing, the whole batch is prefilled;
- shared prefix (``reuse_prefix``): the longest token prefix common to all prompts
  of a call is computed once (batch 1) and copied into every row;
- streams (``generate(..., streams=keys)``, ``score(..., streams=keys)``): each key
  keeps the KV of its last prompt, and the next prompt of that key reuses its
  longest common token prefix (a bandit history grows by one line per step; the
  generated CoT is not part of the next prompt, so it is never kept).

Each row then feeds its last N tokens, N being the most that any row still has to
compute, so the known KV sits right before them and no padding ever lies inside a
row: masks, positions (and sliding windows) are those of the plain path. The
decode loop is ours (not ``model.generate``) so that rows leave the batch as soon
as they end (EOS or a stop string). Measured figures: ``paperlib.bench_hf``.

Prompts are raw text tokenised without special tokens (a rendered chat prompt
already holds them), except that a BOS is prepended where the tokenizer adds one
by default (Gemma) and the text lacks it.
"""

from __future__ import annotations

import json
import time
from typing import Hashable, Sequence

import numpy as np
import torch
from transformers import DynamicCache

from paperlib.backends.base import Completion, Conversation
from paperlib.models import load_local

# Below this many shared tokens the extra batch-1 forward is not worth it.
MIN_SHARED_PREFIX = 16

TOOLS_IN_SYSTEM = (
    "You can call these tools:\n<tools>\n{tools}\n</tools>\n"
    'To call one, reply with <tool_call>{{"name": <tool name>, "arguments": <arguments as JSON>}}</tool_call>'
)
_PROBE_TOOL = {"type": "function", "function": {"name": "paperlib_probe_tool", "description": "", "parameters": {}}}

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (heads, tokens, head_dim) keys and values


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

    def __init__(self, model: str = "smollm2-135m", *, device: str = "cpu", dtype=None, max_batch: int = 64,
                 reuse_prefix: bool = True, lm=None, tokenizer=None):
        if lm is None:
            lm, tokenizer = load_local(model, device, dtype)
        self.model, self.lm, self.tokenizer = model, lm, tokenizer
        self.max_batch, self.reuse_prefix = max_batch, reuse_prefix
        eos = lm.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
        self.eos.discard(None)
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)
        first = tokenizer("a").input_ids[:1]
        self.bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None and first == [tokenizer.bos_token_id] else None
        probe = [{"role": "system", "content": "paperlib_probe_system"}, {"role": "user", "content": "u"}]
        try:
            self.supports_system = "paperlib_probe_system" in self._template(probe, None)
        except Exception:  # a template that refuses the system role (Gemma 2)
            self.supports_system = False
        self.supports_tools = "paperlib_probe_tool" in self._template(probe[1:], [_PROBE_TOOL])
        self._streams: dict[Hashable, tuple[list[int], KV]] = {}
        # since creation: prompt tokens seen and actually prefilled; seconds in prefill and in decoding
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

    def _known(self, rows: list[list[int]], keys: list[Hashable | None]) -> list[tuple[KV, int] | None]:
        """Per row, the longest known KV prefix: the row's stream, or the call's shared prefix
        (computed only when some row's stream does not already cover it)."""
        streamed = []
        for r, key in zip(rows, keys):
            prev, kv = self._streams.get(key, ([], None))
            streamed.append((kv, min(_common_prefix(prev, r), len(r) - 1)) if kv is not None else None)
        n = self._shared_length(rows)
        if not n or all(s and s[1] >= n for s in streamed):
            return streamed
        shared = (self._kv_of(rows[0][:n]), n)
        return [s if s and s[1] >= n else shared for s in streamed]

    def _keep(self, rows: list[list[int]], keys: list[Hashable | None], cache) -> None:
        """Keep each keyed row's prompt KV (from a prefilled batch cache) for its key's next prompt."""
        for i, key in enumerate(keys):
            if key is not None:
                self._streams[key] = (rows[i], [(l.keys[i, :, -len(rows[i]):].clone(), l.values[i, :, -len(rows[i]):].clone())
                                                for l in cache.layers])

    @torch.inference_mode()
    def _prefill(self, rows: list[list[int]], known: list[tuple[KV, int] | None]):
        """Batch cache, mask, next positions and last logits for ``rows``, each row reusing
        the first ``n`` tokens of its ``known`` KV (None: nothing known)."""
        start = time.perf_counter()
        dev = self.lm.device
        lens = [len(r) for r in rows]
        n_known = [k[1] if k else 0 for k in known]
        feed = max(l - n for l, n in zip(lens, n_known))
        slots = max(lens)
        cached = slots - feed  # slots before the fed ones
        ids = torch.full((len(rows), feed), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), slots), dtype=torch.long)
        for i, r in enumerate(rows):
            tail = r[-feed:]
            ids[i, feed - len(tail):] = torch.tensor(tail)
            mask[i, slots - len(r):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, cached:]
        cache = DynamicCache()
        if cached:
            layers = []
            for j, (k0, v0) in enumerate(next(k[0] for k in known if k)):
                keys = k0.new_zeros((len(rows), k0.shape[0], cached, k0.shape[2]))
                values = v0.new_zeros((len(rows), v0.shape[0], cached, v0.shape[2]))
                for i, (l, k) in enumerate(zip(lens, known)):
                    use = l - feed  # known tokens this row takes
                    if use > 0:
                        keys[i, :, cached - use:] = k[0][j][0][:, :use]
                        values[i, :, cached - use:] = k[0][j][1][:, :use]
                layers.append((keys, values))
            cache = DynamicCache(layers)
        out = self.lm(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=positions.to(dev),
                      cache=cache, use_cache=True, logits_to_keep=1)
        self.stats["prompt_tokens"] += sum(lens)
        self.stats["computed_tokens"] += sum(min(l, feed) for l in lens)
        self.stats["prefill_s"] += time.perf_counter() - start
        return cache, mask.to(dev), positions[:, -1].to(dev), out.logits[:, -1].float()

    # -- generation --------------------------------------------------------------
    def chat(self, conversations: Sequence[Conversation], *, tools: list[dict] | None = None,
             max_new_tokens: int = 128, temperature: float = 0.0, seed: int = 0,
             stop: Sequence[str] | None = None, logprobs: bool = False) -> list[Completion]:
        prompts = [self.render(c, tools=tools) for c in conversations]
        return self.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                             stop=stop, logprobs=logprobs)

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 128, temperature: float = 0.0,
                 seed: int = 0, stop: Sequence[str] | None = None, logprobs: bool = False,
                 streams: Sequence[Hashable] | None = None) -> list[Completion]:
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
            out += self._generate_batch(rows[chunk], known[chunk], keys[chunk], max_new_tokens, temperature,
                                        generator, list(stop or []), logprobs)
        return out

    @torch.inference_mode()
    def _generate_batch(self, rows, known, keys, max_new_tokens, temperature, generator, stop, want_logprobs):
        first = {}  # identical prompts (every episode starts at the same table) are prefilled once, then copied
        for i, r in enumerate(rows):
            first.setdefault(tuple(r), i)
        unique = list(first.values())
        cache, mask, last_pos, logits = self._prefill([rows[i] for i in unique], [known[i] for i in unique])
        if len(unique) < len(rows):
            slot = {i: k for k, i in enumerate(unique)}
            index = torch.tensor([slot[first[tuple(r)]] for r in rows], device=mask.device)
            cache.batch_select_indices(index)
            mask, last_pos, logits = mask[index], last_pos[index], logits[index]
            self.stats["prompt_tokens"] += sum(len(r) for r in rows) - sum(len(rows[i]) for i in unique)
        start = time.perf_counter()
        self._keep(rows, keys, cache)
        done: dict[int, Completion] = {}
        gen = [[] for _ in rows]
        lps = [[] for _ in rows]
        active = list(range(len(rows)))  # batch row -> prompt index
        for step in range(max_new_tokens):
            if temperature > 0:
                probs = torch.softmax(logits / temperature, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=generator)[:, 0]
            else:
                nxt = logits.argmax(-1)
            if want_logprobs:
                chosen = torch.log_softmax(logits, -1).gather(1, nxt[:, None])[:, 0].tolist()
            keep = []
            for b, (i, tok) in enumerate(zip(active, nxt.tolist())):
                gen[i].append(tok)
                if want_logprobs:
                    lps[i].append(chosen[b])
                if tok in self.eos:
                    done[i] = self._completion(gen[i], rows[i], "stop", lps[i] if want_logprobs else None, eos=True)
                    continue
                text = self.tokenizer.decode(gen[i]) if stop else ""
                hits = [text.find(s) + len(s) for s in stop if s in text]
                if hits:
                    done[i] = Completion(text[:min(hits)], gen[i], len(rows[i]), "stop", lps[i] if want_logprobs else None)
                elif step == max_new_tokens - 1:
                    done[i] = self._completion(gen[i], rows[i], "length", lps[i] if want_logprobs else None)
                else:
                    keep.append(b)
            if not keep:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, device=mask.device)
                cache.batch_select_indices(index)
                mask, last_pos, nxt = mask[index], last_pos[index], nxt[index]
                active = [active[b] for b in keep]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=1)
            last_pos = last_pos + 1
            logits = self.lm(input_ids=nxt[:, None], attention_mask=mask, position_ids=last_pos[:, None],
                             cache=cache, use_cache=True).logits[:, -1].float()
        self.stats["decode_s"] += time.perf_counter() - start
        return [done[i] for i in range(len(rows))]

    def _completion(self, ids, prompt, reason, logprobs, eos=False) -> Completion:
        text = self.tokenizer.decode(ids[:-1] if eos else ids)
        return Completion(text, ids, len(prompt), reason, logprobs)

    def forget(self, streams: Sequence[Hashable] | None = None) -> None:
        """Drop the kept KV of these stream keys (default: all), e.g. when an episode ends."""
        for key in list(self._streams) if streams is None else streams:
            self._streams.pop(key, None)

    # -- scoring -----------------------------------------------------------------
    def candidate_ids(self, prompt_ids: list[int], prompt: str, candidate: str) -> list[int]:
        """A candidate's tokens after a prompt: from tokenising prompt+candidate jointly when
        that leaves the prompt's tokens intact (the tokens the model would have produced),
        else the candidate tokenised alone (a token would have straddled the boundary)."""
        joint = self.encode(prompt + candidate)
        if joint[:len(prompt_ids)] == prompt_ids and len(joint) > len(prompt_ids):
            return joint[len(prompt_ids):]
        return self.tokenizer(candidate, add_special_tokens=False).input_ids

    @torch.inference_mode()
    def score(self, prompts: Sequence[str], candidates: Sequence[str],
              streams: Sequence[Hashable] | None = None) -> np.ndarray:
        """Sum log-probability of each candidate continuing each prompt, (prompts, candidates).

        Each prompt's KV is computed once (reusing the shared prefix, or its stream's KV
        as in ``generate``, whose ``streams`` it shares); a candidate's first token is read
        from the prompt's last logits, and only candidates of several tokens get a copy of
        the prompt's KV, all run together as one batch.
        """
        if not candidates or not all(candidates):
            raise ValueError("score needs at least one candidate, and no empty one")
        rows = [self.encode(p) for p in prompts]
        keys = list(streams) if streams is not None else [None] * len(rows)
        known = self._known(rows, keys)
        n_cand = len(candidates)
        every = [[self.candidate_ids(r, p, c) for c in candidates] for r, p in zip(rows, prompts)]
        result = np.zeros((len(rows), n_cand))
        # only candidates of several tokens need copies of their prompt's KV
        multi = max(sum(len(c) > 1 for c in cs) for cs in every) if rows else 0
        step = max(1, self.max_batch // max(1, multi))
        for start in range(0, len(rows), step):
            chunk = range(start, min(start + step, len(rows)))
            cache, mask, last_pos, logits = self._prefill([rows[i] for i in chunk], [known[i] for i in chunk])
            self._keep([rows[i] for i in chunk], [keys[i] for i in chunk], cache)
            first = torch.tensor([[c[0] for c in every[i]] for i in chunk], device=logits.device)
            total = torch.log_softmax(logits, -1).gather(1, first)
            pairs = [(b, j) for b, i in enumerate(chunk) for j, c in enumerate(every[i]) if len(c) > 1]
            if pairs:
                row = torch.tensor([b for b, _ in pairs], device=mask.device)
                cands = [every[chunk[b]][j] for b, j in pairs]
                longest = max(len(c) for c in cands)
                cache.batch_select_indices(row)
                feed = torch.tensor([c[:-1] + [self.pad] * (longest - len(c)) for c in cands], device=mask.device)
                follow = torch.tensor([c[1:] + [self.pad] * (longest - len(c)) for c in cands], device=mask.device)
                real = torch.tensor([[t < len(c) - 1 for t in range(longest - 1)] for c in cands], device=mask.device)
                mask = torch.cat([mask[row], real.long()], dim=1)
                positions = last_pos[row][:, None] + 1 + torch.arange(longest - 1, device=mask.device)
                logp = torch.log_softmax(self.lm(input_ids=feed, attention_mask=mask, position_ids=positions,
                                                 cache=cache, use_cache=True).logits.float(), -1)
                column = torch.tensor([j for _, j in pairs], device=total.device)
                total[row, column] += (logp.gather(2, follow[:, :, None])[:, :, 0] * real).sum(1)
            result[start:start + len(chunk)] = total.cpu().numpy()
        return result
