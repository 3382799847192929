"""What notebook 04 says about GRPO's null result (paper A): the evaluation's settings, which step
each selection rule keeps, each kept adapter against the base model at each N beside paper A's
numbers (read in the light of notebook 03's positive control), and the claims rows A09-A12.
"""

from __future__ import annotations

import math

import pandas as pd

from paperlib.claims import claims_table, reported_numbers, source_name
from paperlib.philosophers.training import compare_by_n
from paperlib.reports.before_after import hedges, learned, verdict, which_test
from paperlib.stats import ALPHA


def evaluation_settings(profile) -> pd.DataFrame:
    """The validation and evaluation sizes of ``profile`` (a ``paperlib.profiles.Profile``)."""
    return pd.DataFrame(
        {
            "setting": [
                "validation episodes per saved step (N = the recipe's)",
                "evaluation N",
                "evaluation episodes per cell",
                "evaluation seeds",
                "sampling",
            ],
            "value": [
                profile.grpo_val_episodes,
                profile.grpo_eval_ns,
                profile.grpo_eval_episodes,
                f"0 to {profile.grpo_eval_episodes - 1}, the same for every adapter",
                "the run's prompt, temperature and token budget",
            ],
        }
    )


def selection_table(log: pd.DataFrame, validation: pd.DataFrame, chosen: dict) -> pd.DataFrame:
    """Each rule's step (``chosen``: rule -> step) with its training and mean validation reward."""
    val_means = validation.groupby("step")["reward"].mean()
    return pd.DataFrame(
        [
            {
                "rule": rule,
                "step": step,
                "training reward": float(log.set_index("step").loc[step, "train_reward"]),
                "validation reward": float(val_means[step]),
            }
            for rule, step in chosen.items()
        ]
    )


def chosen_steps(log: pd.DataFrame, validation: pd.DataFrame) -> dict:
    """Per training seed (``train_seed`` of the log and the validation table; None where the log
    has none), the step each selection rule keeps of that seed's run: seed -> {rule -> step}."""
    from paperlib.reports.seeds import SEED, each
    from paperlib.training.selection import RULES, select

    out = {}
    for seed, run in each(log).items():
        checked = validation if seed is None or SEED not in validation else validation[validation[SEED] == seed]
        out[seed] = {rule: select(rule, run, checked) for rule in RULES}
    return out


def selection_tables(log: pd.DataFrame, validation: pd.DataFrame, chosen: dict) -> pd.DataFrame:
    """:func:`selection_table` of each training seed of ``chosen`` (:func:`chosen_steps`), with a
    ``train_seed`` column where the log holds one."""
    from paperlib.reports.seeds import SEED, each

    runs = each(log)
    tables = []
    for seed, steps in chosen.items():
        checked = validation if seed is None or SEED not in validation else validation[validation[SEED] == seed]
        table = selection_table(runs[seed], checked, steps)
        tables.append(table if seed is None else table.assign(**{SEED: seed})[[SEED, *table.columns]])
    return pd.concat(tables, ignore_index=True)


KEYS = ("selection", "n", "seed")  # what pools several training seeds' episodes: the rule, N, the evaluation seed


def null_result_table(episodes: pd.DataFrame, column: str = "reward") -> pd.DataFrame:
    """Each kept adapter against the base model at each N (``philosophers.training.compare_by_n``):
    on the seeds' mean per evaluation seed and per training seed (``paperlib.reports.seeds``,
    ``train_seed`` "pooled", "0", ...) where the episodes hold several; as before where one."""
    from paperlib.reports.seeds import table_by_seed

    return table_by_seed(episodes, lambda rows: compare_by_n(rows, column=column), KEYS)


def shaped_reward_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """Each kept adapter against the base model at each N under the shaped reward (per training
    seed and pooled where there are several, :func:`null_result_table`)."""
    table = null_result_table(episodes, "reward_shaped")
    return table[[c for c in ("train_seed", "selection", "n", "base_mean", "mean", "p", "g") if c in table]]


