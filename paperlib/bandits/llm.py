"""The LLM bandit agent: paper B's prompts, one batched model call per step for all instances.

At every step each instance's user message is ``prompts.build_prompt`` of its own
history in the agent's ``style`` (``cot``, ``no_cot`` or ``knowing_doing``); local
backends (``hf``, ``vllm``) get it through the model's chat template as text, the
``openai`` backend as a chat message. All instances go to the backend as one batch.

Two ways to decide (``decision``):

- ``free``, the paper's rule: the model writes up to ``max_new_tokens`` tokens (the
  paper's 256 with CoT, 16 without, 2048 for knowing-doing: ``prompts.MAX_NEW_TOKENS``)
  and the last valid ``ACTION=X`` in its text is the action (``parsing.parse_action``);
  where there is none the agent returns -1 and the runner plays a random arm and
  flags the step invalid.
- ``constrained`` **[ours]** (the embedded models almost never write a valid
  ``ACTION=``, DESIGN.md): the model writes its own text first (its CoT, stopped at
  its own ``ACTION=`` if it writes one; nothing without CoT), then the answer prefix
  ``ACTION=`` is forced (on a new line unless the text already ends with it) and the
  arm is chosen from the model's log-probability of every arm name continuing that
  text (:func:`score_arms`, the scoring the frequency-bias analysis uses): the argmax
  at temperature 0, a draw from softmax(scores / temperature) above it. Every step is
  valid. It needs a backend that scores (``hf``, ``vllm``).

Sampling: temperature 0 (the paper's evaluation setting) is greedy. Above 0, step t of
a run draws from a seed derived from the instance seeds and t, so a run reproduces.

The ``hf`` backend keeps each instance's prompt KV between steps (``streams``: the
prompt only grows by one history line, and the text the model wrote is not part of the
next prompt) and the agent forgets it after the last step.

Step columns the agent adds: ``raw_completion`` (the model's text; in constrained mode
followed by the forced ``ACTION=`` and the chosen arm, so ``parse_action`` reads the
action back from it), ``completion_ids`` (the token ids the model generated; local
backends only, empty otherwise), ``prompt_hash`` (of the user message), and in
constrained mode ``arm_scores`` (k log-probabilities) and ``forced`` (whether the
prefix had to be appended to the model's text).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from paperlib.backends import BACKENDS, make_backend
from paperlib.backends.base import choose_scored
from paperlib.bandits.baselines import LLM_AGENT, Decisions
from paperlib.bandits.env import AGENT_STREAM, BanditSpec, History, generator
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import ACTION_PREFIX, MAX_NEW_TOKENS, STYLES, build_prompt, prompt_name

DECISIONS = ("free", "constrained")


def _is_local(backend) -> bool:
    return hasattr(backend, "render") and hasattr(backend, "score")


def _stream_options(backend, keys) -> dict:
    """``streams=keys`` for a backend that keeps per-stream KV (``hf``), nothing otherwise."""
    return {"streams": keys} if keys is not None and hasattr(backend, "forget") else {}


def chat_prompt(backend, user: str) -> str:
    return backend.render([{"role": "user", "content": user}])


def with_answer_prefix(text: str) -> str:
    """The model's text followed by the forced ``ACTION=`` **[ours]**: on a new line after
    text, directly when the text is empty or already ends with the prefix."""
    if text.endswith(ACTION_PREFIX):
        return text
    return text + ("\n" if text.strip() and not text.endswith("\n") else "") + ACTION_PREFIX


def score_arms(backend, prompts: Sequence[str], spec: BanditSpec, keys: Sequence | None = None) -> np.ndarray:
    """Log-probability of every arm name continuing each prompt (which ends in ``ACTION=``):
    shape (prompts, k), one batched scoring pass; ``keys`` reuse per-stream KV (``hf``)."""
    return np.asarray(backend.score(list(prompts), list(spec.names), **_stream_options(backend, keys)), float)


def frequency_bias_scores(backend, spec: BanditSpec, cases) -> np.ndarray:
    """Scores of every arm for ``metrics.frequency_bias_cases``: the no-CoT prompt of each
    case, chat template applied, then ``ACTION=`` (the constrained agent's scoring).

    The cases of one history differ only in repetitions, each prompt extending the one
    before by a line, so they are scored in order of repetitions with one stream per
    history: on ``hf`` each case computes only its new tokens.
    """
    names = spec.names
    prompts = [chat_prompt(backend, build_prompt(spec, a, r, "no_cot")) + ACTION_PREFIX
               for a, r in zip(cases["actions"], cases["rewards"])]
    keys = [("frequency_bias", id(cases), length, h) for length, h in zip(cases["length"], cases["history"])]
    scores = np.zeros((len(cases), len(names)))
    try:
        for _, index in sorted(cases.groupby("repetitions").indices.items()):
            scores[index] = score_arms(backend, [prompts[i] for i in index], spec, [keys[i] for i in index])
    finally:
        if hasattr(backend, "forget"):
            backend.forget(set(keys))
    return scores


def _check(style, decision, temperature, max_new_tokens, local: bool, backend: str) -> None:
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(STYLES)}")
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision mode {decision!r}; expected one of {', '.join(DECISIONS)}")
    if decision == "constrained" and not local:
        raise ValueError(f"constrained decisions score every arm: they need a local backend (hf or vllm), not {backend}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be 0 or more, got {temperature}")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")


class LLMAgent:
    """The bandit agent on any backend (see the module doc). ``backend`` is a loaded backend."""

    name = LLM_AGENT

    def __init__(self, backend, *, style: str = "cot", decision: str = "free", temperature: float = 0.0,
                 max_new_tokens: int | None = None, reuse_kv: bool = True):
        _check(style, decision, temperature, max_new_tokens, _is_local(backend), getattr(backend, "name", "?"))
        self.backend, self.model = backend, backend.model
        self.style, self.decision, self.temperature = style, decision, temperature
        self.max_new_tokens = max_new_tokens or MAX_NEW_TOKENS[style]
        self.cot = style != "no_cot"
        self.reuse_kv = reuse_kv  # False: recompute every prompt (the baseline of ``paperlib bench bandit``)
        self._run = 0
        self._keys: list | None = None

    def reset(self, spec: BanditSpec, seeds: Sequence[int]) -> None:
        self._forget()
        self.spec, self.seeds = spec, list(seeds)
        self._run += 1
        self._keys = [("bandit", id(self), self._run, i) for i in range(len(self.seeds))] if self.reuse_kv else None
        # episode columns (the runner adds them to every episode row)
        self.columns = {"decision": self.decision, "prompt": prompt_name(spec.variant, self.style),
                        "temperature": self.temperature, "max_new_tokens": self.max_new_tokens}

    def _forget(self) -> None:
        if self._keys and hasattr(self.backend, "forget"):
            self.backend.forget(self._keys)
        self._keys = None

    def act(self, history: History) -> Decisions:
        spec, t = self.spec, history.t
        users = [build_prompt(spec, history.actions[i, :t], history.rewards[i, :t], self.style)
                 for i in range(history.instances)]
        rng = generator(AGENT_STREAM, [*self.seeds, t])
        seed = int(rng.integers(2**31))
        try:
            texts, ids, prompts = self._write(users, seed)
            extra = {"completion_ids": ids, "prompt_hash": [hashlib.sha256(u.encode()).hexdigest()[:16] for u in users]}
            if self.decision == "free":
                parsed = [parse_action(text, spec.names) for text in texts]
                actions = np.array([-1 if a is None else a for a in parsed])
            else:
                answers = [with_answer_prefix(text) for text in texts]
                scores = score_arms(self.backend, [p + a for p, a in zip(prompts, answers)], spec, self._keys)
                actions = np.array([choose_scored(s, self.temperature, rng) for s in scores])
                extra |= {"arm_scores": list(scores), "forced": [a != text for a, text in zip(answers, texts)]}
                texts = [a + spec.names[arm] for a, arm in zip(answers, actions)]
        except BaseException:
            self._forget()
            raise
        if t == spec.horizon - 1:
            self._forget()
        return Decisions(actions, texts, extra)

    def _write(self, users: list[str], seed: int) -> tuple[list[str], list[list[int]], list[str]]:
        """The model's own text per instance (and its token ids, and the rendered prompts)."""
        if self.decision == "constrained" and self.style == "no_cot":
            prompts = [chat_prompt(self.backend, u) for u in users]
            return [""] * len(users), [[] for _ in users], prompts
        options = {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature, "seed": seed,
                   "stop": [ACTION_PREFIX] if self.decision == "constrained" else None}
        if not _is_local(self.backend):
            out = self.backend.chat([[{"role": "user", "content": u}] for u in users], **options)
            return [c.text for c in out], [list(c.token_ids) for c in out], users
        prompts = [chat_prompt(self.backend, u) for u in users]
        out = self.backend.generate(prompts, **options, **_stream_options(self.backend, self._keys))
        return [c.text for c in out], [list(c.token_ids) for c in out], prompts


def make_llm_agent(model: str | None = None, *, backend="hf", cot: bool = True, style: str | None = None,
                   decision: str = "free", temperature: float = 0.0, max_new_tokens: int | None = None) -> LLMAgent:
    """The LLM agent for a model name on a backend kind (``hf``, ``vllm``, ``openai``; built by
    ``paperlib.backends.make_backend``), or on an already loaded backend (so several agents
    share one model). ``style`` defaults to
    ``cot`` or ``no_cot`` after ``cot``; ``knowing_doing`` implies CoT."""
    style = style or ("cot" if cot else "no_cot")
    if not cot and style != "no_cot":
        raise ValueError(f"the {style} prompt asks for reasoning: it cannot run without CoT")
    if isinstance(backend, str):
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        if not model:
            raise ValueError("the LLM agent needs a model name, e.g. gemma3-270m")
        _check(style, decision, temperature, max_new_tokens, backend != "openai", backend)  # before loading a model
        backend = make_backend(backend, model)
    elif model is not None and model != backend.model:
        raise ValueError(f"model {model!r} differs from the backend's {backend.model!r}")
    return LLMAgent(backend, style=style, decision=decision, temperature=temperature, max_new_tokens=max_new_tokens)
