"""The LLM philosopher: one agent over any backend (``hf``, ``openai``, ``vllm``).

A policy for the episode runner (``paperlib.philosophers.episode``): each turn, every
philosopher of every live episode becomes one conversation (``paperlib.philosophers.prompts``)
and the whole batch goes to the backend in one call. Two decision modes:

- ``free``, the paper's protocol: one batched ``chat`` call; the model writes, and
  generation stops at the end of a tool call (``</tool_call>``) or an end-of-turn
  token. ``parse_action`` reads the action; a completion with no parseable call is
  "none", no action, exactly as the paper scores a model that writes no call. An
  endpoint error (``finish_reason`` ``error:...``) is also "none", and recorded.
- ``constrained`` **[ours]**: the call prefix ``<tool_call>{"name": "`` is forced after
  the rendered prompt and the backend scores each of the six tool names followed by
  the closing quote (``score``: the summed log-probability of the name's tokens). The
  action is the argmax at temperature 0, else a draw from softmax(scores / T). A model
  that cannot write a call still acts on its own preferences. Local backends only
  (``hf``, ``vllm``): an HTTP endpoint does not score text. Identical prompts in one
  batch (common: every episode starts from the same table) are scored once.

Choices the paper leaves open, made here **[ours]**:
- Tools go through the chat template (``tools=``) where the backend renders them
  natively (an HTTP endpoint always does); otherwise the prompt version writes them
  into the system message as plain text.
- ``temperature`` defaults to 1.0: the paper states none; 1.0 is the chat endpoints'
  default and the model's own distribution. At 0 every episode of a cell would be
  the same episode, since every table starts empty and the rules are deterministic.
- ``max_new_tokens`` defaults to 32: a call such as
  ``<tool_call>{"name": "put_down_right"}</tool_call>`` takes ≈ 15-20 tokens with the
  embedded models' tokenizers, and a call cut off after its name still parses.
- Reproducible sampling: a free-mode call is seeded from (policy seed, turn number,
  the batch's episode seeds), so the same run reproduces exactly, including after a
  resume (the harness re-forms the same batches). A constrained draw uses a generator
  per episode seeded from (policy seed, episode seed), so an episode's draws do not
  depend on the rest of the batch.

Every decision carries the raw completion, the prompt version and a hash of the
conversation (messages and tools), and these step columns: ``decision_mode``,
``finish_reason``, ``prompt_tokens`` (free mode), ``completion_token_ids`` (a local backend's
generated ids, or the ids of the forced call in constrained mode: what a trainer needs
to reuse the rollout; empty over HTTP) and, in constrained mode, ``tool_logprobs`` (the
six scores, in ``TOOLS`` order).
"""

from __future__ import annotations

import numpy as np

from paperlib.philosophers.parsing import parse_action
from paperlib.philosophers.prompts import CALL_PREFIX, CALL_SUFFIX, DEFAULT_PROMPT, STOP, TOOL_SCHEMAS, get_prompt, prompt_hash
from paperlib.backends import make_backend
from paperlib.backends.base import PROBE_TOOL, choose_scored
from paperlib.philosophers.env import TOOLS
from paperlib.philosophers.episode import Decision, Turn

DECISION_MODES = ("free", "constrained")
_CANNOT_SCORE = ("constrained decisions score text, which the {} backend cannot; "
                 "use --backend hf or vllm, or --decision free")


def renders_tools(backend) -> bool:
    """Whether the backend passes ``tools=`` to the model natively: an HTTP endpoint
    always does; a local backend when its chat template renders them."""
    if hasattr(backend, "supports_tools"):
        return bool(backend.supports_tools)
    if not hasattr(backend, "render"):
        return True
    probe = [{"role": "user", "content": "u"}]
    return "paperlib_probe_tool" in backend.render(probe, tools=[PROBE_TOOL])


