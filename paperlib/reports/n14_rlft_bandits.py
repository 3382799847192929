"""What notebook 14 says about RLFT on the bandits (paper B): the training log and its cost, the
positive control (did the -5 penalty lower the held-out invalid share), regret and coverage
before and after beside paper B's and the reference agents', the frequency bias after RLFT,
the harder control on a model that rarely writes a valid action, the CoT ablation, and the
claims rows B17-B23 and B30.
"""

from __future__ import annotations

import pandas as pd

from paperlib.bandits.training import METRICS, BanditSettings, before_after
from paperlib.claims import claims_table, source_name
from paperlib.reports import common
from paperlib.reports.before_after import change, cot_verdict, lowered

# the training log's columns notebook 14 shows
LOG_COLUMNS = [
    "run",
    "step",
    "invalid_rate",
    "regret",
    "coverage",
    "mean_return",
    "kl",
    "clip_fraction",
    "loss",
    "grad_norm",
    "rollout_logprob_gap",
    "seconds",
    "rollout_seconds",
    "reference_seconds",
    "forward_backward_seconds",
]
HARDER_LOG_COLUMNS = ["run", "step", "invalid_rate", "mean_return", "kl", "loss", "grad_norm", "seconds"]


def cost_sentence(log: pd.DataFrame) -> str:
    """Where an update's seconds went on average, its decisions and the runs' peak memory."""
    return common.update_cost(log)


def held_out_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """The held-out instances' table (``bandits.training.before_after``): per training seed and on
    the seeds' mean per instance (``paperlib.reports.seeds``: ``train_seed`` "pooled", "0", ...)
    where the adapters' episodes hold several seeds; as before where one."""
    from paperlib.reports.seeds import table_by_seed

    return table_by_seed(episodes, before_after, ("adapter", "seed"))


def frequency_bias_table(results: dict[str, pd.DataFrame], labels) -> pd.DataFrame:
    """Notebook 12's frequency-bias table of each of ``labels`` (the base model and the adapters,
    whose cases ``results`` holds by label) beside paper B's numbers."""
    return common.frequency_bias_claims({label: results[label] for label in labels}, common.paper_numbers())


def cot_ablation_sentence(table: pd.DataFrame) -> str:
    """RLFT with and without CoT (``bandits.training.before_after`` within ``cot`` of each style's base model and
    adapter): each metric's change per style, beside what paper B reports."""
    rows = table.set_index(["cot", "adapter", "metric"])
    lines = []
    for cot in sorted(set(table["cot"]), reverse=True):
        cells = [
            f"{metric.replace('_', ' ')} {rows.loc[(cot, 'base', metric), 'mean']:.3f} → "
            f"{rows.loc[(cot, 'RLFT', metric), 'mean']:.3f} ({change(rows.loc[(cot, 'RLFT', metric)])})"
            for metric in METRICS
        ]
        lines.append(
            f"RLFT {'with' if cot else 'without'} CoT, base model → adapter on the same held-out instances: "
            + "; ".join(cells)
            + "."
        )
    with_cot, without = (lowered(rows.loc[(cot, "RLFT", "regret")]) for cot in (True, False))
    lines.append(
        "Paper B reports RLFT without CoT doing much worse than with it (Fig. 9b, on tic-tac-toe; it gives no "
        "number for the bandits). " + cot_verdict("lowers regret", with_cot, without)
    )
    return "\n\n".join(lines)


def frequency_bias_sentence(table: pd.DataFrame, reported: pd.DataFrame) -> str:
    """The frequency bias before and after RLFT (``experiments.frequency_bias_claims``' table, one
    row per label) beside paper B's Gemma2 2B (B18-B21)."""
    paper = reported.set_index("id")["value"]
    rows = table.set_index("model")
    base = rows.loc["base"]
    cells = "; ".join(
        f"`{label}` {row['frequent, 0-10 repetitions']:.2f} (r = {row['r']:.2f}, frequent overall "
        f"{row['frequent']:.2f})"
        for label, row in rows.drop(index="base").iterrows()
    )
    return (
        f"Share of predictions that are the most frequent action at 0-10 repetitions: base model "
        f"{base['frequent, 0-10 repetitions']:.2f} (r = {base['r']:.2f}, frequent overall {base['frequent']:.2f}); "
        f"after RLFT {cells}. Paper B, Gemma2 2B: {paper['B18']} before and {paper['B19']} after RLFT, with "
        f"r = {paper['B20']} and a frequent fraction of {paper['B21']} after. The cases are notebook 12's "
        f"({', '.join(map(str, sorted(table['model'])))} scored on the same histories)."
    )


