"""What notebook 16 says about RLFT on tic-tac-toe (paper B, Sec. 4.5 and Fig. 9): each run's
training log and cost, the positive control (did the -5 penalty lower the held-out invalid-move
share), held-out returns before and after against each opponent, without the legal moves and at
each thinking budget beside paper B's, the CoT ablation, its figure and the claims rows B24-B28.
"""

from __future__ import annotations

import pandas as pd

from paperlib import plots
from paperlib.claims import claims_table, reported_numbers, source_name
from paperlib.reports import common
from paperlib.reports.before_after import change, cot_verdict, lowered, raised
from paperlib.tictactoe.training import OPPONENTS, Cell, TicTacToeSettings

# the training log's columns notebook 16 shows
LOG_COLUMNS = [
    "run",
    "step",
    "mean_return",
    "wins",
    "losses",
    "invalid_rate",
    "value_mean",
    "value_loss",
    "kl",
    "clip_fraction",
    "loss",
    "grad_norm",
    "completion_tokens",
    "rollout_logprob_gap",
    "seconds",
    "rollout_seconds",
    "reference_seconds",
    "forward_backward_seconds",
]


def cost_sentences(log: pd.DataFrame) -> str:
    """Each run's seconds per update and where they went, its decisions per update and peak memory."""
    return "\n".join(f"{name}: {common.update_cost(updates)}" for name, updates in log.groupby("run", sort=False))


def figure(log: pd.DataFrame, table: pd.DataFrame, reported: pd.DataFrame, runs: dict, budgets=(), seeds=None):
    """Paper B's Fig. 9 on our runs (``plots.tictactoe_rlft``): each run's cells against every
    opponent, and the main run's thinking budgets with CoT against random; ``seeds``: each
    training seed's table (``paperlib.reports.seeds.seed_parts``), marked beside the pooled means."""
    main = next(iter(runs.values()))
    cells = {name: [Cell(opponent).name(r) for opponent in OPPONENTS] for name, r in runs.items()}
    budget_cells = {b: Cell("random", cot=True, max_new_tokens=b).name(main) for b in budgets}
    return plots.tictactoe_rlft(log, table, reported, cells, budget_cells, seeds)


def _cell_row(table: pd.DataFrame, run: str, cell: str, adapter: str, metric: str = "return") -> pd.Series:
    rows = table[
        (table["run"] == run) & (table["cell"] == cell) & (table["adapter"] == adapter) & (table["metric"] == metric)
    ]
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
            + (
                "The trainer learns what the penalty asks for within this budget."
                if lowered(trained)
                else "The trainer did not lower it significantly within this budget: the returns below are not evidence "
                "about RLFT, and it would take more updates or games per update, or a larger learning rate."
            )
        )
    return "\n\n".join(lines)


