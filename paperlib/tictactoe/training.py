"""How tic-tac-toe plugs into paper B's RLFT loop (:mod:`paperlib.training.rlft.loop`, whose doc
has the protocol): the bandits' loop with a value head and GAE (paper B, Sec. 4.5 and Fig. 9),
and what notebook 16 plays after training.

Paper B fine-tunes Gemma2 against a scripted opponent with the same clipped objective and KL
penalty as on the bandits, the game's return (+1 / 0 / -1) as the reward, -5 for an output
with no legal move, and, for this game, a value head on the LLM with GAE as the baseline.
Here:

- Rollout: update u of a run with seed s plays ``games`` games (seeds
  ``TRAIN_SEEDS + s * TRAIN_STRIDE + (u - 1) * games`` onwards, disjoint from every held-out
  game) with :class:`~paperlib.tictactoe.llm.LLMAgent`, the agent of ``paperlib tictactoe run``,
  against ``opponent``, at the training temperature.
- Advantages: each move's reward is the game's return on its last move (0 before), plus
  ``penalty`` for an invalid move (:func:`~paperlib.training.rlft.objective.shaped_rewards`; the
  return is already on a unit scale, :data:`REWARD_MOMENTS`); the value head's V of each
  move's prompt; GAE (gamma 1, lambda 0.95), standardised; the value targets are the GAE
  returns (:func:`~paperlib.training.rlft.objective.gae_advantages`).
- Recipes: the profile's (``paperlib.profiles``: ``ttt_recipe``, and per CoT setting its new
  tokens and decisions per pass), one run per CoT setting of ``ttt_cot_runs``.
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

from paperlib.training import compare
from paperlib.training.held_out import play_adapters
from paperlib.training.rlft import GAE_GAMMA, GAE_LAMBDA, VALUE_COEF
from paperlib.training.rlft.loop import RLFTSettings, train
from paperlib.training.settings import at_least_one

HELD_OUT_SEEDS = 5_000_000  # held-out games: HELD_OUT_SEEDS + g, the same for every adapter and cell
TRAIN_SEEDS = 10_000_000  # training games, above every held-out seed
TRAIN_STRIDE = 1_000_000  # training games per run seed at most
MOVES = 5  # the agent moves first: at most five moves a game
OPPONENTS = ("random", "mcts", "noisy_mcts")  # tictactoe.opponents.PLAYERS, without loading open_spiel
REWARD_MOMENTS = (0.0, 1.0)  # [ours] +1 / 0 / -1 is already on a unit scale: left as is


@dataclass(frozen=True)
class TicTacToeSettings(RLFTSettings):
    """One RLFT run on tic-tac-toe: the shared settings (:class:`RLFTSettings`) and the game's."""

    opponent: str = "random"
    games: int = 16
    cot: bool = True
    legal_in_prompt: bool = True
    ppo_epochs: int = 2

    value_head = True
    episode_reward = "return"
    progress = ("invalid_rate", "mean_return")

    @property
    def batch_size(self) -> int:
        return self.games

    @property
    def shape(self) -> str:
        return f"{self.games} games against {self.opponent} ({'cot' if self.cot else 'no_cot'})"

    def game_seed(self, update: int) -> int:
        """The seed of update ``update``'s first game (its games have the next ``games`` seeds)."""
        return TRAIN_SEEDS + self.seed * TRAIN_STRIDE + (update - 1) * self.games

    def check(self) -> TicTacToeSettings:
        super().check()
        if self.opponent not in OPPONENTS:
            raise ValueError(f"unknown opponent {self.opponent!r}; choose one of {', '.join(OPPONENTS)}")
        at_least_one({"games": self.games})
        if self.updates * self.games > TRAIN_STRIDE:
            raise ValueError(
                f"{self.updates} updates of {self.games} games exceed the {TRAIN_STRIDE} training games a run seed has"
            )
        return self

    def rollout(self, backend, update: int, share=list) -> tuple[pd.DataFrame, pd.DataFrame]:
        from paperlib.tictactoe.llm import LLMAgent
        from paperlib.tictactoe.runner import run_games

        games = share(list(range(self.games)))  # this process's block (all of them, with one)
        agent = LLMAgent(
            backend,
            cot=self.cot,
            decision="free",
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            seed=self.sampling_seed(update),
            token_logprobs=True,  # PPO's old log-probabilities (rollout_old_logprobs)
        )
        return run_games(
            agent,
            self.opponent,
            len(games),
            self.game_seed(update) + games[0],
            self.legal_in_prompt,
            labels={"update": update},
        )

    def advantages(self, steps: pd.DataFrame, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        advantages, targets, arrays = advantages_of(steps, values, self)
        mask = arrays["mask"]
        returns = arrays["reward"].sum(axis=1)
        return (
            advantages[mask],
            targets[mask],
            {
                "mean_return": float(returns.mean()),
                "wins": float((returns > 0).mean()),
                "losses": float((returns < 0).mean()),
                "invalid_rate": float(1 - arrays["valid"][mask].mean()),
                "value_mean": float(values.mean()),
            },
        )

    def sources(self) -> dict[str, str]:
        return {**super().sources(), **SOURCES}

    def derived(self) -> dict[str, str]:
        return {
            "reward": f"+1 / 0 / -1, {self.penalty:g} if invalid",
            "baseline": "value head, GAE",
            "gae": f"gamma {GAE_GAMMA:g}, lambda {GAE_LAMBDA:g}",
            "value_head": f"value loss weight {VALUE_COEF:g}",
            **super().derived(),
        }


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
    "ppo_epochs": "paper (2 update epochs for tic-tac-toe)",
    "minibatch": "ours: the bandits' 128 (the paper gives tic-tac-toe's buffer, 2,048 steps, not its minibatch)",
    "gae": "ours: gamma and lambda (paperlib.training.rlft)",
    "value_head": "ours: linear on the last hidden state at the prompt's last token, zero-initialised, "
    "trained with the adapter (a shared trunk)",
}