def control_sentence(table: pd.DataFrame, adapter: str, gates: bool = True) -> str:
    """The positive control: did the -5 penalty lower the held-out invalid-action share? With
    ``gates``, what that means for the regret and coverage that follow."""
    rows = table.set_index(["adapter", "metric"])
    base, trained = rows.loc[("base", "invalid_share")], rows.loc[(adapter, "invalid_share")]
    return (
        f"Positive control: the held-out invalid-action share went from {base['mean']:.3f} "
        f"[{base['ci_low']:.3f}, {base['ci_high']:.3f}] (base model) to {trained['mean']:.3f} "
        f"[{trained['ci_low']:.3f}, {trained['ci_high']:.3f}] (`{adapter}`, {int(trained['n'])} instances; "
        f"{change(trained)}). "
        + (
            (
                "The trainer learns what the penalty asks for within this budget"
                + ("; regret and coverage below can be read." if gates else ".")
            )
            if lowered(trained)
            else (
                "The trainer did not lower it significantly within this budget"
                + (
                    ", so no claim about regret or coverage below is made from this run: it would need more updates, "
                    "instances or a larger learning rate."
                    if gates
                    else "."
                )
            )
        )
    )


def harder_control_sentence(model: str, log: pd.DataFrame, episodes: pd.DataFrame) -> str:
    """The positive control on a model that rarely writes a valid action (the profile's
    ``rlft_control_models``): its held-out invalid share before and after (``episodes``: the
    base model's and the last adapter's, labelled ``base`` and ``RLFT``) and in training (``log``: its
    ``step``, ``invalid_rate`` and ``decisions`` per update); when nothing moved, why, from the log."""
    table = before_after(episodes)
    trained = table.set_index(["adapter", "metric"]).loc[("RLFT", "invalid_share")]
    invalid = log.sort_values("step")["invalid_rate"]
    sentence = (
        f"**{model}**: "
        + control_sentence(table, "RLFT", gates=False)
        + f" In training the invalid share went {invalid.iloc[0]:.3f} → {invalid.iloc[-1]:.3f} over "
        f"{len(invalid)} updates."
    )
    if lowered(trained):
        return sentence
    if (invalid == 1).all():
        return sentence + (
            " No update held a single valid action, so every step paid the same penalty and the "
            "advantages followed only the random fallback arms' rewards: the penalty gave no signal "
            "about the format, and more updates alone would not move it. The model first needs valid "
            "actions to reinforce (a prompt or a few supervised examples that elicit the format, or "
            "many more samples per update)."
        )
    valid = round(float(((1 - log["invalid_rate"]) * log["decisions"]).sum()))
    return sentence + (
        f" Only {valid} of its {int(log['decisions'].sum())} training decisions were valid actions, so "
        "the penalty's signal was that rare: for it to move the share within a budget like this one, the "
        "model would first need valid actions far more often (a prompt or a few supervised examples that "
        "elicit the format), or many more samples per update."
    )


def rlft_sentence(table: pd.DataFrame, reported: pd.DataFrame, settings: BanditSettings, adapters: dict) -> str:
    """Regret and coverage of each trained adapter against the base model, beside paper B's
    (rows B17, B22, B23, B30 of ``reported``) and the reference agents on the same instances.
    ``adapters``: label -> a description."""
    paper = reported.set_index("id")["value"]
    rows = table.set_index(["adapter", "metric"])
    s = settings
    lines = [
        f"Paper B (Gemma2, all weights tuned, 10 arms, 50 steps, CoT): coverage +{float(paper['B17']):.2f} for "
        f"2B after 30K updates; {paper['B22']} coverage without and {paper['B23']} with the exploration bonus; "
        f"regret falls for 2B and 9B."
    ]
    for label, what in adapters.items():
        cells = []
        for metric in ("coverage", "regret"):
            base, trained = rows.loc[("base", metric)], rows.loc[(label, metric)]
            cells.append(f"{metric} {base['mean']:.3f} → {trained['mean']:.3f} ({change(trained)})")
        lines.append(
            f"Ours ({s.model}, a rank-{s.lora_rank} LoRA adapter after {s.updates} updates, {what}; "
            f"{s.arms} arms, {s.horizon} steps, {s.style.replace('_', ' ')}): " + "; ".join(cells) + "."
        )
    references = [
        f"{name} regret {rows.loc[(name, 'regret'), 'mean']:.3f}, coverage {rows.loc[(name, 'coverage'), 'mean']:.3f}"
        for name in ("ucb", "random")
        if (name, "regret") in rows.index
    ]
    if references:
        lines.append("On the same held-out instances: " + "; ".join(references) + ".")
    lines.append(
        "The paper tunes every weight and reports LoRA insufficient; our adapters are LoRA at a CPU budget, "
        "so a change that does not appear here is not evidence against the paper."
    )
    return "\n\n".join(lines)


