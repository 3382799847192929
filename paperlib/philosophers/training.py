"""How the dining philosophers plug into GRPO (:mod:`paperlib.training.grpo`, whose doc has the
protocol): paper A's GRPO recipe on the table's own episodes, and what notebooks 03, 04 and 06
play after training.

The recipe the paper states is the default (:class:`TableSettings`): N = 5, R = 5, 16 steps,
each step 2 groups of 3 episodes, every episode of a group from the same seed, advantages
relative within the group, LoRA rank 8, the last adapter kept. Everything it does not
state is a named setting with its value and source (ART's default, trl's, or ours): see
:data:`SOURCES` and ``paperlib.training.settings.settings_table``.

How episodes become trl's rows:

- The dataset holds one row per (seed, seat, turn) of every step, seed-major, unshuffled
  (``rows="turn"``), or one per (seed, seat) (``rows="seat"``); its ``prompt`` is the
  row's key as JSON. trl repeats each row G times (``num_generations`` = the group's
  size), so one step's batch is every seat and turn of ``groups`` seeds, G times over,
  and trl's groups of G consecutive rows are one seat (and turn) in the G episodes of one
  seed: advantages are relative within the group.
- :meth:`TableSettings.rollout` plays the step's episodes, G per seed, with the current
  policy: the trainer's own peft model behind the backend and
  :class:`~paperlib.philosophers.llm.LLMPolicy`, the same decision core, prompts, parser and
  backend the evaluation uses, at the training temperature. The step rows become traces per
  seat (:func:`~paperlib.llm.traces.seat_traces`), and the j-th repetition of a seed's row
  takes the j-th episode of that seed.
- ``rows="turn"`` (the default **[ours]**): a row is one decision, its prompt and the
  completion sampled from it, exactly what the policy saw. A turn an episode never
  reached (it deadlocked first) is a masked one-token row with no reward, which trl
  leaves out of its group's baseline. ``rows="seat"``: a row is a seat's whole
  trajectory packed into one sequence, every later turn's prompt masked out of the loss
  by ``env_mask``. The table's prompts carry no history (each turn's prompt is a fresh
  conversation of rules and observation), so in a packed row each later completion is
  scored after earlier turns it was not sampled with: an approximation, kept as a
  setting; it also costs about twice as much per step here (every later prompt is fed
  in full), and its rows carry no sampled log-probability, so no KL to the base model is
  measured.
- Each row carries its episode's outcome: the chosen reward of the episode goes to every
  seat and turn **[ours]**, as paper A's reward is per episode.

Rewards (``reward``): ``paper``, paper A's clipped reward; ``shaped``, its variant whose
no-deadlock credit needs a meal (``paperlib.philosophers.reward``); ``valid``, the share of
the episode's decisions that were valid actions, the positive control **[ours]**;
``shaped_penalty``, the shaped reward plus paper B's penalty for each invalid or missing call,
on paper A's scale (``paperlib.philosophers.reward.invalid_penalty``; notebook 05).

A curriculum over N (``curriculum``, paper A's third prescription; notebook 05) plays each
block of steps at its own N (:meth:`TableSettings.n_at`). trl takes a fixed number of rows per
step, so every step trains the rows of ``min(curriculum)`` seats per episode: all of them at
the smallest N, a sample drawn from the episode's seed at a larger one
(:meth:`TableSettings.trained_seats`). The other seats play (their episode needs them) but add
no row. Why rows are sampled rather than padded or grouped differently, and what it costs:
``SOURCES["curriculum"]``.

After training: :func:`play_adapters` plays held-out episodes of saved adapters,
:func:`validate` each trained step's validation episodes (checkpoint selection's ``best_val``),
:func:`compare_by_n` each adapter against the base model at each N, and
:func:`lens_of_last_adapter` notebook 06's knowing-doing lens on the last adapter.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass

import pandas as pd

from paperlib.philosophers.reward import invalid_penalty
from paperlib.training import compare
from paperlib.training.checkpoints import RunDir, each_adapter
from paperlib.training.grpo import GRPOSettings, train
from paperlib.training.held_out import play_adapters as play_held_out
from paperlib.training.settings import at_least_one

# reward name -> the episode column it reads
REWARDS = {
    "paper": "reward",
    "shaped": "reward_shaped",
    "valid": "valid_share",
    "shaped_penalty": "reward_shaped_penalty",
}
ROW_LAYOUTS = ("seat", "turn")
COMPONENTS = ("r_nd", "r_thru", "r_fair", "r_idle")
# Episode seeds of training runs start here [ours]: disjoint from the evaluation's (episode
# e of an evaluation has seed e, far below) and from validation's (VALIDATION_SEEDS).
TRAINING_SEEDS = 1_000_000
SEEDS_PER_RUN = 10_000  # training run with seed S draws its episode seeds from S * SEEDS_PER_RUN on
VALIDATION_SEEDS = 500_000


@dataclass(frozen=True)
class TableSettings(GRPOSettings):
    """One GRPO run on the table: the trainer's settings (:class:`GRPOSettings`) and the table's.
    Sources per field in :data:`SOURCES` and ``paperlib.training.grpo.SOURCES``."""

    reward: str = "paper"
    # -- the paper's recipe
    n: int = 5
    rounds: int = 5
    # -- not stated by the paper
    prompt: str = "options-v1"
    mode: str = "simultaneous"
    rows: str = "turn"
    val_episodes: int = 30  # validation episodes per trained step (checkpoint selection's best_val); 0: none
    # -- proposed by the paper, not run there (notebook 05): N per block of steps; empty: every step at n
    curriculum: tuple[int, ...] = ()

    progress = ("train_reward", "valid_share_mean")

    @property
    def row_seats(self) -> int:
        """Seats per episode that give rows: every seat, or the curriculum's smallest N (the module doc)."""
        return min(self.curriculum) if self.curriculum else self.n

    @property
    def row_count(self) -> int:
        """Rows of one step's batch: every trained seat (and turn) of every episode."""
        per_episode = self.row_seats * (self.rounds if self.rows == "turn" else 1)
        return per_episode * self.groups * self.group_size

    @property
    def batch_size(self) -> int:
        """Every philosopher of the step's episodes decides at once (at the largest N)."""
        return max(self.curriculum or (self.n,)) * self.groups * self.group_size

    @property
    def shape(self) -> str:
        table = f"N = {' → '.join(map(str, self.curriculum))}" if self.curriculum else f"N = {self.n}"
        return (
            f"{self.row_count} {self.rows} rows ({table}, R = {self.rounds}, {self.groups} groups of {self.group_size})"
        )

    def n_at(self, step: int) -> int:
        """The N of ``step`` (1-based): the curriculum's blocks of consecutive steps, as equal as
        possible, the longer ones first (16 steps over 5, 10, 15: 6, 5, 5); else ``n``."""
        if not self.curriculum:
            return self.n
        return self.curriculum[(step - 1) * len(self.curriculum) // self.steps]

    def trained_seats(self, seed: int, n: int) -> list[int]:
        """The seats of an episode with ``seed`` at ``n`` philosophers whose decisions are rows:
        all at ``row_seats`` philosophers, else ``row_seats`` of them drawn from the seed."""
        if n == self.row_seats:
            return list(range(n))
        return sorted(random.Random(seed).sample(range(n), self.row_seats))

    def labels(self) -> dict:
        return {"model": self.model, "reward": self.reward, "seed": self.seed, "profile": self.profile}

    def step_seeds(self, step: int) -> list[int]:
        """The episode seeds of ``step`` (1-based), one per group."""
        first = TRAINING_SEEDS + self.seed * SEEDS_PER_RUN + (step - 1) * self.groups
        return list(range(first, first + self.groups))

    def check(self) -> TableSettings:
        """Refuse, in one line, settings that cannot run (before any model loads)."""
        from paperlib.philosophers.env import MODES
        from paperlib.philosophers.prompts import get_prompt

        super().check()
        get_prompt(self.prompt)
        choices = {
            "reward": (self.reward, tuple(REWARDS)),
            "rows": (self.rows, ROW_LAYOUTS),
            "mode": (self.mode, MODES),
        }
        for name, (value, allowed) in choices.items():
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
        at_least_one({"rounds": self.rounds})
        if self.val_episodes < 0:
            raise ValueError(f"val_episodes must be zero (no validation) or more, got {self.val_episodes}")
        if min((self.n, *self.curriculum)) < 2:
            raise ValueError(f"a table needs at least 2 philosophers, got {min((self.n, *self.curriculum))}")
        if len(self.curriculum) > self.steps:
            raise ValueError(f"a curriculum of {len(self.curriculum)} tables needs as many steps, got {self.steps}")
        if self.groups * self.steps > SEEDS_PER_RUN:
            raise ValueError(f"at most {SEEDS_PER_RUN} episode seeds per run, got {self.groups * self.steps}")
        return self

    def sources(self) -> dict[str, str]:
        return {**super().sources(), **SOURCES}

    def derived(self) -> dict[str, str]:
        return {**super().derived(), "seat_reward": "episode"}

    def validate(self, backend, step: int, adapter_hash: str, run: RunDir) -> None:
        """Step ``step``'s validation episodes with ``backend`` (the trainer's policy, that step's
        adapter), into the store :func:`validate` reads: ``val_episodes`` at N, the same seeds and
        sampling seed for every step. Where the step before left the adapter as it was (a step
        without signal), its episodes are this step's, not played again: the same adapter, seeds
        and sampling seed play the same episodes."""
        from paperlib.data import RolloutStore

        if self.val_episodes:
            labels = {"adapter": f"step-{step}", "step": step, "adapter_hash": adapter_hash}
            store = RolloutStore(run.path / "validation" / f"step-{step}")
            before = _validated(run, step - 1, adapter_hash, self.val_episodes)
            if before is not None and store.episodes().empty:
                store.append(before.episodes().assign(adapter=labels["adapter"], step=step), before.steps())
                return
            _play(self, backend, [self.n], self.val_episodes, VALIDATION_SEEDS, None, labels, store, False)

    # -- the rollout
    def dataset_rows(self) -> list[str]:
        """The ``prompt`` column: every step's rows, seed-major (the module doc)."""
        rows = []
        for step in range(1, self.steps + 1):
            for seed in self.step_seeds(step):
                for seat in self.trained_seats(seed, self.n_at(step)):
                    if self.rows == "seat":
                        rows.append(json.dumps({"seed": seed, "seat": seat}))
                    else:
                        rows += [json.dumps({"seed": seed, "seat": seat, "turn": t}) for t in range(1, self.rounds + 1)]
        return rows

    def rollout(
        self, backend, prompts: list[str], step: int, tokenizer
    ) -> tuple[dict, pd.DataFrame, pd.DataFrame, dict]:
        """Play the step's episodes, G per seed, with ``backend`` and lay them out as the rows of
        ``prompts`` (the module doc)."""
        from paperlib.llm.traces import seat_traces
        from paperlib.philosophers.episode import run_episodes
        from paperlib.philosophers.llm import LLMPolicy

        keys = [json.loads(p) for p in prompts]
        seeds = list(dict.fromkeys(k["seed"] for k in keys))
        if seeds != self.step_seeds(step):
            raise RuntimeError(f"step {step} got the rows of seeds {seeds}, expected {self.step_seeds(step)}")
        policy = LLMPolicy(
            backend,
            prompt=self.prompt,
            decision="free",
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            seed=self.seed,
        )
        episodes, steps = run_episodes(
            policy,
            self.n_at(step),
            self.rounds,
            [x for x in seeds for _ in range(self.group_size)],
            mode=self.mode,
            labels={"model": self.model, "train_step": step},
        )
        episodes, steps = add_outcomes(episodes), steps.assign(train_step=step)
        column = REWARDS[self.reward]
        traces = {(t.episode, t.seat): t for t in seat_traces(steps, episodes, backend.encode, reward=column)}
        rows = {
            "prompt_ids": [],
            "completion_ids": [],
            "env_mask": [],
            "logprobs": None,
            "episode_reward": [],
            "policy_logprob": [],
        }
        seen: dict[tuple, int] = {}
        for key in keys:
            j = seen[tuple(key.items())] = seen.get(tuple(key.items()), -1) + 1
            trace = traces[(seeds.index(key["seed"]) * self.group_size + j, key["seat"])]
            logprob = None  # the sampled completion's log-probability, for the KL estimate (turn rows)
            if self.rows == "seat":
                prompt, completion, mask = trace.packed()
                reward = trace.reward
            elif key["turn"] in trace.turns:
                t = trace.turns.index(key["turn"])
                prompt, completion = trace.prompt_ids[t], trace.completion_ids[t]
                mask, reward, logprob = [1] * len(completion), trace.reward, trace.completion_logprobs[t]
            else:  # the episode ended before this turn
                prompt, completion, mask, reward = trace.prompt_ids[0], [tokenizer.eos_token_id], [0], None
            rows["prompt_ids"].append(list(prompt))
            rows["completion_ids"].append(list(completion))
            rows["env_mask"].append(mask)
            rows["episode_reward"].append(reward)
            rows["policy_logprob"].append(logprob)
        summary = {
            "train_reward": float(episodes[column].mean()),
            "n": self.n_at(step),
            "signal_share": signal_share(episodes, column),
        }
        return rows, episodes, steps, {**summary, **step_summary(episodes)}


SOURCES = {
    "n": "paper (N = 5)",
    "rounds": "paper (R = 5)",
    "prompt": "ours: the evaluation's default prompt version (cpu: rules-v1, the version notebook 02's probe "
    "chose for Qwen2.5-Coder-0.5B by its valid-call rate)",
    "mode": "ours: the evaluation's default turn order",
    "rows": "ours: a turn row is exactly what the policy sampled from; the table's prompts carry no history, so "
    "a packed seat row scores each completion after earlier turns it was not sampled with",
    "seat_reward": "ours: the episode's reward to every seat and turn",
    "val_episodes": "ours: held-out validation episodes per step for best_val (paper A proposes the rule, "
    "gives no size), played by each adapter at the next step's rollout while it is in memory",
    "curriculum": "paper A's third prescription (a curriculum over N), not run there; ours: the schedule, "
    "N = 5 → 10 → 15 in blocks of 6, 5, 5 of the 16 steps: the paper's training N first (the evaluation's "
    "easiest table, where the adapter learns to act), then its two larger ones, each for about a third of "
    "the updates. trl takes a fixed number of rows per step, so each step trains 5 seats' turns per "
    "episode (all at N = 5, 5 drawn from the episode's seed at N = 10 and 15), the recipe's 150 rows: the "
    "training passes cost what the recipe's do, and the rollout, a third of a cpu step, grows with N (about "
    "1.3x the recipe's step at N = 10, 1.7x at 15; 1.3x over the run). Rejected: masked padding rows up to "
    "N = 15's 450 (trl shuffles a step's rows across micro-batches and a micro-batch costs rows x its "
    "longest row, so a padding row costs a real one: 3x every step), and more groups at small N (30 "
    "episodes per step at N = 5 instead of 6: the curriculum's effect mixed with more data per step, 3x too)",
}


def recipe(profile: str, **overrides) -> TableSettings:
    """The profile's GRPO recipe on the table (``Profile.grpo_recipe``: what it changes from paper
    A's recipe) with ``overrides`` (None values ignored), checked."""
    from paperlib.profiles import get_profile

    chosen = get_profile(profile)
    return TableSettings.from_recipe(
        chosen.name, {"val_episodes": chosen.grpo_val_episodes, **chosen.grpo_recipe}, **overrides
    )


# -- episode outcomes ------------------------------------------------------------------
def add_outcomes(episodes: pd.DataFrame) -> pd.DataFrame:
    """Each episode's decisions, valid share (the positive control's reward), valid-call and
    invalid-action rates, from the runner's counts, and the shaped reward with paper B's penalty
    for each invalid or missing call (``reward_shaped_penalty``)."""
    decisions = episodes["actions_total"] + episodes["no_actions"]
    calls = episodes["actions_total"]
    failed = episodes["invalid_actions"] + episodes["no_actions"]
    return episodes.assign(
        decisions=decisions,
        valid_share=(calls - episodes["invalid_actions"]) / decisions,
        valid_call_rate=calls / decisions,
        invalid_action_rate=(episodes["invalid_actions"] / calls.where(calls > 0)),
        reward_shaped_penalty=episodes["reward_shaped"] + invalid_penalty(failed, episodes["n"], episodes["rounds"]),
    )


def signal_share(episodes: pd.DataFrame, column: str) -> float:
    """The share of a step's groups (its seeds, each played by G episodes) whose episodes do not all
    score the same under ``column``: the groups that give GRPO's relative advantage a signal."""
    return float((episodes.groupby("seed")[column].nunique() > 1).mean())


def step_summary(episodes: pd.DataFrame) -> dict:
    """A step's log columns from its episodes: mean and std of every reward and component,
    deadlock rate, meals, valid-call and invalid-action rates (pooled over decisions)."""
    row = {"episodes": len(episodes)}
    for column in (*REWARDS.values(), *COMPONENTS):
        row[f"{column}_mean"] = float(episodes[column].mean())
        row[f"{column}_std"] = float(episodes[column].std(ddof=0))
    calls = episodes["actions_total"].sum()
    row.update(
        deadlock_rate=float(episodes["deadlock"].mean()),
        meals=float(episodes["meals_total"].mean()),
        valid_call_rate=float(calls / episodes["decisions"].sum()),
        invalid_action_rate=float(episodes["invalid_actions"].sum() / calls) if calls else math.nan,
    )
    return row


# -- after training -------------------------------------------------------------------------------
def play_adapters(
    out,
    adapters: dict,
    ns,
    episodes: int,
    first_seed: int,
    rollouts_dir,
    seed: int | None = None,
    progress: bool = True,
    shared_base=None,
    max_batch: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episodes of the run in ``out`` under each of ``adapters`` (label -> a trained step, replayed
    when its checkpoint is not here, or None for the base model: the adapter disabled):
    ``episodes`` episodes at each N of ``ns``, episode e with seed ``first_seed + e`` under every
    adapter, played with the run's prompt, temperature, token budget, R and turn order, and the
    sampling seed ``seed`` (default: the run's). One resumable store per label under
    ``rollouts_dir`` (``paperlib.philosophers.evaluate``): a rerun plays only what is missing, and
    loads no model when nothing is. Rows carry ``adapter`` (the label), ``step`` (0: the base
    model) and ``adapter_hash`` (of the saved adapter file; "base"). With ``shared_base``, the base
    model's store is kept there for every run that plays it the same way (three training seeds
    evaluated with one sampling ``seed``), so it is played once. The backend generates up to
    ``max_batch`` decisions at once (None: its default); the draws depend on how rows are batched,
    so one evaluation plays every adapter with one ``max_batch``."""
    s = TableSettings.of_run(out)

    def play(backend, grid, labels, store):
        return _play(s, backend, grid, episodes, first_seed, seed, labels, store, progress)

    same_play = {
        "prompt": s.prompt,
        "temperature": s.temperature,
        "max_new_tokens": s.max_new_tokens,
        "rounds": s.rounds,
        "mode": s.mode,
        "seed": s.seed if seed is None else seed,
        "ns": list(ns),
        "episodes": episodes,
        "first_seed": first_seed,
        "max_batch": max_batch,
    }
    played, steps = play_held_out(
        out,
        adapters,
        {"": ns},
        rollouts_dir,
        play,
        size=len(ns) * episodes,
        resumes=True,
        restore=lambda: train(s, out, progress=progress, replay=True),
        step="step",
        max_batch=max_batch,
        shared_base=shared_base,
        base_key=same_play,
    )
    return add_outcomes(played), steps


def _validated(run: RunDir, step: int, adapter_hash: str, episodes: int):
    """Step ``step``'s validation store in ``run`` where it holds all ``episodes`` episodes of the
    adapter ``adapter_hash``; else None."""
    from paperlib.data import RolloutStore

    directory = run.path / "validation" / f"step-{step}"
    if step < 1 or not directory.is_dir():
        return None
    store = RolloutStore(directory)
    played = store.episodes()
    complete = len(played) == episodes and bool((played["adapter_hash"] == adapter_hash).all())
    return store if complete else None


def _play(s: TableSettings, backend, ns, episodes: int, first_seed: int, seed, labels: dict, store, progress: bool):
    """``episodes`` episodes at each N of ``ns`` with ``backend``, as run ``s`` plays held-out ones
    (:func:`play_adapters`), into (resuming) ``store``: (episodes, steps)."""
    from paperlib.philosophers.evaluate import evaluate
    from paperlib.philosophers.llm import LLMPolicy

    policy = LLMPolicy(
        backend,
        prompt=s.prompt,
        temperature=s.temperature,
        max_new_tokens=s.max_new_tokens,
        seed=s.seed if seed is None else seed,
    )
    return evaluate(
        s.model,
        ns,
        episodes,
        rounds=s.rounds,
        mode=s.mode,
        seed=first_seed,
        store=store,
        policy=policy,
        labels=labels,
        progress=progress,
    )


def validate(out, episodes: int | None = None, n: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Validation episodes for every trained step of the run in ``out`` (``best_val``'s table): at
    each step, ``episodes`` (default: the run's ``val_episodes``) episodes with seeds
    ``VALIDATION_SEEDS + e`` (disjoint from training's and from the evaluation's), the same seeds
    and sampling seed for every step, at the run's N (or ``n``) and R (:func:`play_adapters`). One
    row per episode, with its ``step``; kept under the run's ``validation/``, where training
    already played every step's but the last (:meth:`TableSettings.validate`), so this plays only
    what is missing, and loads no model when nothing is."""
    s, run = TableSettings.of_run(out), RunDir(out)
    steps = {f"step-{k}": k for k in run.recorded_steps()}
    if not steps:
        raise ValueError(f"{out} holds no trained step to validate")
    episodes = s.val_episodes if episodes is None else episodes
    at_least_one({"validation episodes": episodes})
    table, _ = play_adapters(
        out, steps, [n or s.n], episodes, VALIDATION_SEEDS, run.path / "validation", progress=progress
    )
    return table


def train_and_validate(settings: TableSettings, out, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``settings`` in ``out`` (resuming what it holds), validate its last step (training
    validated the others), and keep the adapters that checkpoint selection chooses under the
    paper's reward and the run's own (``RunDir.keep_adapters``: what a later session evaluates
    without replaying the run): (the training log, the validation table)."""
    from paperlib.training.selection import RULES, select

    log = train(settings, out, progress=progress)
    validation = validate(out, progress=progress)
    chosen = {
        select(rule, log, validation, column) for rule in RULES for column in {"reward", REWARDS[settings.reward]}
    }
    RunDir(out).keep_adapters(sorted(chosen))
    return log, validation


def compare_by_n(
    episodes: pd.DataFrame, column: str = "reward", baseline: str = "base", label: str = "selection"
) -> pd.DataFrame:
    """One row per (``label`` other than ``baseline``) x N of held-out episodes
    (``paperlib.training.compare.compare``): the adapter's ``step`` and ``episodes``, its and the
    base model's mean ``column`` with 95% intervals, and the difference, its p from Welch's test
    (Mann-Whitney's where neither side varies) and Hedges' g with its interval. Both sides must
    hold the same evaluation seeds at that N."""
    table = compare.compare(episodes, [column], label, within=("n",), carry=("step",), base=baseline)
    table = table[table[label] != baseline].reset_index(drop=True)
    columns = [
        label,
        "n",
        "step",
        "episodes",
        "mean",
        "ci_low",
        "ci_high",
        "base_mean",
        "base_ci_low",
        "base_ci_high",
        *compare.AGAINST,
    ]
    return table[[c for c in columns if c in table]]


def lens_of_last_adapter(out, profile, seed: int, rollouts_dir, progress: bool = True) -> pd.DataFrame | None:
    """Notebook 06's knowing-doing lens (``philosophers.knowing_doing.run_lens``) on the last
    adapter of the run in ``out`` (the one the paper keeps; replayed when its checkpoint is not
    here), for the lens model the run trained: its classified turns, labelled ``adapter`` =
    "GRPO step K"; None when the run has no trained step or trained no lens model of ``profile``."""
    from paperlib.backends.hf import HFBackend
    from paperlib.philosophers.knowing_doing import run_lens

    run = RunDir(out)
    if not run.config_path.exists() or not run.recorded_steps():
        return None
    s = TableSettings.of_run(out)
    if s.model not in {model for model, _ in profile.lens_models}:
        return None
    last = run.recorded_steps()[-1]
    if last not in run.steps_saved():
        train(s, out, progress=progress, replay=True)
    for label, _, model, tokenizer, _ in each_adapter(run, s.model, {f"GRPO step {last}": last}):
        backend = HFBackend(s.model, lm=model, tokenizer=tokenizer, max_batch=profile.gap_max_batch)
        return run_lens(profile, seed, rollouts_dir, adapter=label, progress=progress, backends={s.model: backend})
