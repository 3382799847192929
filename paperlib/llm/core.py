"""One decision core for every game: conversations in, one decision per conversation out.

A game describes how its actions are read and forced (:class:`ActionFormat`: the
candidate names, a free-text parser, the answer prefix) and hands the core one
:class:`Request` per agent about to act (its conversation, its episode's seed, and
optionally a stream key whose prompt KV a backend may keep between turns). The core
decides for all of them at once, over any backend, in one of two modes:

- ``free``, both papers' protocol: the model writes up to ``max_new_tokens`` tokens
  (stopped at the format's ``stop`` strings) and the format's ``parse`` reads the action
  from the text; ``None`` where there is none (paper A: no action; paper B: a random
  arm or move, flagged invalid, played by the game's runner).
- ``constrained`` **[ours]**: the model first writes its own text where the format
  asks for it (``write_first``: a chain of thought, stopped at its own answer prefix),
  then the answer prefix is forced (on a new line after text, directly otherwise:
  :func:`with_answer_prefix`) and the backend scores every candidate name (followed
  by the format's ``suffix``) as a continuation. The action is the argmax at
  temperature 0, else a draw from softmax(scores / temperature). Needs a backend that
  scores (``Capabilities.scores``). Identical prompts of one call without stream keys
  are scored once.

Seeding **[ours]**, so a run reproduces, including after a resume that re-forms the
same batches: a free call samples from a seed derived from (core seed, the call's
number since :meth:`DecisionCore.reset`, the call's distinct episode seeds); a
constrained draw comes from one generator per episode seeded with (core seed,
episode seed), so an episode's draws do not depend on the rest of the batch.

Every :class:`Choice` carries the step columns shared by all games
(:data:`STEP_COLUMNS`): the rendered prompt (local backends; the conversation as JSON
over HTTP) and its hash, the completion text and token ids, and
``completion_logprob``: the log-probability, under the model at temperature 1, of the
tokens the model produced (free: the completion; constrained: its own text and the
chosen candidate's tokens; the forced prefix is not the model's choice), or NaN where
the backend reports none; ``completion_token_logprobs``: the same per token of
``completion_ids``, for a core asked to keep them (``token_logprobs``: a trainer's rollout)
and a free decision whose backend reports them, else None. That is what a trainer needs to
reuse a rollout (RLFT's PPO takes them as its old log-probabilities).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from paperlib.backends.base import CAPABILITIES, Conversation, continuation_ids
from paperlib.decisions import Decisions

DECISION_MODES = ("free", "constrained")
# The columns every game's step rows take from a Choice (besides its own episode,
# seat, turn, action, valid and state columns).
STEP_COLUMNS = (
    "decision_mode",
    "prompt",
    "prompt_hash",
    "prompt_tokens",
    "raw_completion",
    "completion_ids",
    "completion_logprob",
    "completion_token_logprobs",
    "candidate_logprobs",
    "forced",
    "finish_reason",
)


@dataclass(frozen=True)
class ActionFormat:
    """How a game's actions appear in text: what the core needs from the game."""

    candidates: tuple[str, ...]  # the action names, in the game's action order
    parse: Callable[[str], int | None]  # free text -> index into candidates, or None
    answer_prefix: str  # forced before a candidate name in constrained mode
    suffix: str = ""  # after each candidate name when scored (a closing quote, say)
    stop: tuple[str, ...] = ()  # free mode ends a completion at these strings
    write_first: bool = False  # constrained mode: the model writes its own text before the prefix
    tools: tuple[dict, ...] | None = None  # tool schemas, passed where the backend renders them


@dataclass(frozen=True)
class Request:
    conversation: Conversation
    seed: int  # the episode's (or instance's) seed
    stream: Hashable | None = None  # a key whose prompt KV a backend with streams keeps


