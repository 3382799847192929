"""RLFT on tic-tac-toe (paper B, Sec. 4.5 and Fig. 9): the bandits' loop with a value head and GAE.

Paper B fine-tunes Gemma2 against a scripted opponent with the same clipped objective and KL
penalty as on the bandits, the game's return (+1 / 0 / -1) as the reward, -5 for an output
with no legal move, and, for this game, a value head on the LLM with GAE as the baseline.
The loop is :mod:`paperlib.training.rlft_loop`'s; this module is the game's part:

- Rollout: update u of a run with seed s plays ``games`` games (seeds
  ``TRAIN_SEEDS + s * TRAIN_STRIDE + (u - 1) * games`` onwards, disjoint from every held-out
  game) with :class:`~paperlib.tictactoe.llm.LLMAgent`, the agent of ``paperlib tictactoe run``,
  against ``opponent``, at the training temperature.
- Advantages: each move's reward is the game's return on its last move (0 before), plus
  ``penalty`` for an invalid move (:func:`~paperlib.training.rlft.shaped_rewards`; the return
  is already on a unit scale, ``TICTACTOE_REWARD_MOMENTS``); the value head's V of each
  move's prompt; GAE (gamma 1, lambda 0.95), standardised; the value targets are the GAE
  returns (:func:`~paperlib.training.rlft.gae_advantages`).
- After training, :func:`evaluate` plays held-out games (seeds ``HELD_OUT_SEEDS`` onwards)
  of the base model and each saved adapter in every evaluation cell (opponent, legal moves
  in the prompt or not, CoT and thinking budget), at the evaluation temperature (the
  paper's 0), resumably; :func:`returns_table` gives each cell's mean return with its
  interval and the test against the base model.

The paper tunes every weight (LoRA was insufficient for it); ours is a LoRA adapter and the
notebook says so. Open choices are settings with their sources (:data:`SOURCES`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperlib.training.checkpoints import RunDir, from_preset
from paperlib.training.rlft_constants import GAE_GAMMA, GAE_LAMBDA, TICTACTOE_REWARD_MOMENTS
from paperlib.stats import ALPHA
from paperlib.training.rlft_loop import RLFTBase, before_after, change, cot_verdict, held_out, lowered, raised
from paperlib.training.rlft_loop import settings_table as loop_settings_table

HELD_OUT_SEEDS = 5_000_000  # held-out games: HELD_OUT_SEEDS + g, the same for every adapter and cell
TRAIN_SEEDS = 10_000_000  # training games, above every held-out seed
TRAIN_STRIDE = 1_000_000  # training games per run seed at most
MOVES = 5  # the agent moves first: at most five moves a game
OPPONENTS = ("random", "mcts", "noisy_mcts")  # tictactoe.opponents.PLAYERS, without loading open_spiel


@dataclass(frozen=True)
class TicTacToeSettings(RLFTBase):
    """One RLFT run on tic-tac-toe: the shared settings (:class:`RLFTBase`) and the game's."""

    opponent: str = "random"
    games: int = 16
    cot: bool = True
    legal_in_prompt: bool = True

    value_head = True

    @property
    def batch_size(self) -> int:
        return self.games

    @property
    def shape(self) -> str:
        return f"{self.games} games against {self.opponent} ({'cot' if self.cot else 'no_cot'})"

    def game_seed(self, update: int) -> int:
        """The seed of update ``update``'s first game (its games have the next ``games`` seeds)."""
        return TRAIN_SEEDS + self.seed * TRAIN_STRIDE + (update - 1) * self.games

    def check(self) -> "TicTacToeSettings":
        super().check()
        if self.opponent not in OPPONENTS:
            raise ValueError(f"unknown opponent {self.opponent!r}; choose one of {', '.join(OPPONENTS)}")
        if self.games < 1:
            raise ValueError(f"games must be at least 1, got {self.games}")
        if self.updates * self.games > TRAIN_STRIDE:
            raise ValueError(f"{self.updates} updates of {self.games} games exceed the {TRAIN_STRIDE} training games "
                             "a run seed has")
        return self

    def rollout(self, trainer, update: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        from paperlib.tictactoe.llm import LLMAgent
        from paperlib.tictactoe.runner import run_games

        agent = LLMAgent(trainer.backend, cot=self.cot, decision="free", temperature=self.temperature,
                         max_new_tokens=self.max_new_tokens, seed=self.sampling_seed(update))
        trainer.model.eval()
        return run_games(agent, self.opponent, self.games, self.game_seed(update), self.legal_in_prompt,
                         labels={"update": update})

    def advantages(self, steps: pd.DataFrame, trainer) -> tuple[np.ndarray, np.ndarray, dict]:
        values = trainer.values(steps)
        advantages, targets, arrays = advantages_of(steps, values, self)
        mask = arrays["mask"]
        returns = arrays["reward"].sum(axis=1)
        return advantages[mask], targets[mask], {
            "mean_return": float(returns.mean()), "wins": float((returns > 0).mean()),
            "losses": float((returns < 0).mean()), "invalid_rate": float(1 - arrays["valid"][mask].mean()),
            "value_mean": float(values.mean())}


def step_arrays(steps: pd.DataFrame, values: np.ndarray) -> dict[str, np.ndarray]:
    """Step rows in (episode, turn) order and their values as (games x MOVES) arrays: reward,
    valid, value and the mask of moves that exist."""
    games = steps["episode"].to_numpy()
    index = np.unique(games, return_inverse=True)[1]
    column = steps["turn"].to_numpy() - 1
    arrays = {"mask": np.zeros((index.max() + 1, MOVES), dtype=bool)}
    arrays["mask"][index, column] = True
    for name, data in (("reward", steps["reward"].to_numpy(float)), ("valid", steps["valid"].to_numpy(bool)),
                       ("value", np.asarray(values, dtype=float))):
        arrays[name] = np.zeros(arrays["mask"].shape, dtype=data.dtype)
        arrays[name][index, column] = data
    return arrays


def advantages_of(steps: pd.DataFrame, values: np.ndarray, settings: TicTacToeSettings
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(advantage, value target, the arrays), games x moves: GAE on the shaped rewards."""
    from paperlib.training import rlft

    arrays = step_arrays(steps, values)
    mean, scale = TICTACTOE_REWARD_MOMENTS
    shaped = rlft.shaped_rewards(arrays["reward"], arrays["valid"], arrays["mask"], mean=mean, scale=scale,
                                 penalty=settings.penalty)
    advantages, targets = rlft.gae_advantages(shaped, arrays["value"], arrays["mask"])
    return advantages, targets, arrays


SOURCES = {
    "updates": "ours: the budget of this profile (the paper does not give tic-tac-toe's)",
    "max_new_tokens": "paper (256 with CoT, 16 without)",
    "opponent": "ours: the paper trains against its opponents and reports after RLFT against random and MCTS; "
                "one run trains against one",
    "games": "ours: the bandits' 16 episodes per rollout (the paper gives no tic-tac-toe batch)",
    "cot": "paper (RLFT on the model's chain of thought; without it is its ablation)",
    "legal_in_prompt": "paper (legal actions listed by default)",
    "reward": "paper (+1 / 0 / -1, the game's return on its last move; -5 for an invalid move)",
    "baseline": "paper (a value head with GAE)",
    "gae": "ours: gamma and lambda (paperlib.training.rlft_constants)",
    "value_head": "ours: linear on the last hidden state at the prompt's last token, zero-initialised, "
                  "trained with the adapter (a shared trunk)",
}


def settings_table(settings: TicTacToeSettings) -> pd.DataFrame:
    """Every setting with its value and source: notebook 16's table."""
    from paperlib.training.rlft_constants import VALUE_COEF

    derived = {"reward": f"+1 / 0 / -1, {settings.penalty:g} if invalid", "baseline": "value head, GAE",
               "gae": f"gamma {GAE_GAMMA:g}, lambda {GAE_LAMBDA:g}", "value_head": f"value loss weight {VALUE_COEF:g}",
               "kl_estimator": "k3"}
    return loop_settings_table(settings, SOURCES, derived)


# Per-profile presets [ours]. cpu: Qwen2.5-Coder-0.5B without CoT (16 tokens), the model that
# writes ACTION= itself, against random play: the budget is updates x games x (at most 5) moves.
PRESETS = {
    "smoke": TicTacToeSettings(model="smollm2-135m", profile="smoke", updates=2, games=2, cot=False,
                               max_new_tokens=4),
    "cpu": TicTacToeSettings(model="qwen2.5-coder-0.5b", profile="cpu", updates=12, games=16, cot=False,
                             max_new_tokens=16, micro_batch=20),
    "paper": TicTacToeSettings(model="gemma2-2b", profile="paper", updates=2_000, micro_batch=16),
}


def settings_for(profile: str, **overrides) -> TicTacToeSettings:
    """The profile's preset with ``overrides`` (None values ignored), checked."""
    return from_preset(PRESETS, profile, **overrides)


def recipes(profile: str, seed: int) -> dict[str, TicTacToeSettings]:
    """Notebook 16's RLFT runs, one per CoT setting of the profile (``ttt_cot_runs``, in its
    order), named "CoT" and "no CoT": the profile's preset with its CoT set. A run with CoT
    thinks in the profile's ``ttt_cot_tokens`` at its ``ttt_cot_micro_batch`` decisions per pass
    (0: the preset's); one without keeps the preset's tokens if the preset has no CoT, else
    writes its action in the paper's 16."""
    from paperlib.profiles import get_profile
    from paperlib.tictactoe.prompts import MAX_NEW_TOKENS

    chosen = get_profile(profile)

    def recipe(cot: bool) -> TicTacToeSettings:
        if cot:
            return settings_for(profile, seed=seed, cot=True, max_new_tokens=chosen.ttt_cot_tokens,
                                micro_batch=chosen.ttt_cot_micro_batch or None)
        return settings_for(profile, seed=seed, cot=False,
                            max_new_tokens=MAX_NEW_TOKENS["no_cot"] if PRESETS[profile].cot else None)

    return {"CoT" if cot else "no CoT": recipe(cot) for cot in chosen.ttt_cot_runs}


# -- after training -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One evaluation condition: the opponent, whether the prompt lists the legal moves, CoT and
    the thinking budget (None: the run's)."""

    opponent: str
    legal_in_prompt: bool = True
    cot: bool | None = None
    max_new_tokens: int | None = None

    def name(self, settings: TicTacToeSettings) -> str:
        cot = settings.cot if self.cot is None else self.cot
        tokens = self.max_new_tokens or settings.max_new_tokens
        return f"{self.opponent}/{'legal' if self.legal_in_prompt else 'no_legal'}/{'cot' if cot else 'no_cot'}/{tokens}"


def evaluate(out, adapters: dict, cells: list[Cell], games: int, rollouts_dir=None, progress: bool = True
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out games under each of ``adapters`` (label -> a saved update, or None for the base
    model) in each of ``cells``: ``games`` games with seeds ``HELD_OUT_SEEDS + g``, the same for
    every adapter and cell, at the run's evaluation temperature. One store per label and cell
    under ``rollouts_dir`` (default: the run's ``evaluation/``); a rerun plays only what is
    missing, and loads no model when nothing is. Rows carry ``adapter``, ``update`` (0: base),
    ``adapter_hash``, ``cell`` and the cell's settings."""
    from paperlib.tictactoe.llm import LLMAgent
    from paperlib.tictactoe.runner import run_games

    s = TicTacToeSettings.of_run(out)

    def play(backend, cell, labels):
        agent = LLMAgent(backend, cot=s.cot if cell.cot is None else cell.cot, decision="free",
                         temperature=s.eval_temperature, max_new_tokens=cell.max_new_tokens or s.max_new_tokens,
                         seed=s.seed)
        episodes, steps = run_games(agent, cell.opponent, games, HELD_OUT_SEEDS, cell.legal_in_prompt, labels=labels)
        if progress:
            print(f"{labels['adapter']} against {labels['cell']}: mean return {episodes['return'].mean():.2f} "
                  f"over {games} games")
        return episodes, steps

    directory = rollouts_dir if rollouts_dir is not None else RunDir(out).path / "evaluation"
    return held_out(out, adapters, {cell.name(s): cell for cell in cells}, games, directory, play)


def references(settings: TicTacToeSettings, cells: list[Cell], games: int, agents=OPPONENTS) -> pd.DataFrame:
    """The scripted players in the agent's seat on the held-out games of each cell's opponent,
    played once per opponent and labelled like an adapter's rows in every cell with that
    opponent (``adapter`` = the player; prompts mean nothing to it)."""
    from paperlib.tictactoe.agents import make_agent
    from paperlib.tictactoe.runner import run_games

    played = {(name, opponent): run_games(make_agent(name), opponent, games, HELD_OUT_SEEDS)[0]
              for name in agents for opponent in sorted({c.opponent for c in cells}, key=OPPONENTS.index)}
    return pd.concat([played[name, cell.opponent].assign(adapter=name, update=0, adapter_hash="", cell=cell.name(settings))
                      for name in agents for cell in cells], ignore_index=True)

METRICS = ("return", "invalid_share")


def returns_table(episodes: pd.DataFrame, base: str = "base", within=("cell",)) -> pd.DataFrame:
    """One row per adapter x cell (x the other keys of ``within``) x metric (the game's return;
    the share of the agent's moves that were invalid): mean and 95% CI, and against the base
    model in the same cell, :func:`paperlib.stats.against`'s columns (on the same games)."""
    episodes = episodes.assign(invalid_share=episodes["invalid_moves"] / episodes["moves"])
    return before_after(episodes, METRICS, base, within=within)


def evaluation_cells(settings: TicTacToeSettings, budgets=()) -> list[Cell]:
    """Notebook 16's cells for a run: every opponent with the run's prompt, random play without the
    legal moves listed (the paper's Fig. 21), and random play with CoT at each thinking budget
    (its Fig. 9c); a cell that two of these name is played once."""
    cells = [Cell(opponent) for opponent in OPPONENTS]
    cells += [Cell("random", legal_in_prompt=False)]
    cells += [Cell("random", cot=True, max_new_tokens=budget) for budget in budgets]
    return list({cell.name(settings): cell for cell in cells}.values())


def _cell_row(table: pd.DataFrame, run: str, cell: str, adapter: str, metric: str = "return") -> pd.Series:
    rows = table[(table["run"] == run) & (table["cell"] == cell) & (table["adapter"] == adapter)
                 & (table["metric"] == metric)]
    if len(rows) != 1:
        raise ValueError(f"no single {metric} row of {adapter!r} in run {run!r}, cell {cell!r}")
    return rows.iloc[0]


def control_sentence(table: pd.DataFrame, runs: dict) -> str:
    """The positive control of each run (``runs``: name -> settings): did the -5 penalty lower the
    invalid-move share against its training opponent on held-out games?"""
    lines = []
    for run, settings in runs.items():
        cell = Cell(settings.opponent).name(settings)
        base, trained = (_cell_row(table, run, cell, label, "invalid_share") for label in ("base", "RLFT"))
        lines.append(
            f"Positive control, {run}: the held-out invalid-move share against {settings.opponent} went from "
            f"{base['mean']:.3f} [{base['ci_low']:.3f}, {base['ci_high']:.3f}] to {trained['mean']:.3f} "
            f"[{trained['ci_low']:.3f}, {trained['ci_high']:.3f}] over {int(trained['n'])} games ({change(trained)}). "
            + ("The trainer learns what the penalty asks for within this budget." if lowered(trained) else
               "The trainer did not lower it significantly within this budget: the returns below are not evidence "
               "about RLFT, and it would take more updates or games per update, or a larger learning rate."))
    return "\n\n".join(lines)


def returns_sentence(table: pd.DataFrame, reported: pd.DataFrame, runs: dict, budgets=()) -> str:
    """Held-out returns before and after RLFT against each opponent, without the legal moves, and
    at each thinking budget, beside paper B's Gemma2 2B (B24-B28)."""
    paper = reported.set_index("id")["value"]
    lines = [f"Paper B (Gemma2 2B, all weights tuned, CoT): against random {paper['B24']} → {paper['B25']}, against "
             f"MCTS {paper['B26']} → {paper['B27']} after RLFT; {paper['B28']} after RLFT without the legal actions in "
             "the prompt; with 512 tokens to think, the 2B model reaches the 9B model after RLFT."]
    for run, s in runs.items():
        cells = []
        for opponent in OPPONENTS:
            cell = Cell(opponent).name(s)
            base, trained = _cell_row(table, run, cell, "base"), _cell_row(table, run, cell, "RLFT")
            cells.append(f"against {opponent} {base['mean']:.2f} → {trained['mean']:.2f} ({change(trained)})")
        with_legal = _cell_row(table, run, Cell("random").name(s), "RLFT")
        without = _cell_row(table, run, Cell("random", legal_in_prompt=False).name(s), "RLFT")
        lines.append(f"Ours, {run} ({s.model}, a rank-{s.lora_rank} LoRA adapter after {s.updates} updates of "
                     f"{s.games} games against {s.opponent}, {'CoT' if s.cot else 'no CoT'}): " + "; ".join(cells)
                     + f". Without the legal moves in the prompt, the adapter's return against random is "
                     f"{without['mean']:.2f} (with them {with_legal['mean']:.2f}).")
        invalid = _cell_row(table, run, Cell(s.opponent).name(s), "base", "invalid_share")["mean"]
        if invalid > 0.5:
            lines[-1] += (f" The base model's moves against {s.opponent} were {invalid:.0%} invalid, each played as a "
                          "random legal move: its returns are mostly a random player's.")
        if budgets:
            by_budget = [f"{b} tokens {_cell_row(table, run, Cell('random', cot=True, max_new_tokens=b).name(s), 'base')['mean']:.2f}"
                         f" / {_cell_row(table, run, Cell('random', cot=True, max_new_tokens=b).name(s), 'RLFT')['mean']:.2f}"
                         for b in budgets]
            lines.append(f"Thinking budget with CoT against random, {run} (base model / adapter): "
                         + "; ".join(by_budget) + ".")
    lines.append("The paper tunes every weight and reports LoRA insufficient; our adapters are LoRA at a CPU budget, "
                 "so a change that does not appear here is not evidence against the paper.")
    return "\n\n".join(lines)


def cot_sentence(table: pd.DataFrame, log: pd.DataFrame, runs: dict) -> str:
    """The CoT ablation (paper B, Fig. 9b) from the runs named "CoT" and "no CoT" in ``runs``:
    each one's return against its training opponent, base model → adapter in its own cell, and
    whether ours show the paper's direction (RLFT raising the return significantly with CoT and
    not without it); and how long the CoT run's completions were per decision at its first and
    last update (``log``: the training log with ``run``), since a run can learn to stop thinking."""
    gains, lines = {}, []
    for run in ("CoT", "no CoT"):
        s = runs[run]
        cell = Cell(s.opponent).name(s)
        base, trained = _cell_row(table, run, cell, "base"), _cell_row(table, run, cell, "RLFT")
        gains[run] = raised(trained)
        lines.append(f"RLFT {'with' if s.cot else 'without'} CoT ({s.max_new_tokens} new tokens), held-out return "
                     f"against {s.opponent}: {base['mean']:.2f} → {trained['mean']:.2f} ({change(trained)}).")
    updates = log[log["run"] == "CoT"].sort_values("step")
    first, last = (updates.iloc[i]["completion_tokens"] / updates.iloc[i]["decisions"] for i in (0, -1))
    lines[0] += (f" In training its completions averaged {first:.0f} tokens per decision at update "
                 f"{updates['step'].iloc[0]} and {last:.0f} at update {updates['step'].iloc[-1]}, of "
                 f"{runs['CoT'].max_new_tokens} allowed.")
    lines.append("Paper B reports RLFT without CoT doing much worse than with it (Fig. 9b). "
                 + cot_verdict("raises the return", gains["CoT"], gains["no CoT"]))
    return "\n\n".join(lines)


def tictactoe_claims_table(table: pd.DataFrame, episodes: pd.DataFrame, run: str, settings: TicTacToeSettings,
                           source, profile: str) -> pd.DataFrame:
    """Notebook 16's held-out returns of ``run`` in the claims schema: the base model's return
    against random and MCTS beside the paper's (B24, B26: its value within our 95% interval;
    a different model, said in the note), RLFT's gain against each (B25, B27: significant at
    ALPHA, Welch), and its return without the legal moves against with them (B28: significantly
    lower) **[ours: the tests]**. ``episodes``: the held-out games, with ``run``."""
    from paperlib.claims import claims_table, reported_numbers, source_name
    from paperlib.stats import welch

    paper = pd.to_numeric(reported_numbers()["value"], errors="coerce")
    who = f"{settings.model} (LoRA adapter, {'CoT' if settings.cot else 'no CoT'}, {profile})"
    rows = []
    for opponent, before, after in (("random", "B24", "B25"), ("mcts", "B26", "B27")):
        cell = Cell(opponent).name(settings)
        base, trained = _cell_row(table, run, cell, "base"), _cell_row(table, run, cell, "RLFT")
        rows += [
            {"reported": before, "what": f"mean return against {opponent}, base model (held-out)",
             "model": settings.model, "ours": base["mean"], "ours_low": base["ci_low"], "ours_high": base["ci_high"],
             "effect_if": f"{paper[before]:g} within our 95% interval",
             "shown": base["ci_low"] <= paper[before] <= base["ci_high"],
             "note": f"paper: Gemma2 2B; ours: {settings.model}, {int(base['n'])} games"},
            {"reported": after, "what": f"mean return against {opponent} after RLFT (held-out)", "model": who,
             "ours": trained["mean"], "ours_low": trained["ci_low"], "ours_high": trained["ci_high"],
             "effect_if": "significantly above the base model's (Welch p < 0.05)",
             "shown": trained["difference"] > 0 and trained["p"] < ALPHA,
             "note": f"base model {base['mean']:.3f}; p = {trained['p']:.2g}, Hedges' g = {trained['g']:.2f}"}]
    with_legal = _cell_row(table, run, Cell("random").name(settings), "RLFT")
    without = _cell_row(table, run, Cell("random", legal_in_prompt=False).name(settings), "RLFT")
    games = episodes[(episodes["run"] == run) & (episodes["adapter"] == "RLFT")]
    _, p = welch(games.loc[games["cell"] == without["cell"], "return"], games.loc[games["cell"] == with_legal["cell"], "return"])
    rows.append({"reported": "B28", "what": "mean return against random after RLFT, legal moves not in the prompt",
                 "model": who, "ours": without["mean"], "ours_low": without["ci_low"], "ours_high": without["ci_high"],
                 "effect_if": "significantly below the adapter's return with them (Welch p < 0.05)",
                 "shown": without["mean"] < with_legal["mean"] and p < ALPHA,
                 "note": f"with the legal moves {with_legal['mean']:.3f}; p = {p:.2g}"})
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "16_tictactoe", profile)
