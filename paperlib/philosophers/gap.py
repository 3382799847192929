"""Paper A's coordination gap (notebook 02): every model and scripted baseline × N, played,
and the tables the notebook writes.

:func:`run_gap` plays the grid of a profile (``paperlib.profiles``, the ``gap_*`` knobs):

1. the scripted baselines through the same harness (``policy:NAME``);
2. per model, one backend built once and reused: a valid-call probe of every prompt
   version (free mode, the smallest N of the grid, ``gap_probe_episodes`` episodes),
   then the prompt with the highest valid-call rate, a tie going to the version listed
   first **[ours: choosing a prompt by valid-call rate is fair, choosing it by reward is
   not]**, then the grid in each decision mode: ``free`` (the paper's protocol) and
   ``constrained`` **[ours]**, which needs a local backend.

Every LLM run goes through a ``RolloutStore`` under ``rollouts_dir``, so an interrupted
notebook resumes where it stopped.

The tables the notebook writes are computed here too: the main table (:func:`gap_table`),
the episodes without a call (:func:`no_call_effect`) and the valid-call rates
(:func:`call_rate_table`). What the notebook says about them (its sentences, claims and
display tables) is in ``paperlib.reports.n02_gap``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from paperlib.data import RolloutStore
from paperlib.philosophers.analysis import call_rates, summarise
from paperlib.philosophers.evaluate import evaluate

PROBE, GRID = "probe, smallest N", "grid, all N"  # the two kinds of rows of :func:`call_rate_table`


def run_gap(settings, seed: int, rollouts_dir, progress: bool = False, log=print) -> dict[str, pd.DataFrame]:
    """Play the profile's grid; returns ``episodes`` (every row, scripted and LLM),
    ``steps`` (LLM step rows of the grid), ``probe_steps`` and ``prompts`` (the chosen
    prompt version per model)."""
    from paperlib.backends import CAPABILITIES, make_backend
    from paperlib.philosophers.llm import make_llm_policy

    common = dict(rounds=settings.rounds, mode=settings.mode, seed=seed, progress=progress)
    episodes = [
        evaluate(f"policy:{name}", settings.gap_ns, settings.gap_episodes, labels={"decision": "scripted"}, **common)[0]
        for name in settings.gap_policies
    ]
    steps, probes, prompts = [], [], []
    for model, kind in settings.gap_models:
        options = {"max_batch": settings.gap_max_batch} if kind == "hf" else {}
        backend = make_backend(kind, model, **options)

        def run(ns, n_episodes, prompt, decision, run_name, model=model, backend=backend):
            policy = make_llm_policy(
                model,
                backend=backend,
                prompt=prompt,
                decision=decision,
                max_new_tokens=settings.gap_max_new_tokens,
                seed=seed,
            )
            store = RolloutStore(Path(rollouts_dir) / _slug(model) / run_name)
            return evaluate(model, ns, n_episodes, store=store, policy=policy, labels={"run": run_name}, **common)

        for prompt in settings.gap_prompts:
            probes.append(run(settings.gap_ns[:1], settings.gap_probe_episodes, prompt, "free", f"probe-{prompt}")[1])
        rates = call_rates(pd.concat(probes[-len(settings.gap_prompts) :], ignore_index=True))
        chosen = rates.sort_values("call_rate", ascending=False, kind="stable")["prompt_version"].iloc[0]
        prompts.append({"model": model, "backend": kind, "prompt_version": chosen})
        log(
            f"{model}: prompt {chosen} (valid-call rates {dict(zip(rates['prompt_version'], rates['call_rate'].round(3)))})"
        )
        for decision in settings.gap_decisions:
            if decision == "constrained" and (not CAPABILITIES[kind].scores or model in settings.gap_free_only):
                continue  # an HTTP endpoint does not score text; gap_free_only: the paper's protocol only
            ns = settings.gap_ns_of(model)
            ep, st = run(ns, settings.gap_llm_episodes, chosen, decision, f"{decision}-{chosen}")
            episodes.append(ep)
            steps.append(st)
            log(f"{model} {decision}: {len(ep)} episodes")
    return {
        "episodes": pd.concat(episodes, ignore_index=True),
        "steps": _concat(steps),
        "probe_steps": _concat(probes),
        "prompts": pd.DataFrame(prompts),
    }


def _slug(model: str) -> str:
    return re.sub(r"[^\w.-]+", "_", model)


def _concat(frames):
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def gap_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """Paper A's main table: per model, decision mode and N, mean reward (95% t CI),
    deadlock rate (Wilson CI), meals, and the share of episodes with zero meals."""
    return summarise(episodes, by=("model", "decision", "n"), rewards=("reward",))


def no_call_effect(episodes: pd.DataFrame) -> pd.DataFrame:
    """The paper's DeepSeek case in our rollouts: per LLM model, decision mode and N, how many
    episodes had no parseable call at all (every step "none") and their mean reward, against
    the episodes with at least one call; the scripted ``no_action`` policy for reference."""
    rows = []
    llm = episodes[(episodes["decision"] != "scripted") | (episodes["policy"] == "no_action")]
    for (model, decision, n), cell in llm.groupby(["model", "decision", "n"], sort=False):
        silent = cell["actions_total"] == 0
        rows.append(
            {
                "model": model,
                "decision": decision,
                "n": n,
                "episodes": len(cell),
                "no_call_episodes": int(silent.sum()),
                "no_action_share": cell["no_actions"].sum() / (cell["no_actions"] + cell["actions_total"]).sum(),
                "reward_no_call": cell.loc[silent, "reward"].mean(),
                "meals_no_call": cell.loc[silent, "meals_total"].mean(),
                "reward_with_calls": cell.loc[~silent, "reward"].mean(),
                "meals_with_calls": cell.loc[~silent, "meals_total"].mean(),
            }
        )
    return pd.DataFrame(rows)


def call_rate_table(probe_steps: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Valid-call rates (``analysis.call_rates``) per model and prompt version: in the probe
    for every version (``where`` = :data:`PROBE`) and over the grid for the chosen one
    (``where`` = :data:`GRID`)."""
    return pd.concat(
        [call_rates(probe_steps).assign(where=PROBE), call_rates(steps).assign(where=GRID)], ignore_index=True
    )