def null_result_sentences(
    table: pd.DataFrame, reported: pd.DataFrame, model: str, control: pd.DataFrame, episodes: pd.DataFrame
) -> str:
    """:func:`null_result_sentence` on each part of :func:`null_result_table`'s ``table``: the pooled
    one first, with the seeds' mean episodes and the paper's numbers, then each training seed's,
    with its episodes; the sentence alone where there is one seed."""
    from paperlib.reports.seeds import POOLED, heading, parts, pool, split

    tables = parts(table)
    if None in tables:
        return null_result_sentence(table, reported, model, control, episodes)
    rows = {str(seed): part for seed, part in split(episodes).items()} | {POOLED: pool(episodes, KEYS)}
    adapters = episodes[episodes["train_seed"].notna()]
    kept = {  # the pooled rule's adapter is each seed's own step
        selection: f"step {steps[0]} of every seed"
        if len(set(steps)) == 1
        else "steps " + ", ".join(map(str, steps)) + " of the seeds"
        for selection, rule in adapters.groupby("selection", sort=False)
        for steps in [[int(s) for s in rule.groupby("train_seed")["step"].first()]]
    }
    return "\n\n".join(
        f"**{heading(seed, len(tables) - 1)}.**\n\n"
        + null_result_sentence(
            part,
            reported,
            model,
            control,
            rows[seed].drop(columns="train_seed"),
            kept if seed == POOLED else None,
            paper_line=seed == POOLED,
        )
        for seed, part in tables.items()
    )


def null_result_sentence(
    table: pd.DataFrame,
    reported: pd.DataFrame,
    model: str,
    control: pd.DataFrame,
    episodes: pd.DataFrame,
    steps: dict | None = None,
    paper_line: bool = True,
) -> str:
    """What the base-vs-adapter table supports, per selection rule, beside paper A's numbers
    (rows A05, A08, A09, A10 of ``reported``), read in the light of the positive control
    (``control``: ``philosophers.training.compare_by_n``'s table of notebook 03's held-out test). An adapter
    significantly above the base model at an N where none of its ``episodes`` (the table's)
    has a meal is named as sitting at the paper reward's degenerate maximum (notebook 01). ``steps``
    (selection -> words) names the kept steps where the table's ``step`` does not (several seeds');
    ``paper_line``: open with the paper's numbers (once per notebook: the pooled part's)."""
    paper = reported.set_index("id")["value"]
    lines = (
        [
            f"Paper A (Qwen3-14B, N = 5): base {paper['A05']}, GRPO {paper['A08']}, Welch p = {paper['A09']}, "
            f"Hedges' g = {paper['A10']}; not significant at N = 10 and 15 either."
        ]
        if paper_line
        else []
    )
    for selection, rows in table.groupby("selection", sort=False):
        cells = "; ".join(
            f"N = {r.n}: {r.base_mean:.3f} → {r.mean:.3f} ({which_test(r)}, {hedges(r)}, {verdict(r._asdict())})"
            for r in rows.itertuples()
        )
        kept = (steps or {}).get(selection, f"step {int(rows['step'].iloc[0])}")
        lines.append(f"Ours ({model}, adapter `{selection}`, {kept}): {cells}.")
    significant = table[table["p"] < ALPHA]
    if significant.empty:
        lines.append(
            "No selection rule's adapter differs significantly from the base model at any N"
            + (
                f": our run reproduces the shape of the paper's null result on {model}, not its numbers or its "
                f"model; the same trainer and budget did raise a learnable reward (notebook 03)."
                if learned(control)
                else ". Notebook 03's positive control did not rise significantly either, so on this run the "
                "trainer is not shown to learn at all: this is no evidence for or against the paper's null "
                "result."
            )
        )
    else:
        cells = ", ".join(
            f"`{r.selection}` at N = {r.n} ({'higher' if r.difference > 0 else 'lower'})"
            for r in significant.itertuples()
        )
        lines.append(f"Unlike the paper, some adapters differ significantly from the base model: {cells}.")
        meals = episodes.groupby(["selection", "n"])["meals_total"].sum()
        mealless = [
            f"`{r.selection}` at N = {r.n}"
            for r in significant.itertuples()
            if r.difference > 0 and meals[(r.selection, r.n)] == 0
        ]
        if mealless:
            lines.append(
                f"No philosopher ate in any episode of {', '.join(mealless)}: a higher reward there is the "
                "paper reward's degenerate maximum (1.0 with no meal, notebook 01), reached by not acting "
                "rather than by coordinating; the shaped reward above does not pay it."
            )
    return "\n\n".join(lines)