def recipe(profile: str, cot: bool | None = None, **overrides) -> TicTacToeSettings:
    """The profile's RLFT recipe on tic-tac-toe (``Profile.ttt_recipe``: what it changes from the
    paper's defaults) with or without CoT (default: the profile's first run, ``ttt_cot_runs[0]``),
    thinking in its ``ttt_cot_tokens`` at ``ttt_cot_micro_batch`` decisions per pass, or writing
    the action in ``ttt_no_cot_tokens`` at ``ttt_no_cot_micro_batch``; with ``overrides`` (None
    values ignored), checked."""
    from paperlib.profiles import get_profile

    chosen = get_profile(profile)
    cot = chosen.ttt_cot_runs[0] if cot is None else cot
    tokens, micro_batch = (
        (chosen.ttt_cot_tokens, chosen.ttt_cot_micro_batch)
        if cot
        else (chosen.ttt_no_cot_tokens, chosen.ttt_no_cot_micro_batch)
    )
    return TicTacToeSettings.from_recipe(
        chosen.name,
        {**chosen.ttt_recipe, "cot": cot, "max_new_tokens": tokens, "micro_batch": micro_batch},
        **overrides,
    )


def recipes(profile: str, seed: int) -> dict[str, TicTacToeSettings]:
    """Notebook 16's RLFT runs, one per CoT setting of the profile (``ttt_cot_runs``, in its
    order), named "CoT" and "no CoT" (:func:`recipe`)."""
    from paperlib.profiles import get_profile

    return {"CoT" if cot else "no CoT": recipe(profile, cot, seed=seed) for cot in get_profile(profile).ttt_cot_runs}


# -- one update ---------------------------------------------------------------------------------
def step_arrays(steps: pd.DataFrame, values: np.ndarray) -> dict[str, np.ndarray]:
    """Step rows in (episode, turn) order and their values as (games x MOVES) arrays: reward,
    valid, value and the mask of moves that exist."""
    games = steps["episode"].to_numpy()
    index = np.unique(games, return_inverse=True)[1]
    column = steps["turn"].to_numpy() - 1
    arrays = {"mask": np.zeros((index.max() + 1, MOVES), dtype=bool)}
    arrays["mask"][index, column] = True
    for name, data in (
        ("reward", steps["reward"].to_numpy(float)),
        ("valid", steps["valid"].to_numpy(bool)),
        ("value", np.asarray(values, dtype=float)),
    ):
        arrays[name] = np.zeros(arrays["mask"].shape, dtype=data.dtype)
        arrays[name][index, column] = data
    return arrays


