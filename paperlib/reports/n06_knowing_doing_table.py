"""Notebook 06 (paper B's knowing-doing lens on paper A's table): what it says about the
classified turns of ``philosophers.knowing_doing.run_lens``: per model, adapter and N, knowing
against doing and which way the gap points (:func:`lens_sentences`, from ``knowing_vs_doing``),
and whether a trained adapter changed knowing, doing, both or neither against the base model
(:func:`adapter_change`, the table, and :func:`adapter_sentences`)."""

from __future__ import annotations

import pandas as pd


def adapter_change(classified: pd.DataFrame, base: str = "base") -> pd.DataFrame:
    """Per model, N and adapter other than ``base``: the share of turns with a right rationale
    (knowing) and with a sensible action (doing) under the base model and the adapter, and
    Welch's p on the per-episode shares (turns of one episode are not independent, episodes
    are), the two sides on the same episode seeds."""
    from paperlib.stats import welch

    per_episode = (
        classified.assign(sensible=classified["action_class"] == "sensible")
        .groupby(["model", "n", "adapter", "seed"], sort=False)[["rationale_right", "sensible"]]
        .mean()
        .reset_index()
    )
    rows = []
    for (model, n), cell in per_episode.groupby(["model", "n"], sort=False):
        control = cell[cell["adapter"] == base]
        for adapter, trained in cell[cell["adapter"] != base].groupby("adapter", sort=False):
            if control.empty or sorted(trained["seed"]) != sorted(control["seed"]):
                raise ValueError(f"{adapter!r} of {model} at N = {n} was not played on the base model's episodes")
            row = {"model": model, "n": n, "adapter": adapter, "episodes": len(trained)}
            for name, column in (("knowing", "rationale_right"), ("doing", "sensible")):
                row[f"{name}_base"], row[name] = control[column].mean(), trained[column].mean()
                row[f"{name}_p"] = welch(trained[column], control[column])[1]
            rows.append(row)
    return pd.DataFrame(rows)


def adapter_sentences(change: pd.DataFrame) -> str:
    """Whether each adapter changed knowing, doing, both or neither (Welch at ALPHA), from
    :func:`adapter_change`'s rows."""
    from paperlib.stats import ALPHA

    lines = []
    for row in change.itertuples():
        moved = [name for name in ("knowing", "doing") if getattr(row, f"{name}_p") < ALPHA]
        verdict = {0: "neither changed significantly", 2: "both changed"}.get(
            len(moved), f"only {''.join(moved)} changed"
        )
        lines.append(
            f"- **{row.model}**, {row.adapter} against the base model (N = {row.n}, {row.episodes} episodes each): "
            f"right rationale {row.knowing_base:.0%} → {row.knowing:.0%} (p = {row.knowing_p:.2g}), sensible action "
            f"{row.doing_base:.0%} → {row.doing:.0%} (p = {row.doing_p:.2g}): {verdict} at p < {ALPHA}."
        )
    return "\n".join(lines)


def lens_sentences(summary: pd.DataFrame, paper: pd.DataFrame | None = None) -> str:
    """What the runs show, as Markdown computed from ``knowing_vs_doing`` rows: per model,
    adapter and N, knowing against doing with intervals, and which way the gap points;
    paper B's bandit matrix (``paper``: its ids B10-B15 as rows of data/paper_reported.csv)
    as the reference it is not: a different game and model."""
    lines = []
    for row in summary.itertuples():
        if row.no_rationale_low > 0.5:
            verdict = (
                "this prompt does not measure what it knows: it wrote no readable rationale in most turns, and "
                "its wrong-rationale row is mostly missing rationales"
            )
        elif row.knowing_low > row.doing_high:
            verdict = "it knew the sensible tool more often than it used it: a knowing-doing gap, as paper B found"
        elif row.doing_low > row.knowing_high:
            verdict = "it acted sensibly more often than it could say what was sensible: doing ahead of knowing"
        else:
            verdict = "knowing and doing do not differ beyond their intervals at this sample size"
        lines.append(
            f"- **{row.model}** ({row.adapter}, N = {row.n}, {row.turns} turns): a right rationale in "
            f"{row.knowing:.0%} [{row.knowing_low:.0%}, {row.knowing_high:.0%}] of turns, a sensible action in "
            f"{row.doing:.0%} [{row.doing_low:.0%}, {row.doing_high:.0%}]; no readable rationale in "
            f"{row.no_rationale:.0%}. So {verdict}."
        )
    if paper is not None and len(paper):
        correct = paper.loc[paper["id"].isin(["B10", "B11", "B12"]), "value"].astype(float).sum()
        greedy = float(paper.loc[paper["id"] == "B10", "value"].iloc[0])
        lines.append(
            f"- For reference only (another game, another model): paper B's Gemma2 27B on bandits had a correct "
            f"rationale in {correct:.1f}% of steps by its matrix (its text says 87%) and still acted greedily "
            f"in {greedy:.1f}% of all steps with a correct rationale (B10-B12)."
        )
    return "\n".join(lines)
