"""Notebook 13 (paper B's knowing-doing gap): what it says about the runs of
``bandits.experiments.knowing_doing_runs`` (tabulated by ``experiments.knowing_doing_summary``):
the paper's Fig. 5 matrix as it prints it (:func:`paper_knowing_doing`), a sentence per run
(:func:`knowing_doing_sentences`) and the claims B16 and B10 in the claims schema
(:func:`knowing_doing_claims_table`)."""

from __future__ import annotations

import os

import pandas as pd

from paperlib.claims import claims_table, source_name


def paper_knowing_doing(paper: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5's matrix as the paper prints it (B10-B15, % of all steps, Gemma2 27B)."""
    ids = {
        ("correct", "greedy"): "B10",
        ("correct", "optimal"): "B11",
        ("correct", "other"): "B12",
        ("wrong", "greedy"): "B13",
        ("wrong", "optimal"): "B14",
        ("wrong", "other"): "B15",
    }
    matrix = pd.DataFrame(
        0.0, index=pd.Index(["correct", "wrong"], name="rationale"), columns=["optimal", "greedy", "other"]
    )
    for (rationale, action), number in ids.items():
        matrix.loc[rationale, action] = float(paper.loc[number, "value"])
    return matrix


def knowing_doing_sentences(table: pd.DataFrame, matrices: dict[str, pd.DataFrame], paper: pd.DataFrame) -> str:
    """A Markdown bullet per knowing-doing run (``experiments.knowing_doing_summary``): how often the model
    wrote any UCB value and a correct rationale, the correct-rationale row of its matrix beside
    the paper's 27B (B10, B11), and whether it shows the paper's gap: most rationales correct
    and, with a correct one, a greedy action more often than an optimal one."""
    lines = []
    for row in table.to_dict("records"):
        correct = matrices[row["run"]].loc["correct"]
        shown = row["correct rationale"] > 0.5 and correct["greedy"] > correct["optimal"]
        model, decision = row["run"].split("/")[1], row["run"].split("/")[3]
        lines.append(
            f"- **{model} ({decision})** wrote any UCB value in {row['wrote any UCB value']:.0%} of its "
            f"{row['steps']} steps and a correct rationale in {row['correct rationale']:.0%} (paper, Gemma2 27B: "
            f"{paper.loc['B16', 'value']}%); with a correct rationale it "
            f"acted greedily in {correct['greedy']:.1f}% and optimally in {correct['optimal']:.1f}% of all steps "
            f"(paper, Gemma2 27B: {paper.loc['B10', 'value']} and {paper.loc['B11', 'value']}). "
            f"It {'shows' if shown else 'does not show'} the paper's knowing-doing gap."
        )
    return "\n".join(lines)


def knowing_doing_claims_table(
    table: pd.DataFrame, matrices: dict[str, pd.DataFrame], source: str | os.PathLike, profile: str
) -> pd.DataFrame:
    """Notebook 13's runs (``experiments.knowing_doing_summary``) in the claims schema: per run, the share of
    correct rationales (B16; the paper's effect: most of them, rule ``above`` 50% on the Wilson
    interval over steps) and the correct-and-greedy cell of the matrix (B10; the paper's gap:
    with a correct rationale, greedy more often than optimal: rule ``higher`` on the difference
    of the two cells, the exact binomial test of greedy against optimal among those steps), as
    :func:`knowing_doing_sentences` reads them. Both are gated on the model having written what
    they read (``claims.WROTE_MEASURED``: the share of steps with any UCB value) and chosen its
    own arms (``claims.OWN_DECISIONS``: the share with a valid action). ``source``: the runs' store."""
    from scipy.stats import binomtest

    from paperlib.claims import OWN_DECISIONS, WROTE_MEASURED, gated
    from paperlib.stats import wilson_ci

    rows = []
    for row in table.to_dict("records"):
        correct = matrices[row["run"]].loc["correct"]
        model = f"{row['run'].split('/')[1]} ({row['run'].split('/')[3]})"
        steps = int(row["steps"])
        gate = gated(
            WROTE_MEASURED.check(row["wrote any UCB value"], "share of steps with a UCB value"),
            OWN_DECISIONS.check(row["valid action"], "share of steps with a valid action"),
        )
        share, low, high = wilson_ci(round(row["correct rationale"] * steps), steps)
        greedy, optimal = round(correct["greedy"] * steps / 100), round(correct["optimal"] * steps / 100)
        p = binomtest(greedy, greedy + optimal).pvalue if greedy + optimal else float("nan")
        rows += [
            {
                "reported": "B16",
                "what": "share of steps with a correct rationale (%)",
                "model": model,
                "ours": 100 * share,
                "ours_low": 100 * low,
                "ours_high": 100 * high,
                "effect_if": "above 50% (our Wilson interval wholly above)",
                "rule": "above",
                "reference": 50.0,
                "gate": gate,
                "note": f"{steps} steps",
            },
            {
                "reported": "B10",
                "what": "correct rationale and greedy action minus correct rationale and optimal action (% of steps)",
                "model": model,
                "ours": correct["greedy"] - correct["optimal"],
                "effect_if": "above 0: greedy more often than optimal with a correct rationale (the knowing-doing gap)",
                "rule": "higher",
                "test": f"binomial, {greedy + optimal} steps" if p == p else "",
                "p": p,
                "gate": gate,
                "note": f"correct and greedy {correct['greedy']:.1f}%, optimal {correct['optimal']:.1f}%, "
                f"other {correct['other']:.1f}%",
            },
        ]
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "13_knowing_doing_gap", profile)
