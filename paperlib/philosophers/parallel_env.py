"""Paper A's table behind PettingZoo's ParallelEnv API: a thin adapter over the pure rules.

One ``step`` is one round of paper A's environment (its "Environment" section):
agents ``philosopher_0..N-1`` each pick one of the six tools, and the table moves by
``env.play_round``, the same function the batched runner (``episode.run_episodes``,
still the fast path) applies, so the two agree action for action.

- Actions: ``Discrete(6)``, an index into ``env.TOOLS``. An agent left out of the
  ``actions`` dict takes no action (``"none"``: neither a meal nor a ``think``, the
  case behind the paper's degenerate maximum) **[ours]**.
- Observations: a ``Dict`` of what ``env.Observation`` holds, per agent:
  ``philosopher`` ``Discrete(N)``; ``round`` ``Discrete(R + 1, start=1)`` (the round
  about to be played; R + 1 once the episode is over); ``flags`` ``MultiBinary(5)``,
  in ``FLAGS`` order (holds left, holds right, left fork free, right fork free, ready
  to eat); ``meals`` ``Discrete(m + 1)`` with m = (R + 2) // 5, the most one
  philosopher can eat in R rounds (``reward.max_meals_per_philosopher``); and
  ``text``, the user message of the prompt version (``prompts.PromptVersion.user``),
  a ``Text`` space over the printable ASCII characters whose ``max_length`` is the
  longest message the table can produce (every flag combination and meal count, at
  the last seat and round): 317 characters for N = 5, R = 5 and the default prompt.
  The system message is the same for every philosopher and round:
  ``prompts.get_prompt(prompt).system(n, native_tools)``.
- Turn order: ``simultaneous`` (default) or ``sequential``. Sequential rounds apply the
  seats in id order, each action at once, as ``run_episodes`` does; but a ParallelEnv
  collects every decision before the round, so here later seats decide on the table
  at the start of the round, not on their predecessors' moves **[ours]**. Replaying a
  recorded action sequence gives identical episodes in both modes.
- Episode end: a deadlock (every philosopher holds one fork) terminates every agent;
  otherwise round R truncates them **[ours: a deadlock in round R is a termination,
  not a truncation]**. Rewards are 0 on every step but the last, where every agent
  gets paper A's episode reward (``reward.score(...)["reward"]``, clipped to [0, 1]);
  that step's ``infos`` carry every reward component, the meals and the deadlock flag.
  Every step's info carries the tool played (``action``) and whether it succeeded
  (``valid``). Agents leave ``agents`` when the episode ends, all together.
- ``reset(seed=...)``: the rules are deterministic; a seed seeds each agent's action
  space (seed + seat), so sampled actions are reproducible **[ours]**.
"""

from __future__ import annotations

import string
from itertools import product

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from paperlib.philosophers.env import (
    FREE,
    MODES,
    NO_ACTION,
    TOOLS,
    Observation,
    initial_table,
    is_deadlock,
    observe,
    play_round,
)
from paperlib.philosophers.prompts import DEFAULT_PROMPT, get_prompt
from paperlib.philosophers.reward import EpisodeOutcome, max_meals_per_philosopher, score

FLAGS = ("holds_left", "holds_right", "left_free", "right_free", "ready")
CHARSET = frozenset(string.printable)


def agent_name(i: int) -> str:
    return f"philosopher_{i}"


