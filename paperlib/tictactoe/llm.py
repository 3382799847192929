"""The LLM tic-tac-toe agent: paper B's prompt, one batched decision per turn for all live games.

A thin adapter on the shared decision core (``paperlib.llm.core``): each live game's
user message is ``prompts.build_prompt`` of its board (the legal moves listed unless the
run says otherwise), the action format reads the last ``ACTION=X`` with X a cell 0..8
(``parsing.parse_action``), and

- ``free``, paper B's protocol: the model writes up to ``max_new_tokens`` tokens (the
  paper's 256 with CoT, 16 without: ``prompts.MAX_NEW_TOKENS``); no cell in its text, or an
  occupied one, is played by the runner as a random legal move and flagged invalid;
- ``constrained`` **[ours]**: the model's own text first (its CoT, without CoT nothing),
  then ``ACTION=`` forced and the nine cells scored; the best-scored cell is played even
  when it is occupied (then flagged invalid like a free move): the scores say what the
  model prefers, and the legality of that preference is what is measured.

Temperature 0 by default, paper B's evaluation setting.
"""

from __future__ import annotations

from collections.abc import Sequence

from paperlib.backends import make_backend
from paperlib.decisions import Decisions
from paperlib.llm.core import ActionFormat, DecisionCore, Request, as_decisions, check_settings
from paperlib.tictactoe.game import CELLS, Observation
from paperlib.tictactoe.parsing import parse_action
from paperlib.tictactoe.prompts import ACTION_PREFIX, MAX_NEW_TOKENS, build_prompt, prompt_name

LLM_AGENT = "llm"


class LLMAgent:
    name = LLM_AGENT

    def __init__(
        self,
        backend,
        *,
        cot: bool = True,
        decision: str = "free",
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        seed: int = 0,
        token_logprobs: bool = False,  # the step rows keep each completion token's (a trainer's rollout)
    ):
        check_settings(decision, backend, temperature, max_new_tokens)
        self.backend, self.model, self.cot, self.decision = backend, backend.model, cot, decision
        self.style = "cot" if cot else "no_cot"
        self.temperature, self.max_new_tokens = temperature, max_new_tokens or MAX_NEW_TOKENS[self.style]
        action_format = ActionFormat(
            candidates=tuple(str(c) for c in range(CELLS)),
            parse=parse_action,
            answer_prefix=ACTION_PREFIX,
            write_first=cot,
        )
        self.core = DecisionCore(
            backend,
            action_format,
            mode=decision,
            temperature=temperature,
            max_new_tokens=self.max_new_tokens,
            seed=seed,
            token_logprobs=token_logprobs,
        )

    def reset(self, seeds: Sequence[int]) -> None:
        self.core.reset(seeds)
        self.columns = {
            "decision": self.decision,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
        }

    def act(self, observations: Sequence[Observation]) -> Decisions:
        requests = [Request([{"role": "user", "content": build_prompt(o, self.style)}], o.seed) for o in observations]
        return as_decisions(
            self.core.decide(requests),
            prompt_version=[prompt_name(self.style, o.legal_in_prompt) for o in observations],
        )


def make_llm_agent(
    model: str | None = None,
    *,
    backend="hf",
    cot: bool = True,
    decision: str = "free",
    temperature: float = 0.0,
    max_new_tokens: int | None = None,
) -> LLMAgent:
    """The LLM agent for a model name on a backend kind (built here), or on a loaded backend."""
    if isinstance(backend, str):
        check_settings(decision, backend, temperature, max_new_tokens)  # before a model loads
        if not model:
            raise ValueError("the LLM agent needs a model name, e.g. qwen2.5-coder-0.5b")
        backend = make_backend(backend, model)
    return LLMAgent(backend, cot=cot, decision=decision, temperature=temperature, max_new_tokens=max_new_tokens)
