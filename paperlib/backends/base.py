"""What every text-generation backend returns and offers.

A backend turns conversations (lists of chat messages) into completions. Local
backends (``hf``, ``vllm``) also render a conversation to its prompt text, generate
from raw prompt text, and score candidate continuations by log-probability, which
the constrained agents and the frequency-bias analysis use. Completions carry their
token ids (and log-probs on request) so that a trainer can reuse the rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

import numpy as np

Message = dict  # {"role": "system"|"user"|"assistant", "content": str}
Conversation = list[Message]
# a tool whose name shows in a rendered prompt only if the chat template renders tools
PROBE_TOOL = {"type": "function", "function": {"name": "paperlib_probe_tool", "description": "", "parameters": {}}}


@dataclass
class Completion:
    text: str
    token_ids: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    finish_reason: str = ""
    logprobs: list[float] | None = None


class Backend(Protocol):
    name: str
    model: str

    def chat(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: list[dict] | None = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, generated as one batch where the backend can."""
        ...


class LocalBackend(Backend, Protocol):
    def render(self, conversation: Conversation, *, tools: list[dict] | None = None) -> str:
        """The prompt text the model sees, chat template applied, generation prompt added."""
        ...

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
    ) -> list[Completion]:
        ...

    def score(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Log-probability of each candidate continuing each prompt: shape (prompts, candidates)."""
        ...


def choose_scored(scores: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The constrained agents' pick among scored candidates (one row of ``score``): the
    argmax at temperature 0, else a draw from softmax(scores / temperature) with ``rng``."""
    if temperature == 0:
        return int(np.argmax(scores))
    p = np.exp((scores - scores.max()) / temperature)
    return int(rng.choice(len(scores), p=p / p.sum()))