class LLMPolicy:
    """``act(turns) -> [Decision]`` over a backend; see the module docstring."""

    def __init__(self, backend, *, prompt: str = DEFAULT_PROMPT, decision: str = "free", temperature: float = 1.0,
                 max_new_tokens: int = 32, seed: int = 0):
        _check_decision(decision)
        if temperature < 0:
            raise ValueError(f"temperature must be zero or more, got {temperature}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if decision == "constrained" and not hasattr(backend, "score"):
            raise ValueError(_CANNOT_SCORE.format(backend.name))
        self.backend, self.prompt, self.decision = backend, get_prompt(prompt), decision
        self.temperature, self.max_new_tokens, self.seed = temperature, max_new_tokens, seed
        self.tools = TOOL_SCHEMAS if renders_tools(backend) else None
        if decision == "constrained":
            self._calls = [CALL_PREFIX + name + CALL_SUFFIX for name in TOOLS]
            self._call_ids = [backend.tokenizer(call, add_special_tokens=False)["input_ids"] for call in self._calls]
        self.reset([])

    @property
    def labels(self) -> dict:
        """The settings an episode row records (and a resumed run must match)."""
        return {"backend": self.backend.name, "decision": self.decision, "prompt_version": self.prompt.name,
                "temperature": float(self.temperature), "max_new_tokens": self.max_new_tokens}

    def reset(self, seeds: list[int]) -> None:
        """Start a batch of episodes: the turn counter and the per-episode generators."""
        self._turn = 0
        self._generators = {s: np.random.default_rng([self.seed, s]) for s in seeds}

    def conversations(self, turns: list[Turn]) -> list[list[dict]]:
        return [self.prompt.conversation(t.observation, native_tools=self.tools is not None) for t in turns]

    def act(self, turns: list[Turn]) -> list[Decision]:
        conversations = self.conversations(turns)
        hashes = [prompt_hash([c, self.tools]) for c in conversations]
        self._turn += 1
        if self.decision == "free":
            return self._free(turns, conversations, hashes)
        return self._constrained(turns, conversations, hashes)

    def _decision(self, action, text, digest, **extra) -> Decision:
        return Decision(action, text, self.prompt.name, digest, {"decision_mode": self.decision, **extra})

    def _free(self, turns, conversations, hashes) -> list[Decision]:
        call_seed = int(np.random.SeedSequence([self.seed, self._turn, *sorted({t.seed for t in turns})]).generate_state(1)[0])
        completions = self.backend.chat(conversations, tools=self.tools, max_new_tokens=self.max_new_tokens,
                                        temperature=self.temperature, seed=call_seed, stop=STOP)
        return [
            self._decision(parse_action(c.text), c.text, digest, finish_reason=c.finish_reason,
                           prompt_tokens=c.prompt_tokens, completion_token_ids=list(c.token_ids))
            for c, digest in zip(completions, hashes)
        ]

    def _constrained(self, turns, conversations, hashes) -> list[Decision]:
        prompts = [self.backend.render(c, tools=self.tools) + CALL_PREFIX for c in conversations]
        unique = list(dict.fromkeys(prompts))
        scores = self.backend.score(unique, [name + CALL_SUFFIX for name in TOOLS])
        row = {p: i for i, p in enumerate(unique)}
        decisions = []
        for turn, prompt, digest in zip(turns, prompts, hashes):
            s = scores[row[prompt]]
            k = choose_scored(s, self.temperature, self._generators[turn.seed])
            decisions.append(self._decision(TOOLS[k], self._calls[k], digest, finish_reason="constrained",
                                            completion_token_ids=list(self._call_ids[k]),
                                            tool_logprobs=s.tolist()))
        return decisions


def _check_decision(decision: str) -> None:
    if decision not in DECISION_MODES:
        raise ValueError(f"unknown decision mode {decision!r}; choose one of {', '.join(DECISION_MODES)}")


def make_llm_policy(model: str, backend="hf", prompt: str = DEFAULT_PROMPT, decision: str = "free",
                    temperature: float = 1.0, max_new_tokens: int = 32, seed: int = 0,
                    backend_options: dict | None = None) -> LLMPolicy:
    """An ``LLMPolicy`` for ``model``; ``backend`` is a kind (``hf``, ``openai``, ``vllm``),
    built here with ``backend_options``, or an already built backend to reuse."""
    _check_decision(decision)  # before a model loads
    get_prompt(prompt)
    if isinstance(backend, str):
        if decision == "constrained" and backend == "openai":
            raise ValueError(_CANNOT_SCORE.format(backend))
        backend = make_backend(backend, model, **(backend_options or {}))
    return LLMPolicy(backend, prompt=prompt, decision=decision, temperature=temperature,
                     max_new_tokens=max_new_tokens, seed=seed)
