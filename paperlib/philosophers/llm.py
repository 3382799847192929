"""The LLM philosopher: one agent over any backend (``hf``, ``openai``, ``vllm``).

A policy for the episode runner (``paperlib.philosophers.episode``): each turn, every
philosopher of every live episode becomes one conversation (``paperlib.philosophers.prompts``)
and the whole batch goes to the backend in one call. A thin adapter on the shared decision core (``paperlib.llm.core``), which does the
deciding, the seeding and the step columns for every game. The table's action format, in the two decision modes:

- ``free``, the paper's protocol: the model writes, and generation stops at the end of
  a tool call (``</tool_call>``) or an end-of-turn token. ``parse_action`` reads the
  action; a completion with no parseable call is "none", no action, exactly as the
  paper scores a model that writes no call. An endpoint error (``finish_reason``
  ``error:...``) is also "none", and recorded.
- ``constrained`` **[ours]**: the call prefix ``<tool_call>{"name": "`` is forced right
  after the rendered prompt (the model writes nothing first) and the backend scores
  each of the six tool names followed by the closing quote. A model that cannot write
  a call still acts on its own preferences. Backends that score only (``hf``, ``vllm``).

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
- Reproducible sampling as the core does it: a turn's free call is seeded from (policy
  seed, turn number, the batch's episode seeds), so a run reproduces exactly, including
  after a resume (the harness re-forms the same batches); a constrained draw comes from
  a generator per episode.

Every decision carries the prompt version and the core's step columns
(``paperlib.llm.core.STEP_COLUMNS``: the prompt, its hash, the completion and its token
ids and log-probability, in constrained mode the six tools' scores in ``TOOLS`` order).
"""

from __future__ import annotations

from paperlib.backends import make_backend
from paperlib.llm.core import ActionFormat, DecisionCore, Request, check_settings
from paperlib.philosophers.env import NO_ACTION, TOOLS
from paperlib.philosophers.episode import Decision, Turn
from paperlib.philosophers.parsing import parse_action
from paperlib.philosophers.prompts import CALL_PREFIX, CALL_SUFFIX, DEFAULT_PROMPT, STOP, TOOL_SCHEMAS, get_prompt


def _tool_index(text: str) -> int | None:
    action = parse_action(text)
    return None if action == NO_ACTION else TOOLS.index(action)


TABLE_FORMAT = ActionFormat(
    candidates=TOOLS,
    parse=_tool_index,
    answer_prefix=CALL_PREFIX,
    suffix=CALL_SUFFIX,
    stop=tuple(STOP),
    tools=tuple(TOOL_SCHEMAS),
)


class LLMPolicy:
    """``act(turns) -> [Decision]`` over a backend; see the module docstring."""

    def __init__(
        self,
        backend,
        *,
        prompt: str = DEFAULT_PROMPT,
        decision: str = "free",
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        seed: int = 0,
    ):
        self.prompt = get_prompt(prompt)
        self.core = DecisionCore(
            backend, TABLE_FORMAT, mode=decision, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed
        )
        self.backend, self.decision = backend, decision
        self.temperature, self.max_new_tokens, self.seed = temperature, max_new_tokens, seed

    @property
    def labels(self) -> dict:
        """The settings an episode row records (and a resumed run must match)."""
        return {
            "backend": self.backend.name,
            "decision": self.decision,
            "prompt_version": self.prompt.name,
            "temperature": float(self.temperature),
            "max_new_tokens": self.max_new_tokens,
        }

    def reset(self, seeds: list[int]) -> None:
        self.core.reset(seeds)

    def conversations(self, turns: list[Turn]) -> list[list[dict]]:
        return [self.prompt.conversation(t.observation, native_tools=self.core.native_tools) for t in turns]

    def act(self, turns: list[Turn]) -> list[Decision]:
        requests = [Request(c, t.seed) for c, t in zip(self.conversations(turns), turns)]
        return [
            Decision(
                NO_ACTION if choice.action is None else TOOLS[choice.action],
                choice.raw_completion,
                self.prompt.name,
                choice.prompt_hash,
                {k: v for k, v in choice.columns().items() if k not in ("raw_completion", "prompt_hash")},
            )
            for choice in self.core.decide(requests)
        ]


def make_llm_policy(
    model: str,
    backend="hf",
    prompt: str = DEFAULT_PROMPT,
    decision: str = "free",
    temperature: float = 1.0,
    max_new_tokens: int = 32,
    seed: int = 0,
    backend_options: dict | None = None,
) -> LLMPolicy:
    """An ``LLMPolicy`` for ``model``; ``backend`` is a kind (``hf``, ``openai``, ``vllm``),
    built here with ``backend_options``, or an already built backend to reuse."""
    get_prompt(prompt)  # before a model loads
    if isinstance(backend, str):
        check_settings(decision, backend, temperature, max_new_tokens)
        backend = make_backend(backend, model, **(backend_options or {}))
    return LLMPolicy(
        backend, prompt=prompt, decision=decision, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed
    )