class PhilosophersParallelEnv(ParallelEnv):
    """N philosophers, R rounds, one ParallelEnv step per round (see the module docstring)."""

    metadata = {"name": "dining_philosophers_v0", "render_modes": ["ansi"], "is_parallelizable": True}
    render_mode = "ansi"

    def __init__(self, n: int, rounds: int = 5, mode: str = "simultaneous", prompt: str = DEFAULT_PROMPT):
        self.table = initial_table(n)  # raises the one-line ValueError for n < 2
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        self.n, self.rounds, self.mode = n, rounds, mode
        self.prompt = get_prompt(prompt)
        self.possible_agents = [agent_name(i) for i in range(n)]
        self.agents: list[str] = []
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        self.max_text_length = self._longest_text()
        self._observation_spaces = {agent: self._make_observation_space() for agent in self.possible_agents}
        self._action_spaces = {agent: spaces.Discrete(len(TOOLS)) for agent in self.possible_agents}

    def _longest_text(self) -> int:
        """The longest user message: last seat, round R + 1, every flag combination and meal count."""
        last_meal = max_meals_per_philosopher(self.rounds)
        worst = [
            Observation(self.n - 1, self.n, self.rounds + 1, meals=meals, **dict(zip(FLAGS, flags)))
            for flags in product((False, True), repeat=len(FLAGS))
            for meals in range(last_meal + 1)
        ]
        return max(len(self.prompt.user(obs)) for obs in worst)

    def _make_observation_space(self) -> spaces.Dict:
        return spaces.Dict(
            {
                "philosopher": spaces.Discrete(self.n),
                "round": spaces.Discrete(self.rounds + 1, start=1),
                "flags": spaces.MultiBinary(len(FLAGS)),
                "meals": spaces.Discrete(max_meals_per_philosopher(self.rounds) + 1),
                "text": spaces.Text(self.max_text_length, charset=CHARSET),
            }
        )

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def _observe(self, i: int) -> dict:
        obs = observe(self.table, i)
        return {
            "philosopher": obs.philosopher,
            "round": obs.round,
            "flags": np.array([getattr(obs, flag) for flag in FLAGS], dtype=np.int8),
            "meals": obs.meals,
            "text": self.prompt.user(obs),
        }

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            for i, agent in enumerate(self.possible_agents):
                self._action_spaces[agent].seed(seed + i)
        self.agents = list(self.possible_agents)
        self.table = initial_table(self.n)
        self._think_actions = self._actions_total = 0
        return {agent: self._observe(i) for i, agent in enumerate(self.agents)}, {agent: {} for agent in self.agents}

    def _tool(self, agent: str, action) -> str:
        if agent not in self.agents:
            raise ValueError(f"{agent!r} is not a live agent of this table")
        if not self._action_spaces[agent].contains(action):
            raise ValueError(f"action {action!r} of {agent} is not an index into the {len(TOOLS)} tools")
        return TOOLS[int(action)]

    def step(self, actions: dict):
        if not self.agents:
            raise ValueError("the episode is over; call reset() first")
        names = [NO_ACTION] * self.n
        for agent, action in actions.items():
            names[self._seat[agent]] = self._tool(agent, action)
        self.table, valid = play_round(self.table, names, self.mode)
        self._think_actions += names.count("think")
        self._actions_total += self.n - names.count(NO_ACTION)
        deadlock = is_deadlock(self.table)
        over = deadlock or self.table.round >= self.rounds
        observations = {agent: self._observe(self._seat[agent]) for agent in self.agents}
        infos = {
            agent: {"action": names[self._seat[agent]], "valid": valid[self._seat[agent]]} for agent in self.agents
        }
        reward = 0.0
        if over:
            outcome = EpisodeOutcome(
                n=self.n,
                rounds=self.rounds,
                mode=self.mode,
                meals=self.table.meals,
                deadlock=deadlock,
                think_actions=self._think_actions,
                actions_total=self._actions_total,
            )
            parts = score(outcome)
            reward = parts["reward"]
            summary = {**parts, "meals": self.table.meals, "deadlock": deadlock, "rounds_played": self.table.round}
            infos = {agent: {**info, **summary} for agent, info in infos.items()}
        rewards = dict.fromkeys(self.agents, reward)
        terminations = dict.fromkeys(self.agents, deadlock)
        truncations = dict.fromkeys(self.agents, over and not deadlock)
        if over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str:
        """One line: the round, who holds each fork ("-" when free), the meals so far."""
        forks = " ".join("-" if holder == FREE else str(holder) for holder in self.table.holder)
        meals = " ".join(map(str, self.table.meals))
        return f"round {self.table.round}/{self.rounds} forks {forks} meals {meals}" + (
            " deadlock" if is_deadlock(self.table) else ""
        )