@dataclass
class Choice:
    action: int | None  # index into the format's candidates; None: no action found
    raw_completion: str  # constrained: the model's text, the forced prefix, the chosen name and suffix
    completion_ids: list[int]
    completion_logprob: float
    prompt: str
    prompt_hash: str
    prompt_tokens: int
    finish_reason: str
    decision_mode: str
    candidate_logprobs: list[float] | None = None
    completion_token_logprobs: list[float] | None = None  # free: per token of completion_ids
    forced: bool = False  # constrained: whether the answer prefix had to be appended
    extra: dict = field(default_factory=dict)

    def columns(self) -> dict:
        return {name: getattr(self, name) for name in STEP_COLUMNS}


def prompt_hash(value) -> str:
    """A short stable hash of a rendered prompt, or of a conversation (and its tools)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def with_answer_prefix(text: str, prefix: str) -> str:
    """The model's text followed by the forced prefix **[ours]**: on a new line after text,
    directly when the text is empty or already ends with the prefix."""
    if text.endswith(prefix):
        return text
    return text + ("\n" if text.strip() and not text.endswith("\n") else "") + prefix


def choose_scored(scores: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The pick among scored candidates: the argmax at temperature 0, else a draw from
    softmax(scores / temperature) with ``rng``."""
    if temperature == 0:
        return int(np.argmax(scores))
    p = np.exp((scores - scores.max()) / temperature)
    return int(rng.choice(len(scores), p=p / p.sum()))


def check_settings(mode: str, backend, temperature: float, max_new_tokens: int | None) -> None:
    """One-line refusals of settings that cannot work, before any model loads. ``backend``
    is a kind (``hf``, ``openai``, ``vllm``) or a built backend."""
    if mode not in DECISION_MODES:
        raise ValueError(f"unknown decision mode {mode!r}; choose one of {', '.join(DECISION_MODES)}")
    if isinstance(backend, str) and backend not in CAPABILITIES:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(CAPABILITIES)}")
    capabilities, name = (
        (CAPABILITIES[backend], backend) if isinstance(backend, str) else (backend.capabilities, backend.name)
    )
    if mode == "constrained" and not capabilities.scores:
        raise ValueError(
            f"constrained decisions score text, which the {name} backend cannot; "
            f"use a backend that scores ({', '.join(k for k, c in CAPABILITIES.items() if c.scores)}) "
            f"or free decisions"
        )
    if not temperature >= 0:
        raise ValueError(f"temperature must be zero or more, got {temperature}")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")