def returns_sentence(table: pd.DataFrame, reported: pd.DataFrame, runs: dict, budgets=()) -> str:
    """Held-out returns before and after RLFT against each opponent, without the legal moves, and
    at each thinking budget, beside paper B's Gemma2 2B (B24-B28)."""
    paper = reported.set_index("id")["value"]
    lines = [
        f"Paper B (Gemma2 2B, all weights tuned, CoT): against random {paper['B24']} → {paper['B25']}, against "
        f"MCTS {paper['B26']} → {paper['B27']} after RLFT; {paper['B28']} after RLFT without the legal actions in "
        "the prompt; with 512 tokens to think, the 2B model reaches the 9B model after RLFT."
    ]
    for run, s in runs.items():
        cells = []
        for opponent in OPPONENTS:
            cell = Cell(opponent).name(s)
            base, trained = _cell_row(table, run, cell, "base"), _cell_row(table, run, cell, "RLFT")
            cells.append(f"against {opponent} {base['mean']:.2f} → {trained['mean']:.2f} ({change(trained)})")
        with_legal = _cell_row(table, run, Cell("random").name(s), "RLFT")
        without = _cell_row(table, run, Cell("random", legal_in_prompt=False).name(s), "RLFT")
        lines.append(
            f"Ours, {run} ({s.model}, a rank-{s.lora_rank} LoRA adapter after {s.updates} updates of "
            f"{s.games} games against {s.opponent}, {'CoT' if s.cot else 'no CoT'}): "
            + "; ".join(cells)
            + f". Without the legal moves in the prompt, the adapter's return against random is "
            f"{without['mean']:.2f} (with them {with_legal['mean']:.2f})."
        )
        invalid = _cell_row(table, run, Cell(s.opponent).name(s), "base", "invalid_share")["mean"]
        if invalid > 0.5:
            lines[-1] += (
                f" The base model's moves against {s.opponent} were {invalid:.0%} invalid, each played as a "
                "random legal move: its returns are mostly a random player's."
            )
        if budgets:
            by_budget = [
                f"{b} tokens {_cell_row(table, run, Cell('random', cot=True, max_new_tokens=b).name(s), 'base')['mean']:.2f}"
                f" / {_cell_row(table, run, Cell('random', cot=True, max_new_tokens=b).name(s), 'RLFT')['mean']:.2f}"
                for b in budgets
            ]
            lines.append(
                f"Thinking budget with CoT against random, {run} (base model / adapter): " + "; ".join(by_budget) + "."
            )
    lines.append(
        "The paper tunes every weight and reports LoRA insufficient; our adapters are LoRA at a CPU budget, "
        "so a change that does not appear here is not evidence against the paper."
    )
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
        lines.append(
            f"RLFT {'with' if s.cot else 'without'} CoT ({s.max_new_tokens} new tokens), held-out return "
            f"against {s.opponent}: {base['mean']:.2f} → {trained['mean']:.2f} ({change(trained)})."
        )
    updates = log[log["run"] == "CoT"].sort_values("step")
    first, last = (updates.iloc[i]["completion_tokens"] / updates.iloc[i]["decisions"] for i in (0, -1))
    lines[0] += (
        f" In training its completions averaged {first:.0f} tokens per decision at update "
        f"{updates['step'].iloc[0]} and {last:.0f} at update {updates['step'].iloc[-1]}, of "
        f"{runs['CoT'].max_new_tokens} allowed."
    )
    lines.append(
        "Paper B reports RLFT without CoT doing much worse than with it (Fig. 9b). "
        + cot_verdict("raises the return", gains["CoT"], gains["no CoT"])
    )
    return "\n\n".join(lines)