def null_result_claims_table(
    table: pd.DataFrame, source, profile: str, model: str, selection: str = "last", episodes: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Notebook 04's table in the claims schema, for the paper's selection rule. Paper A's
    effect is a null result: at N = 5 (A09), 10 (A11) and 15 (A12) the adapter's mean reward
    against the base model's is a claim of no effect (rule ``no effect``: supported only by the
    equivalence test at ``claims.NULL_MARGIN_D``), tested paired on the evaluation seeds both
    played (the paired t-test; an adapter trained with several seeds, ``train_seed``, pooled
    per evaluation seed); Hedges' g at N = 5 (A10) is the paper's single number (-0.11) against
    our g's interval, and no g is given where a side's rewards do not vary.

    ``episodes`` (the table's, by ``selection``, ``n`` and ``seed``) are what the paired tests
    and the gates read; without them (an older caller) the table's unpaired p stands, ungated.
    Gates, each on both sides: the share of turns with a call of the model's own
    (``claims.OWN_DECISIONS``; no call is no action) and the share of episodes at the reward's
    degenerate maximum (``claims.NOT_DEGENERATE``)."""
    from paperlib.claims import effect, seed_range
    from paperlib.stats import no_variance, paired_sides, per_seed_differences

    rows = table[table["selection"] == selection].set_index("n")
    claims = []
    for reported, n in (("A09", 5), ("A11", 10), ("A12", 15)):
        claim = {
            "reported": reported,
            "what": f"mean reward, GRPO ({selection} adapter) minus base, N = {n}",
            "model": model,
            "ours": math.nan,
            "effect_if": "no effect: equivalent within the margin (TOST, paired by evaluation seed)",
            "rule": "no effect",
            "note": "not evaluated at this N on this profile",
        }
        if n in rows.index and episodes is not None:
            cell = episodes[episodes["n"] == n]
            adapter, base = paired_sides(cell, "selection", "reward", selection, "base", ["seed"])
            tested = effect(adapter, base, paired=True, names=("adapter's rewards", "base model's rewards"))
            differences = per_seed_differences(cell, "selection", "reward", selection, "base", ["seed"])
            claim.update(
                {key: tested[key] for key in ("ours", "ours_low", "ours_high", "p", "p_tost", "test")},
                **seed_range(differences),
                gate=_gates(cell, selection),
                note=f"base {base.mean():.3f}, adapter {adapter.mean():.3f}; {tested['size']}; "
                f"{_meals(cell, selection)}" + _seeds(differences),
            )
        elif n in rows.index:
            r = rows.loc[n]
            claim.update(ours=r["difference"], p=r["p"], test=r["test"], note="")
        claims.append(claim)
    claim = {
        "reported": "A10",
        "what": f"Hedges' g, GRPO ({selection} adapter) vs base, N = 5",
        "model": model,
        "ours": math.nan,
        "effect_if": "the paper's g within our 95% interval",
        "rule": "value",
        "reference": float(reported_numbers().loc["A10", "value"]),
        "note": "not evaluated at this N on this profile",
    }
    if 5 in rows.index:
        r = rows.loc[5]
        claim.update(ours=r["g"], ours_low=r["g_low"], ours_high=r["g_high"], note="")
        if episodes is not None:
            cell = episodes[episodes["n"] == 5]
            still = no_variance(
                **{
                    "adapter's rewards": cell.loc[cell["selection"] == selection, "reward"],
                    "base model's rewards": cell.loc[cell["selection"] == "base", "reward"],
                }
            )
            claim["gate"] = _gates(cell, selection)
            if still:
                claim.update(ours=math.nan, ours_low=math.nan, ours_high=math.nan)
                claim["note"] = f"no standardised effect: the {still} do not vary"
    claims.append(claim)
    return claims_table(pd.DataFrame(claims).assign(source=source_name(source)), "04_grpo_null_result", profile)


def _gates(cell: pd.DataFrame, selection: str) -> str:
    """The failed gates of an adapter against the base model on one N's episodes, each side checked."""
    from paperlib.claims import NOT_DEGENERATE, OWN_DECISIONS, degenerate_share, gated

    checks = []
    for side, label in (("base", "base model"), (selection, "adapter")):
        rows = cell[cell["selection"] == side]
        own = (rows["valid_call_rate"] * rows["decisions"]).sum() / rows["decisions"].sum() if len(rows) else math.nan
        checks += [
            OWN_DECISIONS.check(float(own), f"{label}'s turns with a call"),
            NOT_DEGENERATE.check(degenerate_share(rows), f"{label}'s episodes at 1.0 with no meal"),
        ]
    return gated(*checks)


def _seeds(differences: dict) -> str:
    from paperlib.stats import seeds_in_words

    return f"; {seeds_in_words(differences)}" if differences else ""


def _meals(cell: pd.DataFrame, selection: str) -> str:
    meals = cell.groupby("selection")["meals_total"].mean()
    return f"meals per episode: base {meals.get('base', math.nan):.2f}, adapter {meals.get(selection, math.nan):.2f}"
