"""Reproduction package for two papers on LLM agents.

Paper A: dining philosophers, "GRPO does not close the multi-agent coordination gap".
Paper B: bandits, "LLMs are greedy agents" (the knowing-doing gap).
"""

__version__ = "0.1.0"
