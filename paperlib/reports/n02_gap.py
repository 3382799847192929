"""Notebook 02 (paper A's coordination gap): what it says about the runs of
``philosophers.gap.run_gap``.

The tables it shows beside the data files: the paper's reported numbers per N
(:func:`paper_rows`, for the figure and the sentences), what each LLM model does per decision
mode (:func:`behaviour`) and its commonest actions (:func:`action_shares`); its closing
paragraph (:func:`what_this_shows`), every sentence that states a result computed from the run;
and the paper's main-table numbers (A01-A07, A13) in the claims schema (:func:`gap_claims_table`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paperlib.philosophers.env import NO_ACTION
from paperlib.philosophers.gap import GRID, PROBE

QWEN_FAMILY = "qwen"  # a model whose name starts with this is set beside the paper's Qwen3-14B


def paper_rows(reported: pd.DataFrame) -> pd.DataFrame:
    """Paper A's reported mean rewards and deadlock rates (``data/paper_reported.csv``), one
    row per (number, N): a span like "10-15" becomes one row per N of the grid."""
    rows = []
    main = reported[(reported["paper"] == "A") & reported["claim"].str.contains("mean reward|deadlock rate")]
    for row in main.itertuples():
        span = str(row.n_philosophers_or_arms)
        ns = tuple(n for n in (5, 10, 15) if _in_span(n, span))
        value = pd.to_numeric(row.value, errors="coerce")
        for n in ns:
            rows.append(
                {
                    "id": row.id,
                    "claim": row.claim,
                    "n": n,
                    "value": value,
                    "low": row.low,
                    "high": row.high,
                    "source": row.source,
                }
            )
    return pd.DataFrame(rows)


def _in_span(n: int, span: str) -> bool:
    low, _, high = span.partition("-")
    return int(low) <= n <= int(high or low)


def behaviour(episodes: pd.DataFrame) -> pd.DataFrame:
    """What each LLM model does per decision mode, over every N of the grid.

    ``completions``: one per philosopher and round played; ``calls``: those holding a
    parseable call, ``call_rate`` = calls / completions (constrained mode always names a
    tool); ``valid_rate`` = valid actions / completions; ``invalid_rate`` = invalid actions
    / calls (an action that cannot succeed has no effect); ``meals`` per episode;
    ``with_meals``: episodes with at least one meal; mean ``reward``; ``degenerate``:
    episodes at the reward's maximum 1.0 with zero meals (the paper's DeepSeek case)."""
    rows = []
    llm = episodes[episodes["decision"] != "scripted"]
    for (model, decision), cell in llm.groupby(["model", "decision"], sort=False):
        calls, invalid = int(cell["actions_total"].sum()), int(cell["invalid_actions"].sum())
        completions = calls + int(cell["no_actions"].sum())
        rows.append(
            {
                "model": model,
                "decision": decision,
                "episodes": len(cell),
                "completions": completions,
                "calls": calls,
                "call_rate": calls / completions,
                "valid_actions": calls - invalid,
                "valid_rate": (calls - invalid) / completions,
                "invalid_rate": invalid / calls if calls else np.nan,
                "meals": cell["meals_total"].mean(),
                "with_meals": int((cell["meals_total"] > 0).sum()),
                "reward": cell["reward"].mean(),
                "degenerate": int(((cell["meals_total"] == 0) & np.isclose(cell["reward"], 1.0)).sum()),
            }
        )
    return pd.DataFrame(rows)


def action_shares(steps: pd.DataFrame, decision: str) -> pd.DataFrame:
    """Share of each action among a model's steps in one decision mode: rows ``model``,
    ``action``, ``share``, most common first within each model."""
    mine = steps[steps["decision_mode"] == decision]
    return mine.groupby("model", sort=False)["action"].value_counts(normalize=True).rename("share").reset_index()


def what_this_shows(
    table: pd.DataFrame, episodes: pd.DataFrame, steps: pd.DataFrame, rates: pd.DataFrame, paper: pd.DataFrame
) -> str:
    """Notebook 02's closing paragraph, as Markdown, every number computed from the run:
    ``table`` (``gap.gap_table``), ``episodes`` and ``steps`` (``gap.run_gap``), ``rates``
    (``gap.call_rate_table``) and ``paper`` (:func:`paper_rows`).

    One bullet per decision mode (each model's call and action rates, reward, deadlock
    rate and meals by N, whether free mode sits at the degenerate maximum, the commonest
    constrained actions), one per Qwen-family model (valid-call rate, invalid-action rate,
    meals, beside the paper's Qwen3-14B), and one against the paper: whether our models
    show a coordination gap of the paper's shape at N = 5, and how the scripted baselines
    that eat compare with ``no_action``."""
    summary = behaviour(episodes)
    free, constrained = (summary[summary["decision"] == d] for d in ("free", "constrained"))
    sentences = [_free_sentence(row, _cells(table, row), rates, paper) for row in free.itertuples()]
    bullets = ["- *Free mode, the paper's protocol.* " + (" ".join(sentences) or "No model plays it in this run.")]
    shares = action_shares(steps, "constrained")
    sentences = [
        _constrained_sentence(
            row,
            _cells(table, row),
            shares[shares["model"] == row.model],
            episodes[(episodes["model"] == row.model) & (episodes["decision"] == "constrained")],
        )
        for row in constrained.itertuples()
    ]
    only_free = [m for m in free["model"] if m not in set(constrained["model"])]
    if sentences and only_free:
        sentences.append(f"{_models(only_free)} {'plays' if len(only_free) == 1 else 'play'} free mode only.")
    bullets.append("- *Constrained mode, ours.* " + (" ".join(sentences) or "No model plays it in this run."))
    for row in free[free["model"].str.lower().str.startswith(QWEN_FAMILY)].itertuples():
        bullets.append("- *The Qwen-family model.* " + _qwen_sentence(row, _cells(table, row), steps, paper))
    bullets.append(
        "- *Against the paper.* " + " ".join(filter(None, (_paper_sentence(table, paper), _scripted_sentence(table))))
    )
    return "**What this shows** (computed from this run's tables).\n\n" + "\n".join(bullets)


def _cells(table, row):
    """The gap table's rows of one model and decision mode, by N."""
    return table[(table["model"] == row.model) & (table["decision"] == row.decision)].sort_values("n")


def _by_n(cells, column, digits=2) -> str:
    return " / ".join(f"{value:.{digits}f}" for value in cells[column])


def _ns(cells) -> str:
    return "N = " + " / ".join(str(n) for n in cells["n"])


def _span(low, high, digits) -> str:
    low, high = f"{low:.{digits}f}", f"{high:.{digits}f}"
    return low if low == high else f"{low}–{high}"


def _join(items) -> str:
    items = list(items)
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _models(models) -> str:
    return _join(f"`{m}`" for m in models)


def _subject(cells, one: str, many: str) -> str:
    """The cells' models and decision modes, then the verb for one of them or for several."""
    labels = _join(f"`{m}` ({d})" for m, d in zip(cells["model"], cells["decision"]))
    return f"{labels} {one if len(cells) == 1 else many}"


def _paper_number(x) -> str:
    """A reported number as the paper writes it: two decimals, more where it gives more."""
    return f"{x:.2f}" if round(x, 2) == x else f"{x:g}"


def _reported(paper, claim_id):
    """A reported number at N = 5: its value, or its (low, high) range."""
    row = paper[(paper["id"] == claim_id) & (paper["n"] == 5)].iloc[0]
    return (float(row["low"]), float(row["high"])) if pd.isna(row["value"]) else float(row["value"])


def _free_sentence(row, cells, rates, paper) -> str:
    """A model in free mode: call and action rates, reward, deadlock and meals by N, and
    whether its reward sits at the degenerate maximum (A13)."""
    probe = rates[(rates["where"] == PROBE) & (rates["model"] == row.model)]
    probed = "; probe: " + ", ".join(f"{r.call_rate:.1%} with `{r.prompt_version}`" for r in probe.itertuples())
    acts = (
        f"{row.valid_rate:.1%} of its completions were valid actions and {row.invalid_rate:.1%} of its calls "
        "were invalid"
        if row.calls
        else "it took no action"
    )
    text = (
        f"`{row.model}` wrote a parseable call in {row.calls:,} of its {row.completions:,} grid completions "
        f"({row.call_rate:.1%}{probed if len(probe) else ''}); {acts}. At {_ns(cells)}: mean reward "
        f"{_by_n(cells, 'reward', 3)}, deadlock rate {_by_n(cells, 'deadlock_rate')}, meals per episode "
        f"{_by_n(cells, 'meals')}. "
    )
    a13 = _paper_number(_reported(paper, "A13"))
    if row.degenerate == row.episodes:
        return text + (
            f"Every episode scores the maximum {a13} with zero meals: the paper's DeepSeek-R1-Distill "
            f"case (A13: {a13} at every N, zero meals), by the mechanism the paper names; the reward pays "
            "its maximum to a table that never deadlocks, whether or not anyone eats."
        )
    share = f"{row.degenerate / row.episodes:.0%}"
    if row.meals == 0:
        return text + (
            f"It eats nothing, and {row.degenerate} of its {row.episodes} episodes ({share}) score the "
            f"maximum {a13} (A13's degenerate case); the others lose the no-deadlock credit or pay for "
            "`think` (r_idle)."
        )
    return text + (
        f"It eats in {row.with_meals} of its {row.episodes} episodes; {row.degenerate} ({share}) score "
        f"the maximum {a13} with zero meals (A13's degenerate case)."
    )


def _constrained_sentence(row, cells, shares, episodes) -> str:
    """A model in constrained mode: its commonest actions (those making up 90%, at most
    three), meals, deadlock rate and reward by N, the round its deadlocks come in and how
    the deadlock rate moves with N."""
    top = shares.iloc[: min(3, int((shares["share"].cumsum() < 0.9).sum()) + 1)]
    picks = ", ".join(f"`{a}` {s:.0%}" for a, s in zip(top["action"], top["share"]))
    meals = "never eats: zero meals in every cell" if row.meals == 0 else f"eats {row.meals:.2f} meals per episode"
    deadlocks = int(episodes["deadlock"].sum())
    if deadlocks == 1:
        rounds = f"its one deadlock comes in round {int(episodes['deadlock_round'].min())}"
    elif deadlocks:
        rounds = f"{int((episodes['deadlock_round'] == 1).sum())} of its {deadlocks} deadlocks come in round 1"
    else:
        rounds = "no episode deadlocks"
    trend = f"; the deadlock rate {_trend(cells['deadlock_rate'])}" if deadlocks and len(cells) > 1 else ""
    return (
        f"`{row.model}` acts on its own scores of the six tool names: {picks} of its actions "
        f"({row.valid_rate:.1%} valid), and {meals}. At {_ns(cells)}: deadlock rate "
        f"{_by_n(cells, 'deadlock_rate')}, mean reward {_by_n(cells, 'reward', 3)}; {rounds}{trend}."
    )


def _trend(values) -> str:
    """How a rate moves along N."""
    steps = np.diff(np.asarray(values, dtype=float))
    if (steps < 0).all():
        return "falls as N grows"
    if (steps > 0).all():
        return "rises as N grows"
    return "does not move one way with N"


def _qwen_sentence(row, cells, steps, paper) -> str:
    """A Qwen-family model in free mode beside the paper's Qwen3-14B: valid-call rate,
    invalid-action rate (and its commonest invalid call), meals, and its N = 5 cell."""
    mine = steps[(steps["model"] == row.model) & (steps["action"] != NO_ACTION) & ~steps["valid"].astype(bool)]
    worst = action_shares(mine, "free").head(1)
    commonest = "".join(f", most often `{a}` ({s:.0%} of them)" for a, s in zip(worst["action"], worst["share"]))
    calls = f"{row.invalid_rate:.1%} of its calls invalid{commonest}" if row.calls else "no call to judge"
    text = (
        f"`{row.model}`, in free mode: a parseable call in {row.call_rate:.1%} of its completions "
        f"({row.calls:,} of {row.completions:,}), {calls}, {row.meals:.2f} meals per episode."
    )
    five = cells[cells["n"] == 5]
    if five.empty:
        return text
    reward, deadlock = five["reward"].iloc[0], five["deadlock_rate"].iloc[0]
    qwen = _reported(paper, "A05")
    return text + (
        f" At N = 5 it scores {reward:.3f} with deadlock rate {deadlock:.2f}, "
        f"{'above' if reward > qwen else 'at or below'} the paper's Qwen3-14B ({_paper_number(qwen)}, "
        f"deadlock {_paper_number(_reported(paper, 'A06'))}, A05/A06)."
    )


def _paper_sentence(table, paper) -> str:
    """The paper's N = 5 numbers beside our LLM cells, and whether ours show a gap of the
    paper's shape: cells that eat in most episodes at the frontier's level (reward at
    least the frontier's lowest, deadlock rate at most its highest) and cells that deadlock
    like Qwen3-14B (reward below the frontier's lowest, deadlock rate above its highest)."""
    (low, high), (dl_low, dl_high) = _reported(paper, "A01"), _reported(paper, "A02")
    lo, dl = _paper_number(low), _paper_number(dl_high)
    text = (
        f"The paper reports {lo}–{_paper_number(high)} for the frontier models at N = 5 (deadlock "
        f"{_paper_number(dl_low)}–{dl}, A01/A02) and {_paper_number(_reported(paper, 'A05'))} for Qwen3-14B "
        f"(deadlock {_paper_number(_reported(paper, 'A06'))}, A05/A06)."
    )
    five = table[(table["decision"] != "scripted") & (table["n"] == 5)]
    if five.empty:
        return text + " This run has no LLM cell at N = 5 to set beside them."
    ours = "; ".join(
        f"`{r.model}` ({r.decision}) {r.reward:.3f}, deadlock {r.deadlock_rate:.2f}, meals {r.meals:.2f}"
        for r in five.itertuples()
    )
    level = (five["reward"] >= low) & (five["deadlock_rate"] <= dl_high)
    eats, idle = five[level & (five["zero_meal_share"] < 0.5)], five[level & (five["zero_meal_share"] >= 0.5)]
    weak = five[(five["reward"] < low) & (five["deadlock_rate"] > dl_high)]
    eat_clause = _subject(eats, "eats", "eat") + " in most episodes" if len(eats) else "no cell eats in most episodes"
    weak_clause = _subject(weak, "deadlocks", "deadlock") if len(weak) else "no cell deadlocks"
    text += (
        f" Ours at N = 5: {ours}. Our models {'show' if len(eats) and len(weak) else 'do not show'} a "
        f"coordination gap of the paper's shape: {eat_clause} at the frontier's level (reward ≥ {lo}, "
        f"deadlock ≤ {dl}); {weak_clause} like Qwen3-14B (reward below {lo}, deadlock above {dl})."
    )
    if len(idle):
        text += (
            f" {_subject(idle, 'reaches', 'reach')} the frontier's level while eating nothing in most episodes: "
            "the no-deadlock credit, not coordination."
        )
    return text


def _scripted_sentence(table) -> str:
    """The scripted baselines that eat in every cell without ever deadlocking, against
    ``no_action`` (empty when either is missing)."""
    scripted = table[table["decision"] == "scripted"]
    policies = scripted.groupby("model", sort=False).agg(meals=("meals", "min"), deadlock=("deadlock_rate", "max"))
    eaters = policies[(policies["meals"] > 0) & (policies["deadlock"] == 0)].index
    no_action = scripted.loc[scripted["model"] == "policy:no_action", "reward"]
    if eaters.empty or no_action.empty:
        return ""
    cells = scripted[scripted["model"].isin(eaters)]
    below = cells["reward"].max() < no_action.min()
    names = _models(m.removeprefix("policy:") for m in eaters)
    return (
        f"The scripted baselines that eat without deadlock ({names}: "
        f"{_span(cells['meals'].min(), cells['meals'].max(), 2)} meals per episode) score "
        f"{_span(cells['reward'].min(), cells['reward'].max(), 3)}, {'below' if below else 'not below'} "
        f"`no_action`'s {_span(no_action.min(), no_action.max(), 3)}"
        + (": the degenerate maximum again." if below else ".")
    )


# -- notebook 02's claims (paper A, Fig. 1 and the main table)

# The paper's models, by the names paperlib.models gives them (the `paper` profile's gap_models).
FRONTIER = ("claude-opus-4.7", "gpt-5.4", "gemini-3.1-pro", "grok-4.2")
PAPER_MODELS = {
    "A01": FRONTIER,
    "A02": FRONTIER,
    "A03": ("mistral-small-24b",),
    "A04": ("mistral-small-24b",),
    "A05": ("qwen3-14b",),
    "A06": ("qwen3-14b",),
    "A07": ("qwen3-14b",),
    "A13": ("deepseek-r1-distill-qwen-7b",),
}
# [ours] A model "writes no parseable call", the paper's DeepSeek case (A13), when fewer than
# this share of its free-mode completions over the grid hold one; any model below it is tested
# on A13's mechanism (reward 1.0, zero meals), the paper's DeepSeek by name.
NO_CALL_RATE = 0.01


def gap_claims_table(
    table: pd.DataFrame, rates: pd.DataFrame, source, profile: str, episodes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Paper A's main-table numbers (A01-A07, A13) in the claims schema, from the free-mode
    (the paper's protocol) rows of ``gap.gap_table`` and the grid rows of ``gap.call_rate_table``.

    Every number is the paper's against our interval (rule ``value``): a single number
    against the 95% interval of its cell, a range against every cell's (ours: the cell whose
    interval lies farthest from the range; a mean reward's is the table's seeded bootstrap,
    within the reward's range). With ``episodes`` (the table's), the degenerate-maximum gate
    reads them. A reward or deadlock claim is tested only where the model wrote its own calls (``claims.OWN_DECISIONS`` on its grid call rate:
    no call is no action) and is not at the degenerate maximum (``claims.NOT_DEGENERATE``). A
    paper model this profile did not run gets a ``cannot test`` row naming the models it ran.
    Every model whose grid call rate is below :data:`NO_CALL_RATE` is also tested on A13 (the
    paper's DeepSeek case: reward 1.0 with zero meals), where the gates do not apply: not
    acting is the claim.
    """
    from paperlib.claims import claims_table, reported_numbers, source_name

    reported = reported_numbers()
    free = table[table["decision"] == "free"]
    grid = rates[rates["where"] == GRID].set_index("model")["call_rate"]
    ran = ", ".join(free["model"].unique()) or "none in free mode"
    rows = []
    for id_, models in PAPER_MODELS.items():
        for model in models:
            cells = free[free["model"] == model].set_index("n")
            what = reported.loc[id_, "claim"]
            if cells.empty:
                rows.append(
                    {
                        "reported": id_,
                        "what": what,
                        "model": model,
                        "ours": np.nan,
                        "effect_if": "",
                        "note": f"not run on this profile (its free-mode LLMs: {ran})",
                    }
                )
            else:
                rows.append(
                    {
                        "reported": id_,
                        "what": what,
                        "model": f"{model} (free)",
                        **_gap_claim(id_, cells, reported.loc[id_]),
                        "gate": "" if id_ == "A13" else _gates(model, grid, episodes),
                    }
                )
    for model, rate in grid[grid < NO_CALL_RATE].items():
        cells = free[free["model"] == model].set_index("n")
        if model in PAPER_MODELS["A13"] or cells.empty:
            continue
        claim = _gap_claim("A13", cells, reported.loc["A13"])
        claim["note"] = f"its call rate over the grid {rate:.4f} (< {NO_CALL_RATE}, [ours]); {claim['note']}"
        rows.append(
            {
                "reported": "A13",
                "model": f"{model} (free)",
                "what": "mean reward of a model that writes no parseable call (the paper's DeepSeek case)",
                **claim,
            }
        )
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "02_coordination_gap", profile)


def _gates(model: str, grid: pd.Series, episodes: pd.DataFrame | None) -> str:
    """The failed gates of a model's free-mode reward and deadlock claims: its own calls over the
    grid, and (with its episodes) the share of episodes at the reward's degenerate maximum."""
    from paperlib.claims import NOT_DEGENERATE, OWN_DECISIONS, degenerate_share, gated

    checks = [OWN_DECISIONS.check(grid.get(model, np.nan), "share of turns with a call")]
    if episodes is not None:
        mine = episodes[(episodes["model"] == model) & (episodes["decision"] == "free")]
        checks.append(NOT_DEGENERATE.check(degenerate_share(mine), "share of episodes at 1.0 with no meal"))
    return gated(*checks)


def _gap_claim(id_: str, cells: pd.DataFrame, number: pd.Series) -> dict:
    """ours, its interval and the rule's reference for one reported number and one model's cells (by N)."""
    column = "deadlock_rate" if "deadlock" in number["claim"] else "reward"
    low_col, high_col = (
        ("deadlock_low", "deadlock_high") if column == "deadlock_rate" else ("reward_low", "reward_high")
    )
    ns = [n for n in (5, 10, 15) if _in_span(n, str(number["n_philosophers_or_arms"])) and n in cells.index]
    if not ns:
        return {"ours": np.nan, "effect_if": "", "note": f"no cell at N = {number['n_philosophers_or_arms']}"}
    values = cells.loc[ns, column]
    by_n = "; ".join(
        f"N = {n}: {cells.loc[n, column]:.3f} [{cells.loc[n, low_col]:.3f}, {cells.loc[n, high_col]:.3f}]" for n in ns
    )
    if id_ in ("A04", "A13"):  # one number: the largest across N = 10, 15 (A04); 1.0 at every N, so the lowest (A13)
        n = int(values.idxmax() if id_ == "A04" else values.idxmin())
        value = float(number["value"])
        meals = f"; meals {', '.join(f'{m:g}' for m in cells.loc[ns, 'meals'])}" if id_ == "A13" else ""
        return {
            "ours": float(values.loc[n]),
            "ours_low": cells.loc[n, low_col],
            "ours_high": cells.loc[n, high_col],
            "effect_if": f"{value:g} within our 95% interval"
            + (" at the lowest N, so at every N" if id_ == "A13" else ""),
            "rule": "value",
            "reference": value,
            "note": f"the {'largest' if id_ == 'A04' else 'lowest'} over N, at N = {n}; {by_n}{meals}",
        }
    if isinstance(number["value"], str):  # one number, at one N
        n, value = ns[0], float(number["value"])
        return {
            "ours": float(values.iloc[0]),
            "ours_low": cells.loc[n, low_col],
            "ours_high": cells.loc[n, high_col],
            "effect_if": f"{value:g} within our 95% interval",
            "rule": "value",
            "reference": value,
            "note": by_n,
        }
    low, high = float(number["low"]), float(number["high"])  # a range over models or over N
    # every cell must meet the range: ours is the cell whose interval lies farthest from it
    gaps = {n: max(low - cells.loc[n, high_col], cells.loc[n, low_col] - high, 0.0) for n in ns}
    n = max(ns, key=lambda k: gaps[k])
    return {
        "ours": float(cells.loc[n, column]),
        "ours_low": cells.loc[n, low_col],
        "ours_high": cells.loc[n, high_col],
        "effect_if": f"every cell's 95% interval meets the paper's range {low:g} to {high:g}",
        "rule": "value",
        "reference": low,
        "reference_high": high,
        "note": f"ours: the cell farthest from the paper's range, N = {n}; {by_n}",
    }
