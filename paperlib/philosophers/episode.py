"""The episode runner: many episodes at once, one batched policy call per turn.

In ``simultaneous`` mode a turn is a whole round: every philosopher of every live
episode decides in one call. In ``sequential`` mode a turn is one seat: philosopher i
of every live episode decides on the table its predecessors left. A policy is any
object with ``act(turns) -> decisions`` (and optionally ``reset(seeds)``), or a plain
callable ``turns -> decisions``; a decision is a tool name, "none", or a ``Decision``
carrying what an LLM wrote. So a trainer collects rollouts through this same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd
from tqdm.auto import tqdm

from paperlib.philosophers import reward as rewards
from paperlib.philosophers.env import (
    ACTIONS,
    MODES,
    NO_ACTION,
    Observation,
    Table,
    act,
    initial_table,
    is_deadlock,
    observe,
    play_round,
)


@dataclass(frozen=True)
class Turn:
    """One philosopher about to act in one episode of the batch."""

    episode: int  # position in the batch
    seed: int  # that episode's seed
    observation: Observation
    table: Table  # the full state; scripted arbiters use it, LLM prompts use only the observation


@dataclass
class Decision:
    action: str
    raw_completion: str = ""
    prompt_version: str = ""
    prompt_hash: str = ""
    extra: dict = field(default_factory=dict)  # more step columns (token counts, scores...)


def _as_decision(value) -> Decision:
    decision = value if isinstance(value, Decision) else Decision(action=value)
    if decision.action not in ACTIONS:
        raise ValueError(f"policy returned {decision.action!r}; expected one of {', '.join(ACTIONS)}")
    return decision


def _decide(policy, turns: list[Turn]) -> list[Decision]:
    decide: Callable = policy.act if hasattr(policy, "act") else policy
    decisions = [_as_decision(d) for d in decide(turns)]
    if len(decisions) != len(turns):
        raise ValueError(f"policy returned {len(decisions)} decisions for {len(turns)} turns")
    return decisions


def episode_seeds(seed: int, episodes: int, first: int = 0) -> list[int]:
    """Episode e of a run with base seed S has seed S + e, so one episode reruns alone."""
    return [seed + e for e in range(first, first + episodes)]


def run_episodes(
    policy,
    n: int,
    rounds: int,
    seeds: Sequence[int],
    mode: str = "simultaneous",
    stop_on_deadlock: bool = True,
    labels: dict | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play one episode per seed, all at once; return (episode rows, step rows).

    ``labels`` (policy, model, profile, ...) are copied into every episode row.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    seeds = list(seeds)
    if hasattr(policy, "reset"):
        policy.reset(seeds)
    tables = [initial_table(n) for _ in seeds]
    deadlock_round: list[int | None] = [None] * len(seeds)
    steps: list[dict] = []
    seats = [list(range(n))] if mode == "simultaneous" else [[i] for i in range(n)]
    for rnd in tqdm(range(1, rounds + 1), desc=f"N={n} rounds", disable=not progress, leave=False):
        live = [e for e in range(len(seeds)) if deadlock_round[e] is None or not stop_on_deadlock]
        if not live:
            break
        round_decisions: dict[int, list[Decision]] = {e: [None] * n for e in live}
        round_valid: dict[int, list[bool]] = {e: [False] * n for e in live}
        for seat_group in seats:
            turns = [Turn(e, seeds[e], observe(tables[e], i), tables[e]) for e in live for i in seat_group]
            for turn, decision in zip(turns, _decide(policy, turns)):
                round_decisions[turn.episode][turn.observation.philosopher] = decision
            if mode == "sequential":
                (i,) = seat_group
                for e in live:
                    tables[e], round_valid[e][i] = act(tables[e], i, round_decisions[e][i].action)
        for e in live:
            decisions = round_decisions[e]
            if mode == "simultaneous":
                tables[e], valid = play_round(tables[e], [d.action for d in decisions], mode)
            else:
                tables[e], valid = replace(tables[e], round=rnd), round_valid[e]
            if deadlock_round[e] is None and is_deadlock(tables[e]):
                deadlock_round[e] = rnd
            for i, (decision, ok) in enumerate(zip(decisions, valid)):
                holds_left, holds_right = tables[e].holds(i)
                steps.append(
                    {
                        "episode": e,
                        "seed": seeds[e],
                        "seat": i,
                        "turn": rnd,
                        "action": decision.action,
                        "valid": ok,
                        "holds_left": holds_left,
                        "holds_right": holds_right,
                        "meals": tables[e].meals[i],
                        "raw_completion": decision.raw_completion,
                        "prompt_version": decision.prompt_version,
                        "prompt_hash": decision.prompt_hash,
                        **decision.extra,
                    }
                )
    step_frame = pd.DataFrame(steps)
    episode_rows = [
        _episode_row(e, seeds[e], tables[e], deadlock_round[e], step_frame, n, rounds, mode, labels or {})
        for e in range(len(seeds))
    ]
    return pd.DataFrame(episode_rows), step_frame


def _episode_row(e, seed, table, deadlock_round, steps, n, rounds, mode, labels) -> dict:
    mine = steps[steps["episode"] == e] if len(steps) else steps
    actions = mine["action"] if len(mine) else pd.Series([], dtype=str)
    called = actions != NO_ACTION
    counts = {
        "actions_total": int(called.sum()),
        "think_actions": int((actions == "think").sum()),
        "invalid_actions": int((called & ~mine["valid"].astype(bool)).sum()) if len(mine) else 0,
        "no_actions": int((~called).sum()),
    }
    outcome = rewards.EpisodeOutcome(
        n=n,
        rounds=rounds,
        mode=mode,
        meals=table.meals,
        deadlock=deadlock_round is not None,
        think_actions=counts["think_actions"],
        actions_total=counts["actions_total"],
    )
    return {
        **labels,
        "episode": e,
        "seed": seed,
        "n": n,
        "rounds": rounds,
        "mode": mode,
        "rounds_played": table.round,
        "deadlock": deadlock_round is not None,
        "deadlock_round": deadlock_round,
        "meals": list(table.meals),
        "meals_total": int(sum(table.meals)),
        **counts,
        **rewards.score(outcome),
    }
