"""Adapters against the base model on the same held-out seeds: one comparison for every trainer
and game (:func:`compare`), and the long shape notebooks 14 and 16 tabulate (:func:`before_after`).

Each row tests one label (an adapter, or a reference player) in one cell (``within``: N, a
CoT style, a run and an evaluation cell, ...) on one metric against the base model in the
same cell: the label's mean with its 95% interval (a seeded bootstrap, within the metric's
range), the base model's likewise, and
:func:`paperlib.stats.against`'s columns (the difference of means, its p and the test that
gave it: Welch's, or Mann-Whitney's where neither side varies; Hedges' g with its interval).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from paperlib.stats import against, bootstrap_mean_ci

AGAINST = ("difference", "p", "test", "g", "g_low", "g_high")  # paperlib.stats.against's columns


def compare(
    episodes: pd.DataFrame,
    metrics: Sequence[str],
    label: str = "adapter",
    within: Sequence[str] = (),
    carry: Sequence[str] = (),
    base: str = "base",
) -> pd.DataFrame:
    """One row per ``within`` cell x ``label`` x metric of held-out ``episodes``, in the order the
    (cell, label) pairs first appear: the cell and the label, the ``carry`` columns' values in the
    pair's first episode (its step, its model, ...), ``metric``, ``episodes``, ``mean``, ``ci_low``,
    ``ci_high``, the base model's ``base_mean``, ``base_ci_low``, ``base_ci_high`` in that cell, and
    for a label other than ``base`` the :data:`AGAINST` columns, label minus base. Every label
    must have played the base model's seeds in its cell; refused in one line otherwise."""
    keys = [*within, label]
    rows = []
    for key, group in episodes.groupby(keys, sort=False):
        cell = dict(zip(keys, key))
        control = episodes[
            (episodes[label] == base) & np.logical_and.reduce([episodes[k] == cell[k] for k in within] or [True])
        ]
        name = cell[label]
        if name != base and sorted(group["seed"]) != sorted(control["seed"]):
            where = "".join(f" {k} {cell[k]}" for k in within)
            raise ValueError(f"{name!r} was not played on the base model's held-out seeds{where and ' in' + where}")
        first = {column: group[column].iloc[0] for column in carry}
        for metric in metrics:
            mean, low, high = bootstrap_mean_ci(group[metric])
            base_mean, base_low, base_high = bootstrap_mean_ci(control[metric])
            row = {
                **cell,
                **first,
                "metric": metric,
                "episodes": len(group),
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                "base_mean": base_mean,
                "base_ci_low": base_low,
                "base_ci_high": base_high,
            }
            rows.append(row if name == base else {**row, **against(group[metric], control[metric])})
    return pd.DataFrame(rows)


def before_after(
    episodes: pd.DataFrame, metrics: Sequence[str], base: str = "base", within: Sequence[str] = ()
) -> pd.DataFrame:
    """:func:`compare`'s rows of each ``adapter`` (the base model's own included) in the RLFT
    notebooks' columns: ``within``, ``adapter``, ``update``, ``model``, ``metric``, ``mean``,
    ``ci_low``, ``ci_high``, ``n`` (the episodes) and, beside the base model, :data:`AGAINST`."""
    table = compare(episodes, metrics, "adapter", within, carry=("update", "model"), base=base)
    table = table.rename(columns={"episodes": "n"})
    columns = [*within, "adapter", "update", "model", "metric", "mean", "ci_low", "ci_high", "n", *AGAINST]
    return table[[c for c in columns if c in table]]
