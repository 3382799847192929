"""What a GRPO run did, and whether its adapters beat the base model (notebooks 03 and 04).

- :func:`curve`: a training log's peak step and its last step, and how many earlier steps
  beat the last (paper A: the reward peaked at step 9; the saved step 15 was worse than
  several earlier steps).
- :func:`compare`: each adapter's episodes against the base model's at each N, on the
  same evaluation seeds: means with 95% t intervals, Welch's t-test (scipy; Mann-Whitney's
  where neither side varies) and Hedges' g with its small-sample correction and 95%
  interval (``paperlib.stats.against``), adapter minus base.
- :func:`null_result_sentence` and :func:`control_sentence`: what the tables support,
  written from their numbers; :func:`curve_claims_table` and :func:`null_result_claims_table`:
  the same readings in the claims schema (``paperlib.claims``).
"""

from __future__ import annotations

import math

import pandas as pd

from paperlib import stats
from paperlib.claims import claims_table, source_name
from paperlib.training.grpo import REWARDS

ALPHA = stats.ALPHA


def curve(log: pd.DataFrame) -> dict:
    """The peak and the last step of a run's training reward (the earliest step among equal
    peaks), the earlier steps whose reward beats the last step's, and the standard error of
    the peak-minus-last difference from each step's episodes (their std over sqrt(count))."""
    run = log.sort_values("step").set_index("step")
    by_step = run["train_reward"]
    std = run[f"{REWARDS[run['reward'].iloc[0]]}_std"]
    peak_step, last_step = int(by_step.idxmax()), int(by_step.index[-1])
    better = [int(k) for k, v in by_step.iloc[:-1].items() if v > by_step.iloc[-1]]
    se = math.sqrt((std[peak_step] ** 2 / run["episodes"][peak_step]) + (std[last_step] ** 2 / run["episodes"][last_step]))
    return {"peak_step": peak_step, "peak": float(by_step.max()), "last_step": last_step,
            "last": float(by_step.iloc[-1]), "earlier_better": better, "drop_se": se}


def compare(episodes: pd.DataFrame, column: str = "reward", baseline: str = "base",
            label: str = "selection") -> pd.DataFrame:
    """One row per (``label`` other than ``baseline``) x N: the adapter's and the base model's
    mean ``column`` with 95% intervals, and :func:`paperlib.stats.against`'s columns (the
    difference, its p from Welch's test, or Mann-Whitney's where neither side varies, and
    Hedges' g with its interval). Both sides must hold the same evaluation seeds at that N."""
    rows = []
    base = episodes[episodes[label] == baseline]
    for (name, n), group in episodes[episodes[label] != baseline].groupby([label, "n"], sort=False):
        control = base[base["n"] == n]
        if sorted(group["seed"]) != sorted(control["seed"]):
            raise ValueError(f"{label} {name!r} at N = {n} was not played on the base model's seeds")
        mean, low, high = stats.mean_ci(group[column])
        base_mean, base_low, base_high = stats.mean_ci(control[column])
        rows.append({label: name, "n": int(n), "step": int(group["step"].iloc[0]), "episodes": len(group),
                     "mean": mean, "ci_low": low, "ci_high": high, "base_mean": base_mean, "base_ci_low": base_low,
                     "base_ci_high": base_high, **stats.against(group[column], control[column])})
    return pd.DataFrame(rows)


def by_selection(played: pd.DataFrame, chosen: dict, base: str = "base") -> pd.DataFrame:
    """The evaluation's episodes labelled by ``selection``: the base model's rows as ``base``, and
    for each rule of ``chosen`` (rule -> step) the rows of that step's adapter (``step-<k>``,
    as :func:`paperlib.training.grpo.play_adapters` labels them), repeated when two rules keep
    the same step."""
    parts = [played[played["adapter"] == base].assign(selection=base)]
    for rule, step in chosen.items():
        rows = played[played["adapter"] == f"step-{step}"]
        if rows.empty:
            raise ValueError(f"no evaluation episodes of step {step}, which {rule} keeps")
        parts.append(rows.assign(selection=rule))
    return pd.concat(parts, ignore_index=True)


def learned(control: pd.DataFrame) -> bool:
    """Whether the positive control's adapter beats the base model significantly at every N of
    :func:`compare`'s table."""
    return bool(len(control)) and bool(((control["p"] < ALPHA) & (control["difference"] > 0)).all())


def _test(row) -> str:
    """A :func:`compare` row's test and p, in words."""
    if row.p != row.p:
        return "no test: every episode scored the same"
    return f"{'Welch' if row.test == 'welch' else 'Mann-Whitney, as neither side varies,'} p = {row.p:.2g}"


def _g(row) -> str:
    if math.isinf(row.g):
        return "Hedges' g unbounded: neither side varies"
    return f"Hedges' g = {row.g:.2f} [{row.g_low:.2f}, {row.g_high:.2f}]"


