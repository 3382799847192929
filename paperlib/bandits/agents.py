"""Every bandit agent by name: the classic baselines and the LLM agent."""

from __future__ import annotations

from paperlib.bandits.baselines import BASELINES, EPSILON, LLM_AGENT, Agent, EpsilonGreedyAgent
from paperlib.bandits.llm import make_llm_agent

AGENTS = (*BASELINES, LLM_AGENT)


def make_agent(name: str, model: str | None = None, *, epsilon: float = EPSILON, cot: bool = True, **llm) -> Agent:
    """An agent by name. ``model``, ``cot`` and the keywords in ``llm`` (backend, style,
    decision, temperature, max_new_tokens, exploration) are for the LLM agent
    (``paperlib.bandits.llm.make_llm_agent``); baselines take none of them."""
    if name == LLM_AGENT:
        return make_llm_agent(model, cot=cot, **llm)
    if name not in BASELINES:
        raise ValueError(f"unknown agent {name!r}; expected one of {', '.join(AGENTS)}")
    if model is not None or llm:
        raise ValueError(
            f"{'a model' if model is not None else ', '.join(llm)} is for the LLM agent; the {name} baseline takes none"
        )
    return EpsilonGreedyAgent(epsilon) if name == "epsilon_greedy" else BASELINES[name]()