class DecisionCore:
    """Free or constrained decisions of one format over one backend (see the module doc)."""

    def __init__(
        self,
        backend,
        action_format: ActionFormat,
        *,
        mode: str = "free",
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        seed: int = 0,
        token_logprobs: bool = False,
    ):
        check_settings(mode, backend, temperature, max_new_tokens)
        self.backend, self.format, self.mode = backend, action_format, mode
        self.temperature, self.max_new_tokens, self.seed = temperature, max_new_tokens, seed
        self.token_logprobs = token_logprobs  # keep each completion token's log-probability (a trainer's rollout)
        self.capabilities = backend.capabilities
        self.tools = list(action_format.tools) if action_format.tools and backend.supports_tools else None
        self.reset([])

    @property
    def native_tools(self) -> bool:
        """Whether the tools reach the model through its chat template (else the game writes them)."""
        return self.tools is not None

    def reset(self, seeds: Sequence[int]) -> None:
        """Start a batch of episodes: the call counter and the per-episode generators."""
        self._calls = 0
        self._generators = {s: np.random.default_rng([self.seed, s]) for s in seeds}

    def forget(self, streams: Sequence[Hashable]) -> None:
        """Let the backend drop the kept KV of these streams (an episode ended)."""
        if self.capabilities.streams:
            self.backend.forget(list(streams))

    def decide(self, requests: Sequence[Request]) -> list[Choice]:
        self._calls += 1
        if not requests:
            return []
        local = self.capabilities.renders
        prompts = [
            self.backend.render(r.conversation, tools=self.tools)
            if local
            else json.dumps({"messages": r.conversation, "tools": self.tools}, sort_keys=True)
            for r in requests
        ]
        hashes = [prompt_hash([r.conversation, self.tools]) for r in requests]
        streams = (
            [r.stream for r in requests]
            if self.capabilities.streams and any(r.stream is not None for r in requests)
            else None
        )
        if self.mode == "free" or self.format.write_first:
            stop = [self.format.answer_prefix] if self.mode == "constrained" else list(self.format.stop)
            written = self._write(requests, prompts, streams, stop)
        else:
            written = [None] * len(requests)
        if self.mode == "free":
            return [self._free(c, p, h) for c, p, h in zip(written, prompts, hashes)]
        return self._constrained(requests, prompts, hashes, written, streams)

    def _write(self, requests, prompts, streams, stop):
        seeds = sorted({r.seed for r in requests})
        call_seed = int(np.random.SeedSequence([self.seed, self._calls, *seeds]).generate_state(1)[0])
        options = {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "seed": call_seed,
            "stop": stop or None,
        }
        if self.capabilities.logprobs:
            options["logprobs"] = True
        if not self.capabilities.renders:
            return self.backend.chat([r.conversation for r in requests], tools=self.tools, **options)
        if streams is not None:
            options["streams"] = streams
        return self.backend.generate(prompts, **options)

    def _free(self, completion, prompt, digest) -> Choice:
        return Choice(
            self.format.parse(completion.text),
            completion.text,
            list(completion.token_ids),
            _total(completion.logprobs),
            prompt,
            digest,
            completion.prompt_tokens,
            completion.finish_reason,
            "free",
            completion_token_logprobs=(
                list(completion.logprobs) if self.token_logprobs and completion.logprobs is not None else None
            ),
        )

    def _constrained(self, requests, prompts, hashes, written, streams) -> list[Choice]:
        fmt = self.format
        texts = [c.text if c is not None else "" for c in written]
        answers = [with_answer_prefix(t, fmt.answer_prefix) for t in texts]
        scored = [p + a for p, a in zip(prompts, answers)]
        names = [name + fmt.suffix for name in fmt.candidates]
        if streams is None:  # identical prompts (every episode starts at the same table) scored once
            row_of = {prompt: i for i, prompt in enumerate(dict.fromkeys(scored))}
            scores = np.asarray(self.backend.score(list(row_of), names), float)[[row_of[s] for s in scored]]
        else:
            scores = np.asarray(self.backend.score(scored, names, streams=streams), float)
        choices = []
        for request, prompt, digest, completion, text, answer, row in zip(
            requests, prompts, hashes, written, texts, answers, scores
        ):
            rng = self._generators.setdefault(request.seed, np.random.default_rng([self.seed, request.seed]))
            k = choose_scored(row, self.temperature, rng)
            own_ids, own_logprob = (
                ([], 0.0) if completion is None else (list(completion.token_ids), _total(completion.logprobs))
            )
            head = prompt + text
            head_ids = self.backend.encode(head)
            forced_ids = continuation_ids(self.backend, head_ids, head, answer[len(text) :] + names[k])
            choices.append(
                Choice(
                    k,
                    answer + names[k],
                    own_ids + forced_ids,
                    own_logprob + float(row[k]),
                    prompt,
                    digest,
                    len(head_ids) if completion is None else completion.prompt_tokens,
                    "constrained" if completion is None else completion.finish_reason,
                    "constrained",
                    candidate_logprobs=row.tolist(),
                    forced=answer != text,
                )
            )
        return choices


def as_decisions(choices: Sequence[Choice], **columns: Sequence) -> Decisions:
    """A batch of choices as a batched agent's ``Decisions``: the action index (-1 where none was
    found), the raw completions, the step columns, and any ``columns`` the game adds."""
    rows = [c.columns() for c in choices]
    extra = {name: [row[name] for row in rows] for name in STEP_COLUMNS if name != "raw_completion"}
    return Decisions(
        np.array([-1 if c.action is None else c.action for c in choices], dtype=np.int64),
        [c.raw_completion for c in choices],
        {**extra, **columns},
    )


def _total(logprobs) -> float:
    return float(sum(logprobs)) if logprobs is not None else math.nan
