"""Paper B: multi-armed bandits, classic baselines, the LLM bandit agent and its metrics."""