def advantages_of(
    steps: pd.DataFrame, values: np.ndarray, settings: TicTacToeSettings
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(advantage, value target, the arrays), games x moves: GAE on the shaped rewards."""
    from paperlib.training.rlft import objective

    arrays = step_arrays(steps, values)
    mean, scale = REWARD_MOMENTS
    shaped = objective.shaped_rewards(
        arrays["reward"], arrays["valid"], arrays["mask"], mean=mean, scale=scale, penalty=settings.penalty
    )
    advantages, targets = objective.gae_advantages(shaped, arrays["value"], arrays["mask"])
    return advantages, targets, arrays


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
        return (
            f"{self.opponent}/{'legal' if self.legal_in_prompt else 'no_legal'}/{'cot' if cot else 'no_cot'}/{tokens}"
        )


def evaluate(
    out, adapters: dict, cells: list[Cell], games: int, rollouts_dir=None, progress: bool = True, shared_base=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out games under each of ``adapters`` (label -> a saved update, or None for the base
    model) in each of ``cells``: ``games`` games with seeds ``HELD_OUT_SEEDS + g``, the same for
    every adapter and cell, at the run's evaluation temperature. One store per label and cell
    under ``rollouts_dir`` (default: the run's ``evaluation/``); a rerun plays only what is
    missing, and loads no model when nothing is (``paperlib.training.held_out.play_adapters``).
    Rows carry ``adapter``, ``update`` (0: base), ``adapter_hash``, ``cell`` and the cell's
    settings. With ``shared_base``, the base model's stores are kept there for every run of the
    model (a cell's name holds its prompt, CoT and budget; greedy play needs no seed), so a CoT
    run and its ablation, or three training seeds, play the base model's cells once."""
    from paperlib.tictactoe.llm import LLMAgent
    from paperlib.tictactoe.runner import run_games

    s = TicTacToeSettings.of_run(out)

    def play(backend, cell, labels, _store):
        agent = LLMAgent(
            backend,
            cot=s.cot if cell.cot is None else cell.cot,
            decision="free",
            temperature=s.eval_temperature,
            max_new_tokens=cell.max_new_tokens or s.max_new_tokens,
            seed=s.seed,
        )
        episodes, steps = run_games(agent, cell.opponent, games, HELD_OUT_SEEDS, cell.legal_in_prompt, labels=labels)
        if progress:
            print(
                f"{labels['adapter']} against {labels['cell']}: mean return {episodes['return'].mean():.2f} "
                f"over {games} games"
            )
        return episodes, steps

    return play_adapters(
        out,
        adapters,
        {cell.name(s): cell for cell in cells},
        rollouts_dir,
        play,
        size=games,
        max_batch=games,
        restore=lambda: train(s, out, progress=progress, replay=True),
        shared_base=shared_base,
        base_key={"eval_temperature": s.eval_temperature, "seed": s.seed if s.eval_temperature else None},
    )


def references(settings: TicTacToeSettings, cells: list[Cell], games: int, agents=OPPONENTS) -> pd.DataFrame:
    """The scripted players in the agent's seat on the held-out games of each cell's opponent,
    played once per opponent and labelled like an adapter's rows in every cell with that
    opponent (``adapter`` = the player; prompts mean nothing to it)."""
    from paperlib.tictactoe.agents import make_agent
    from paperlib.tictactoe.runner import run_games

    played = {
        (name, opponent): run_games(make_agent(name), opponent, games, HELD_OUT_SEEDS)[0]
        for name in agents
        for opponent in sorted({c.opponent for c in cells}, key=OPPONENTS.index)
    }
    return pd.concat(
        [
            played[name, cell.opponent].assign(adapter=name, update=0, adapter_hash="", cell=cell.name(settings))
            for name in agents
            for cell in cells
        ],
        ignore_index=True,
    )


METRICS = ("return", "invalid_share")


def returns_table(episodes: pd.DataFrame, base: str = "base", within=("cell",)) -> pd.DataFrame:
    """One row per adapter x cell (x the other keys of ``within``) x metric (the game's return;
    the share of the agent's moves that were invalid): mean and 95% CI, and against the base
    model in the same cell, :func:`paperlib.stats.against`'s columns (on the same games;
    ``paperlib.training.compare.before_after``)."""
    episodes = episodes.assign(invalid_share=episodes["invalid_moves"] / episodes["moves"])
    return compare.before_after(episodes, METRICS, base, within=within)


def evaluation_cells(settings: TicTacToeSettings, budgets=()) -> list[Cell]:
    """Notebook 16's cells for a run: every opponent with the run's prompt, random play without the
    legal moves listed (the paper's Fig. 21), and random play with CoT at each thinking budget
    (its Fig. 9c); a cell that two of these name is played once."""
    cells = [Cell(opponent) for opponent in OPPONENTS]
    cells += [Cell("random", legal_in_prompt=False)]
    cells += [Cell("random", cot=True, max_new_tokens=budget) for budget in budgets]
    return list({cell.name(settings): cell for cell in cells}.values())
