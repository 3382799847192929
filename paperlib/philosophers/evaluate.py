"""The evaluation harness: any model or scripted policy, a grid of N, resumable.

``evaluate`` plays ``episodes`` episodes at each N and, given a ``RolloutStore``,
appends each finished batch to it and skips the episodes already there, so an
interrupted run resumes without redoing or duplicating an episode. Scripted
policies go through the same harness (``policy:NAME``), so every row has one shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from tqdm.auto import tqdm

from paperlib.data import RolloutStore
from paperlib.philosophers.episode import run_episodes

KEY = ["model", "n", "episode"]


def make_policy(model: str, **options):
    """``policy:NAME`` gives a scripted policy; anything else an LLM agent."""
    if model.startswith("policy:"):
        from paperlib.philosophers.scripted import make_scripted

        if options:
            raise ValueError(f"scripted policies take no agent options, got {', '.join(options)}")
        return make_scripted(model.removeprefix("policy:"))
    from paperlib.philosophers.llm import make_llm_policy

    return make_llm_policy(model, **options)


def evaluate(
    model: str,
    ns: Sequence[int],
    episodes: int,
    rounds: int = 5,
    mode: str = "simultaneous",
    seed: int = 0,
    store: RolloutStore | None = None,
    batch_episodes: int | None = None,
    labels: dict | None = None,
    progress: bool = True,
    policy=None,
    **agent_options,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play ``episodes`` episodes at each N; episode e has seed ``seed + e`` at every N.

    Returns every episode and step row of this (model, N) grid, including those a
    previous run left in ``store``. ``batch_episodes`` episodes play at once (all of
    them by default); each finished batch is written before the next starts.
    """
    policy = policy or make_policy(model, **agent_options)
    labels = {
        "model": model,
        "policy": model.removeprefix("policy:"),
        **getattr(policy, "labels", {}),
        **(labels or {}),
    }
    if store:
        _check_resumable(store, labels, rounds, mode, seed)
    done = store.finished(KEY) if store else set()
    batch = batch_episodes or episodes
    new_episodes, new_steps = [], []
    total = len(ns) * episodes
    with tqdm(total=total, desc=model, unit="episode", disable=not progress) as bar:
        for n in ns:
            todo = [e for e in range(episodes) if (model, n, e) not in done]
            bar.update(episodes - len(todo))
            for start in range(0, len(todo), batch):
                chunk = todo[start : start + batch]
                seeds = [seed + e for e in chunk]
                ep, st = run_episodes(
                    policy, n=n, rounds=rounds, seeds=seeds, mode=mode, labels=labels, progress=progress
                )
                ep["episode"] = chunk
                st["episode"] = st["episode"].map(dict(enumerate(chunk)))
                st.insert(0, "model", model)
                st.insert(1, "n", n)
                if store:
                    store.append(ep, st)
                new_episodes.append(ep)
                new_steps.append(st)
                bar.update(len(chunk))
    if store:
        ep_all, st_all = store.episodes(), store.steps()
        mine = (ep_all["model"] == model) & ep_all["n"].isin(ns) & (ep_all["episode"] < episodes)
        keys = ep_all.loc[mine, KEY]
        return ep_all[mine].reset_index(drop=True), st_all.merge(keys, on=KEY).reset_index(drop=True)
    return _concat(new_episodes), _concat(new_steps)


def _check_resumable(store: RolloutStore, labels: dict, rounds: int, mode: str, seed: int) -> None:
    """Refuse, in one line, to add to a store whose episodes of this model were played
    with other settings: resuming must not mix two runs in one table."""
    stored = store.episodes()
    if stored.empty:
        return
    mine = stored[stored["model"] == labels["model"]]
    expected = {**labels, "rounds": rounds, "mode": mode, "first_seed": seed}
    mine = mine.assign(first_seed=mine["seed"] - mine["episode"])
    for column, value in expected.items():
        if len(mine) and (column not in mine or (mine[column] != value).any()):
            found = mine[column].iloc[0] if column in mine else "unset"
            raise ValueError(
                f"{store.directory} holds {labels['model']} episodes with {column}={found}, "
                f"not {value}: resume with the same settings or write to another directory"
            )


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