def _verdict(row) -> str:
    if not row["p"] < ALPHA:
        return "no significant difference"
    return "significantly higher" if row["difference"] > 0 else "significantly lower"


def control_sentence(table: pd.DataFrame, column: str = "valid share") -> str:
    """The positive control's result, from :func:`compare`'s table (one row per adapter x N)."""
    parts = [f"at N = {r.n} the trained adapter (step {r.step}) has a {column} of {r.mean:.2f} "
             f"[{r.ci_low:.2f}, {r.ci_high:.2f}] against the base model's {r.base_mean:.2f} "
             f"[{r.base_ci_low:.2f}, {r.base_ci_high:.2f}] on {r.episodes} held-out episodes "
             f"({_test(r)}, {_g(r)}): {_verdict(r._asdict())}"
             for r in table.itertuples()]
    verdict = ("The trainer learns a learnable reward within this budget, so a null result under the paper's reward "
               "below is not the trainer's failure to learn." if learned(table) else
               "The trainer did not raise this learnable reward significantly within this budget: a null result "
               "under the paper's reward below would say nothing about GRPO.")
    return "Positive control: " + "; ".join(parts) + ". " + verdict


def null_result_sentence(table: pd.DataFrame, reported: pd.DataFrame, model: str, control: pd.DataFrame,
                         episodes: pd.DataFrame) -> str:
    """What the base-vs-adapter table supports, per selection rule, beside paper A's numbers
    (rows A05, A08, A09, A10 of ``reported``), read in the light of the positive control
    (``control``: :func:`compare`'s table of notebook 03's held-out test). An adapter
    significantly above the base model at an N where none of its ``episodes`` (the table's)
    has a meal is named as sitting at the paper reward's degenerate maximum (notebook 01)."""
    paper = reported.set_index("id")["value"]
    lines = [f"Paper A (Qwen3-14B, N = 5): base {paper['A05']}, GRPO {paper['A08']}, Welch p = {paper['A09']}, "
             f"Hedges' g = {paper['A10']}; not significant at N = 10 and 15 either."]
    for selection, rows in table.groupby("selection", sort=False):
        cells = "; ".join(f"N = {r.n}: {r.base_mean:.3f} → {r.mean:.3f} ({_test(r)}, {_g(r)}, "
                          f"{_verdict(r._asdict())})" for r in rows.itertuples())
        lines.append(f"Ours ({model}, adapter `{selection}`, step {int(rows['step'].iloc[0])}): {cells}.")
    significant = table[table["p"] < ALPHA]
    if significant.empty:
        lines.append("No selection rule's adapter differs significantly from the base model at any N"
                     + (f": our run reproduces the shape of the paper's null result on {model}, not its numbers or its "
                        f"model; the same trainer and budget did raise a learnable reward (notebook 03)."
                        if learned(control) else
                        ". Notebook 03's positive control did not rise significantly either, so on this run the "
                        "trainer is not shown to learn at all: this is no evidence for or against the paper's null "
                        "result."))
    else:
        cells = ", ".join(f"`{r.selection}` at N = {r.n} ({'higher' if r.difference > 0 else 'lower'})"
                          for r in significant.itertuples())
        lines.append(f"Unlike the paper, some adapters differ significantly from the base model: {cells}.")
        meals = episodes.groupby(["selection", "n"])["meals_total"].sum()
        mealless = [f"`{r.selection}` at N = {r.n}" for r in significant.itertuples()
                    if r.difference > 0 and meals[(r.selection, r.n)] == 0]
        if mealless:
            lines.append(f"No philosopher ate in any episode of {', '.join(mealless)}: a higher reward there is the "
                         "paper reward's degenerate maximum (1.0 with no meal, notebook 01), reached by not acting "
                         "rather than by coordinating; the shaped reward above does not pay it.")
    return "\n\n".join(lines)


def curve_sentence(log: pd.DataFrame, reported: pd.DataFrame, model: str) -> str:
    """The training curve under the paper's reward beside paper A's (rows A14, A15: steps
    counted from 0, so its peak at step 9 and saved step 15 are our steps 10 and 16)."""
    c = curve(log)
    paper = reported.set_index("id")["value"]
    earlier = (f"{len(c['earlier_better'])} earlier step{'s' if len(c['earlier_better']) != 1 else ''} "
               f"({', '.join(map(str, c['earlier_better']))}) had a higher training reward than the last"
               if c["earlier_better"] else "no earlier step had a higher training reward than the last")
    return (f"Paper A (Qwen3-8B and 14B): the training reward peaked at step {paper['A14']} and the saved step "
            f"{paper['A15']} (the last, counting from 0) was worse than several earlier steps. Ours ({model}, "
            f"{c['last_step']} steps counted from 1): the training reward peaked at step {c['peak_step']} "
            f"({c['peak']:.3f}) and the last step, which the paper's rule keeps, scored {c['last']:.3f}; {earlier}."
            + (f" The drop from the peak, {c['peak'] - c['last']:.3f}, is {(c['peak'] - c['last']) / c['drop_se']:.1f} "
               f"standard errors of the two steps' means." if c["peak_step"] != c["last_step"] and c["drop_se"] > 0
               else "") + " " + behaviour_sentence(log))


