"""What every text-generation backend returns and offers.

A backend turns conversations (lists of chat messages) into completions. Local
backends (``hf``, ``vllm``) also render a conversation to its prompt text, generate
from raw prompt text, and score candidate continuations by log-probability, which
the constrained agents and the frequency-bias analysis use. Completions carry their
token ids (and log-probs on request) so that a trainer can reuse the rollouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

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


@dataclass(frozen=True)
class Capabilities:
    """What a backend kind really offers; the decision core reads these instead of probing."""

    renders: bool  # renders a conversation to prompt text (``render``, ``encode``) and generates from it (``generate``)
    scores: bool  # log-probability of candidate continuations (``score``): constrained decisions
    logprobs: bool  # per-token log-probabilities of what it generates (``generate(logprobs=True)``)
    streams: bool  # keeps per-stream prompt KV between calls (``streams=`` keys, ``forget``)


# What each kind offers (``Capabilities``), known before a model loads, so that a setting
# that needs more (a constrained decision over HTTP) is refused first.
CAPABILITIES = {
    "hf": Capabilities(renders=True, scores=True, logprobs=True, streams=True),
    "openai": Capabilities(renders=False, scores=False, logprobs=False, streams=False),
    "vllm": Capabilities(renders=True, scores=True, logprobs=False, streams=False),
}


class Backend(Protocol):
    name: str
    model: str
    capabilities: Capabilities
    supports_tools: bool  # whether ``tools=`` reach the model through its chat template (an endpoint: always)

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
    tokenizer: object

    def render(self, conversation: Conversation, *, tools: list[dict] | None = None) -> str:
        """The prompt text the model sees, chat template applied, generation prompt added."""
        ...

    def encode(self, text: str) -> list[int]:
        """The token ids of a rendered prompt, as the model is fed them."""
        ...

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
    ) -> list[Completion]: ...

    def score(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Log-probability of each candidate continuing each prompt: shape (prompts, candidates)."""
        ...


def continuation_ids(backend: LocalBackend, head_ids: list[int], head: str, tail: str) -> list[int]:
    """The token ids of ``tail`` continuing ``head`` (whose ids are ``head_ids``): from tokenising
    head+tail jointly when that leaves the head's tokens intact (the tokens the model would have
    produced), else ``tail`` tokenised alone (a token would have straddled the boundary)."""
    joint = backend.encode(head + tail)
    if joint[: len(head_ids)] == head_ids and len(joint) > len(head_ids):
        return joint[len(head_ids) :]
    return backend.tokenizer(tail, add_special_tokens=False)["input_ids"]
