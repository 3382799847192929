"""Traces per seat: an episode's step rows as one trajectory per seat, the unit a trainer consumes.

An N-seat episode becomes N :class:`Trace` objects that share the episode's id and seed,
each with its own turns (prompt and completion token ids, the completion's
log-probability under the policy that generated it, and per token where the rows record
it) and the episode's reward and components (the reward is per episode in both papers, so
every seat of an episode carries the same one unless the caller passes per-seat rewards). A
bandit run or a tic-tac-toe game is the one-seat case.

The step rows are any game's, in the shared columns (``paperlib.llm.core.STEP_COLUMNS``
plus ``episode``, ``seed``, ``seat``, ``turn``). The prompt's token ids come from the
backend's ``encode`` of the recorded prompt text, which is exactly what the model was fed.

:meth:`Trace.packed` lays a multi-turn trajectory out as one sequence, the shape trl's
``rollout_func`` returns: the first prompt, then every completion followed by the next
turn's prompt, with a mask that is 1 on the model's tokens and 0 on the environment's
(trl's ``env_mask``; the environment's tokens are not trained on).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

KEY = ("episode", "seed")


@dataclass
class Trace:
    episode: int
    seed: int
    seat: int
    prompt_ids: list[list[int]]  # per turn, in turn order
    completion_ids: list[list[int]]
    completion_logprobs: list[float]
    reward: float
    components: dict[str, float] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)
    # per turn, each completion token's log-probability when sampled (None where not recorded)
    completion_token_logprobs: list[list[float] | None] = field(default_factory=list)

    def packed(self) -> tuple[list[int], list[int], list[int]]:
        """(prompt ids, completion ids, env mask): the first turn's prompt as the prompt; as
        the completion every turn's completion, each later turn's prompt between them; the
        mask 1 on completion tokens and 0 on those prompts."""
        completion, mask = [], []
        for turn, (prompt, answer) in enumerate(zip(self.prompt_ids, self.completion_ids)):
            if turn:
                completion += prompt
                mask += [0] * len(prompt)
            completion += answer
            mask += [1] * len(answer)
        return list(self.prompt_ids[0]) if self.prompt_ids else [], completion, mask


def seat_traces(
    steps: pd.DataFrame,
    episodes: pd.DataFrame,
    encode: Callable[[str], list[int]],
    reward: str = "reward",
    components: Sequence[str] = (),
) -> list[Trace]:
    """One :class:`Trace` per (episode, seat) of ``steps``, ordered by episode then seat.

    ``episodes`` holds one row per episode (its ``episode``, ``seed``, the ``reward`` column
    and the ``components`` columns); ``encode`` turns a recorded prompt into its token ids
    (``backend.encode``). A step with no prompt recorded cannot be traced: refused in one line.
    """
    missing = {"episode", "seed", "seat", "turn", "prompt", "completion_ids", "completion_logprob"} - set(steps)
    if missing:
        raise ValueError(f"step rows lack {', '.join(sorted(missing))}: they are not decision-core rows")
    if steps["prompt"].isna().any() or (steps["prompt"] == "").any():
        raise ValueError("some step rows have no prompt recorded (rows from before the decision core?)")
    outcome = episodes.set_index(list(KEY))
    cache: dict[str, list[int]] = {}
    traces = []
    for (episode, seed, seat), rows in steps.sort_values(["episode", "seat", "turn"]).groupby(
        ["episode", "seed", "seat"], sort=True
    ):
        if (episode, seed) not in outcome.index:
            raise ValueError(f"no episode row for episode {episode} (seed {seed})")
        row = outcome.loc[(episode, seed)]
        prompts = [cache.setdefault(p, encode(p)) for p in rows["prompt"]]
        traces.append(
            Trace(
                int(episode),
                int(seed),
                int(seat),
                prompts,
                [list(ids) for ids in rows["completion_ids"]],
                [float(x) for x in rows["completion_logprob"]],
                float(row[reward]),
                {name: float(row[name]) for name in components},
                [int(t) for t in rows["turn"]],
                [
                    None
                    if lps is None or isinstance(lps, float)
                    else [float(x) for x in lps]  # None, or NaN from a concat
                    for lps in rows.get("completion_token_logprobs", [None] * len(rows))
                ],
            )
        )
    return traces