def behaviour_sentence(log: pd.DataFrame) -> str:
    """How the play behind a run's training reward changed from its first step to its last: the
    valid-call rate, meals and deadlocks, and whether the last step sits at the paper reward's
    degenerate maximum (1.0 with no meal: notebook 01's ``no_action``)."""
    run = log.sort_values("step")
    first, last = run.iloc[0], run.iloc[-1]
    degenerate = last["train_reward"] >= 0.995 and last["meals"] == 0
    return (f"From step {int(first['step'])} to step {int(last['step'])} the share of completions holding a tool call "
            f"went {first['valid_call_rate']:.2f} → {last['valid_call_rate']:.2f}, meals per episode "
            f"{first['meals']:.2f} → {last['meals']:.2f} and the deadlock rate {first['deadlock_rate']:.2f} → "
            f"{last['deadlock_rate']:.2f}"
            + (": at the last step the training reward is the degenerate maximum of the paper's reward (1.0 with no "
               "meal, notebook 01), reached by no longer acting." if degenerate else "."))


def curve_claims_table(log: pd.DataFrame, source, profile: str, model: str) -> pd.DataFrame:
    """Notebook 03's run under the paper's reward in the claims schema: A14 (the training reward
    peaks before the last step and declines after: a plateau at the peak is no decline) and A15 (several earlier steps beat the saved last one; ours:
    at least two **[ours]**), as :func:`curve_sentence` reads them. Steps are ours, from 1."""
    c = curve(log)
    claims = pd.DataFrame([
        {"reported": "A14", "what": "step of the highest training reward (ours counted from 1; the paper's from 0)",
         "model": model, "ours": c["peak_step"], "effect_if": "a peak before the last step, above it (a decline)",
         "shown": c["peak_step"] < c["last_step"] and c["peak"] > c["last"],
         "note": f"peak {c['peak']:.3f}, last step {c['last_step']} {c['last']:.3f}"},
        {"reported": "A15", "what": "earlier steps with a higher training reward than the saved last step",
         "model": model, "ours": len(c["earlier_better"]), "effect_if": "at least 2 (the paper: several)",
         "shown": len(c["earlier_better"]) >= 2,
         "note": "steps " + (", ".join(map(str, c["earlier_better"])) or "none")},
    ])
    return claims_table(claims.assign(source=source_name(source)), "03_grpo_training", profile)


def null_result_claims_table(table: pd.DataFrame, source, profile: str, model: str,
                             selection: str = "last", episodes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Notebook 04's table in the claims schema, for the paper's selection rule: Welch's p at
    N = 5 (A09), Hedges' g at N = 5 (A10: its interval covers 0) and p at N = 10 and 15 (A11,
    A12); the paper's effect is the null result, no significant difference. With ``episodes``
    (the table's), each p's note gives both sides' meals per episode, so a reward reached
    without eating is visible beside the verdict."""
    rows = table[table["selection"] == selection].set_index("n")
    meals = episodes.groupby(["selection", "n"])["meals_total"].mean() if episodes is not None else None
    missing = {"ours": math.nan, "shown": pd.NA, "note": "not evaluated at this N on this profile"}
    claims = []
    for reported, n in (("A09", 5), ("A11", 10), ("A12", 15)):
        claim = {"reported": reported, "what": f"Welch p, base vs GRPO ({selection} adapter), N = {n}", "model": model,
                 "effect_if": f"p >= {ALPHA} (no significant difference)", **missing}
        if n in rows.index:
            r = rows.loc[n]
            claim.update(ours=r["p"], shown=r["p"] >= ALPHA if r["p"] == r["p"] else pd.NA,
                         note=f"base {r['base_mean']:.3f}, adapter {r['mean']:.3f}, {int(r['episodes'])} episodes"
                              + (f"; meals per episode: base {meals[('base', n)]:.2f}, adapter "
                                 f"{meals[(selection, n)]:.2f}" if meals is not None else ""))
        claims.append(claim)
    claim = {"reported": "A10", "what": f"Hedges' g, GRPO ({selection} adapter) vs base, N = 5", "model": model,
             "effect_if": "a 95% interval that covers 0", **missing}
    if 5 in rows.index:
        r = rows.loc[5]
        claim.update(ours=r["g"], ours_low=r["g_low"], ours_high=r["g_high"], shown=r["g_low"] <= 0 <= r["g_high"],
                     note="")
    claims.append(claim)
    return claims_table(pd.DataFrame(claims).assign(source=source_name(source)), "04_grpo_null_result", profile)
