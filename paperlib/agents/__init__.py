"""Policies for the philosophers: scripted baselines and LLM agents."""

from paperlib.agents.parsing import parse_action

__all__ = ["parse_action"]
