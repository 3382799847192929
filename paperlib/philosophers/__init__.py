"""Paper A: the dining-philosophers table, whole: rules, reward, meal bound, prompts,
parser, scripted and LLM agents, episode runner, evaluation harness and analysis."""