def tictactoe_claims_table(
    table: pd.DataFrame, episodes: pd.DataFrame, run: str, settings: TicTacToeSettings, source, profile: str
) -> pd.DataFrame:
    """Notebook 16's held-out returns of ``run`` in the claims schema: the base model's return
    against random and MCTS beside the paper's (B24, B26: its value within our 95% interval,
    a seeded bootstrap within [-1, 1]; a different model, said in the note), RLFT's gain against
    each (B25, B27: rule ``higher``), and the adapter's return without the legal moves against
    with them (B28: ``lower``) **[ours: the tests]**. The gains are differences of means on the
    games both sides played (the same seeds), tested paired (paired t, or Wilcoxon signed-rank;
    an adapter trained with several seeds, ``train_seed``, pooled per game seed). Every row is
    gated on the moves being the model's (``claims.OWN_DECISIONS``: the share of its moves that
    were valid; an invalid one is played by the random fallback), on each side it reads.
    ``episodes``: the held-out games, with ``run``."""
    from paperlib.claims import OWN_DECISIONS, effect, gated, seed_range
    from paperlib.stats import bootstrap_mean_ci, paired_sides, per_seed_differences, seeds_in_words

    paper = pd.to_numeric(reported_numbers()["value"], errors="coerce")
    who = f"{settings.model} (LoRA adapter, {'CoT' if settings.cot else 'no CoT'}, {profile})"
    games = episodes[episodes["run"] == run]

    def own(cell: str, adapter: str) -> str:
        mine = games[(games["cell"] == cell) & (games["adapter"] == adapter)]
        share = 1 - mine["invalid_moves"].sum() / mine["moves"].sum() if len(mine) else float("nan")
        return OWN_DECISIONS.check(float(share), f"{'base model' if adapter == 'base' else adapter}'s valid moves")

    def gain(cell_a, label_a, cell_b, label_b, names):
        a = games[(games["cell"] == cell_a) & (games["adapter"] == label_a)].assign(side="a")
        b = games[(games["cell"] == cell_b) & (games["adapter"] == label_b)].assign(side="b")
        both = pd.concat([a, b])
        treated, control = paired_sides(both, "side", "return", "a", "b", ["seed"])
        tested = effect(treated, control, paired=True, names=names)
        differences = per_seed_differences(both, "side", "return", "a", "b", ["seed"])
        seeds = seeds_in_words(differences)
        tested["size"] += f"; {seeds}" if seeds else ""
        fields = {key: tested[key] for key in ("ours", "ours_low", "ours_high", "p", "p_tost", "test")}
        gate = gated(own(cell_a, label_a), own(cell_b, label_b))
        return {**fields, **seed_range(differences), "gate": gate}, treated, control, tested

    rows = []
    for opponent, before, after in (("random", "B24", "B25"), ("mcts", "B26", "B27")):
        cell = Cell(opponent).name(settings)
        returns = games[(games["cell"] == cell) & (games["adapter"] == "base")].groupby("seed")["return"].mean()
        mean, low, high = bootstrap_mean_ci(returns)
        fields, trained, control, tested = gain(
            cell, "RLFT", cell, "base", ("adapter's returns", "base model's returns")
        )
        rows += [
            {
                "reported": before,
                "what": f"mean return against {opponent}, base model (held-out)",
                "model": settings.model,
                "ours": mean,
                "ours_low": low,
                "ours_high": high,
                "effect_if": f"{paper[before]:g} within our 95% interval",
                "rule": "value",
                "reference": paper[before],
                "gate": own(cell, "base"),
                "note": f"paper: Gemma2 2B; ours: {settings.model}, {len(returns)} games",
            },
            {
                "reported": after,
                "what": f"gain in mean return against {opponent}, RLFT minus the base model (held-out)",
                "model": who,
                **fields,
                "effect_if": "a significant gain (paired by game seed)",
                "rule": "higher",
                "note": f"paper: {paper[before]:g} to {paper[after]:g}; ours: base model {control.mean():.3f}, "
                f"RLFT {trained.mean():.3f}; {tested['size']}",
            },
        ]
    with_legal = Cell("random").name(settings)
    without = Cell("random", legal_in_prompt=False).name(settings)
    fields, trained, control, tested = gain(
        without, "RLFT", with_legal, "RLFT", ("returns without the legal moves", "returns with them")
    )
    rows.append(
        {
            "reported": "B28",
            "what": "mean return against random after RLFT, legal moves not in the prompt minus in it",
            "model": who,
            **fields,
            "effect_if": "a significant fall (paired by game seed)",
            "rule": "lower",
            "note": f"paper: {paper['B28']:g} without against {paper['B25']:g} with; ours: without "
            f"{trained.mean():.3f}, with {control.mean():.3f}; {tested['size']}",
        }
    )
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "16_tictactoe", profile)


def held_out_table(games: pd.DataFrame) -> pd.DataFrame:
    """The held-out games' table (``tictactoe.training.returns_table`` within run and cell): per
    training seed and on the seeds' mean per game (``paperlib.reports.seeds``: ``train_seed``
    "pooled", "0", ...) where a run's adapter played several seeds, a run of one seed (the CoT
    ablation) in every part; as before where every run has one."""
    from paperlib.reports.seeds import table_by_seed
    from paperlib.tictactoe.training import returns_table

    return table_by_seed(
        games, lambda rows: returns_table(rows, within=("run", "cell")), ("run", "cell", "adapter", "seed"), "run"
    )