def rlft_claims_table(
    table: pd.DataFrame,
    episodes: pd.DataFrame,
    source,
    profile: str,
    model: str,
    frequency: pd.DataFrame | None = None,
    frequency_results: dict[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Notebook 14's held-out results in the claims schema (``paperlib.claims``): the coverage gain
    of RLFT (B17, rule ``higher``) and its regret change (B30, ``lower``) against the base model,
    and coverage with the exploration bonus against without (B22/B23, ``higher``), each the
    difference of means on the held-out instances both sides played, tested paired (paired t,
    or Wilcoxon signed-rank; an adapter trained with several seeds, ``train_seed``, pooled per
    instance) and gated on both sides choosing their own arms (``claims.OWN_DECISIONS``: the
    share of steps with a valid action; an invalid one plays a random arm). With ``frequency``
    (the frequency-bias table of base and ``RLFT``), the frequent share at 0-10 repetitions after
    RLFT against the base model's (B18/B19, ``lower``), tested paired on the same cases (exact
    McNemar) where ``frequency_results`` (the cases by label) are given, else untested."""
    from paperlib.claims import OWN_DECISIONS, effect, gated, seed_range
    from paperlib.stats import mcnemar_p, paired_sides, per_seed_differences, seeds_in_words

    who = f"{model} (LoRA adapter, {profile})"
    valid = episodes.assign(own=1 - episodes["invalid_steps"] / episodes["horizon"])

    def compared(metric, label, control, names):
        treated, base = paired_sides(episodes, "adapter", metric, label, control, ["seed"])
        tested = effect(treated, base, paired=True, names=names)
        own = valid.groupby("adapter")["own"].mean()
        gate = gated(
            *(
                OWN_DECISIONS.check(float(own.get(side, float("nan"))), f"{side}'s own actions")
                for side in (label, control)
            )
        )
        fields = {key: tested[key] for key in ("ours", "ours_low", "ours_high", "p", "p_tost", "test")}
        differences = per_seed_differences(episodes, "adapter", metric, label, control, ["seed"])
        seeds = seeds_in_words(differences)
        note = f"{control} {base.mean():.3f}, {label} {treated.mean():.3f}; {tested['size']}"
        return {**fields, **seed_range(differences), "gate": gate}, note + (f"; {seeds}" if seeds else "")

    coverage, coverage_note = compared("coverage", "RLFT", "base", ("coverages after RLFT", "base model's coverages"))
    regret, regret_note = compared("regret", "RLFT", "base", ("regrets after RLFT", "base model's regrets"))
    bonus, bonus_note = compared(
        "coverage", "RLFT + bonus", "RLFT", ("coverages with the bonus", "coverages without the bonus")
    )
    claims = pd.DataFrame(
        [
            {
                "reported": "B17",
                "what": "coverage gain of RLFT over the base model (held-out, absolute)",
                "model": who,
                **coverage,
                "effect_if": "a significant gain (paired by instance)",
                "rule": "higher",
                "note": coverage_note,
            },
            {
                "reported": "B30",
                "what": "change in final cumulative regret, RLFT against the base model (held-out)",
                "model": who,
                **regret,
                "effect_if": "a significant fall (paired by instance)",
                "rule": "lower",
                "note": regret_note,
            },
            {
                "reported": "B22/B23",
                "what": "coverage gain of the exploration bonus: RLFT with it minus RLFT without (held-out)",
                "model": who,
                **bonus,
                "effect_if": "a significant gain (paired by instance)",
                "rule": "higher",
                "note": bonus_note,
            },
        ]
    )
    if frequency is not None:
        shares = frequency.set_index("model")["frequent, 0-10 repetitions"]
        p, test = float("nan"), ""
        if frequency_results is not None:
            first = {
                label: frequency_results[label].set_index(["seed", "history", "repetitions"])["strategy"] == "frequent"
                for label in ("RLFT", "base")
            }
            window = first["base"].index.get_level_values("repetitions") < 10
            after, before = first["RLFT"][window], first["base"].reindex(first["RLFT"][window].index)
            p, test = mcnemar_p(after.to_numpy(), before.to_numpy()), f"mcnemar exact, {len(after)} cases"
        claims = pd.concat(
            [
                claims,
                pd.DataFrame(
                    [
                        {
                            "reported": "B18/B19",
                            "what": "share of predictions that are the most frequent action, 0-10 repetitions: "
                            "after RLFT minus before",
                            "model": who,
                            "ours": shares["RLFT"] - shares["base"],
                            "effect_if": "a significant fall (paired by case)",
                            "rule": "lower",
                            "p": p,
                            "test": test,
                            "note": f"base model {shares['base']:.3f}, RLFT {shares['RLFT']:.3f}"
                            + ("" if test else "; no test: the cases were not given"),
                        }
                    ]
                ),
            ],
            ignore_index=True,
        )
    return claims_table(claims.assign(source=source_name(source)), "14_rlft_bandits", profile)
