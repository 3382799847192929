"""Interval estimates and two-sample tests used by every table.

Thin wrappers over scipy and statsmodels, so each notebook reports the same
statistics the same way.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as _st

ALPHA = 0.05  # the significance level every computed sentence uses [ours: the conventional one]


def wilson_ci(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """Proportion and its Wilson score interval."""
    from statsmodels.stats.proportion import proportion_confint

    if trials == 0:
        return math.nan, math.nan, math.nan
    low, high = proportion_confint(successes, trials, alpha=1 - confidence, method="wilson")
    return successes / trials, float(low), float(high)


def welch(a, b) -> tuple[float, float]:
    """Welch's t-test: (t statistic, two-sided p-value); both NaN when neither sample varies
    (the test is undefined). When one sample is constant the test is still defined (its
    variance is the other's), and scipy's warning of precision loss in that sample's
    moments is silenced."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred in moment calculation", RuntimeWarning)
        result = _st.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def difference_p(a, b) -> tuple[float, str]:
    """Two-sided p of a difference in means between samples ``a`` and ``b``, and the test that
    gave it: Welch's t-test, or, where neither sample varies and they differ (Welch undefined;
    e.g. every base-model move invalid and every adapter move valid), the Mann-Whitney U test
    **[ours]**, for which complete separation is the strongest evidence; NaN when the two
    samples are one and the same constant."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        if a[0] == b[0]:
            return math.nan, "none: no variation"
        return float(_st.mannwhitneyu(a, b, alternative="two-sided").pvalue), "mann-whitney"
    return welch(a, b)[1], "welch"


def against(treatment, control) -> dict:
    """``treatment`` against ``control``, the columns every before/after table gives: the
    difference of means, its p and the test that gave it (:func:`difference_p`), and Hedges' g
    with its 95% interval (:func:`hedges_g_ci`)."""
    p, test = difference_p(treatment, control)
    g, g_low, g_high = hedges_g_ci(treatment, control)
    return {
        "difference": float(np.mean(treatment) - np.mean(control)),
        "p": p,
        "test": test,
        "g": g,
        "g_low": g_low,
        "g_high": g_high,
    }


def hedges_g(treatment, control) -> float:
    """Standardised mean difference (treatment - control) with the small-sample correction; NaN
    where a side does not vary (:func:`no_variance`: a pooled deviation from one side alone
    standardises nothing, so no effect size is reported)."""
    a, b = np.asarray(treatment, float), np.asarray(control, float)
    na, nb = a.size, b.size
    if no_variance(treatment=a, control=b):
        return math.nan
    pooled = math.sqrt(((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2))
    correction = 1 - 3 / (4 * (na + nb) - 9)
    return float((a.mean() - b.mean()) / pooled * correction)


def hedges_g_ci(treatment, control, confidence: float = 0.95) -> tuple[float, float, float]:
    """Hedges' g and its normal-approximation interval, with the standard error
    sqrt((na + nb) / (na nb) + g^2 / (2 (na + nb))) (Hedges and Olkin 1985, eq. 5.15); all NaN
    where a side does not vary."""
    g = hedges_g(treatment, control)
    na, nb = len(treatment), len(control)
    if not math.isfinite(g):
        return g, math.nan, math.nan
    half = _st.norm.ppf(0.5 + confidence / 2) * math.sqrt((na + nb) / (na * nb) + g * g / (2 * (na + nb)))
    return g, g - half, g + half


# --- what the claims' verdict rule (paperlib.claims) rests on -------------------------------------

BOOTSTRAP_RESAMPLES = 4000  # resamples of every bootstrap interval [ours: the percentile ends move < 0.01]
BOOTSTRAP_SEED = 0  # the bootstrap's seed, so that a rebuild draws the same resamples [ours]


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (statsmodels ``multipletests``);
    NaN (no test) stays NaN and is not counted in the family."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, math.nan)
    tested = ~np.isnan(p)
    if tested.any():
        adjusted[tested] = multipletests(p[tested], alpha=ALPHA, method="holm")[1]
    return adjusted


def bootstrap_mean_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and its seeded percentile-bootstrap interval: every resampled mean is a mean of
    observed values, so the interval never leaves their range (a bounded quantity's interval
    stays within its bounds); (mean, mean, mean) for one value or none that vary."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else math.nan
    if x.size < 2 or np.ptp(x) == 0:
        return mean, mean, mean
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = x[rng.integers(0, x.size, (BOOTSTRAP_RESAMPLES, x.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return mean, float(low), float(high)


def bootstrap_difference_ci(treatment, control, confidence: float = 0.95) -> tuple[float, float, float]:
    """Difference of means (treatment - control) of two independent samples and its seeded
    percentile-bootstrap interval (each side resampled on its own); within the possible range."""
    a, b = np.asarray(treatment, float), np.asarray(control, float)
    difference = float(a.mean() - b.mean())
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return difference, difference, difference
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    resampled = a[rng.integers(0, a.size, (BOOTSTRAP_RESAMPLES, a.size))].mean(axis=1) - b[
        rng.integers(0, b.size, (BOOTSTRAP_RESAMPLES, b.size))
    ].mean(axis=1)
    low, high = np.quantile(resampled, [(1 - confidence) / 2, (1 + confidence) / 2])
    return difference, float(low), float(high)


def paired_p(treatment, control) -> tuple[float, str]:
    """Two-sided p of a paired difference (the same seeds, instances or games on both sides) and
    the test that gave it: the paired t-test, or, where the differences do not vary (the
    t-test is undefined), the Wilcoxon signed-rank test; NaN where every difference is 0."""
    d = _differences(treatment, control)
    if not np.any(d):
        return math.nan, "none: every pair equal"
    if np.ptp(d) == 0:
        return float(_st.wilcoxon(d).pvalue), "wilcoxon"
    return float(_st.ttest_1samp(d, 0.0).pvalue), "paired t"


def _differences(treatment, control) -> np.ndarray:
    """Paired differences, rounded to 12 decimals so that pairs that differ by one and the same
    amount (up to floating-point noise) count as not varying, where a t-test is undefined."""
    return np.round(np.asarray(treatment, float) - np.asarray(control, float), 12)


def tost(treatment, control, margin: float, paired: bool) -> float:
    """p of the two one-sided tests (TOST, statsmodels ``ttost_paired`` / ``ttost_ind``, Welch)
    that the difference of means lies within +-``margin``: below ALPHA, the two are equivalent
    at that margin. NaN where the margin is not positive or the difference does not vary (the
    t-tests are undefined)."""
    from statsmodels.stats.weightstats import ttost_ind, ttost_paired

    a, b = np.asarray(treatment, float), np.asarray(control, float)
    varies = np.ptp(_differences(a, b)) > 0 if paired else (np.ptp(a) > 0 or np.ptp(b) > 0)
    if not (margin > 0) or not varies:
        return math.nan
    if paired:
        return float(ttost_paired(a, b, -margin, margin)[0])
    return float(ttost_ind(a, b, -margin, margin, usevar="unequal")[0])


def pooled_sd(treatment, control, paired: bool) -> float:
    """The standard deviation a standardised effect divides by: of the differences (paired,
    Cohen's d_z) or pooled over the two samples."""
    a, b = np.asarray(treatment, float), np.asarray(control, float)
    if paired:
        return float(np.std(_differences(a, b), ddof=1)) if a.size > 1 else math.nan
    if a.size + b.size < 3:
        return math.nan
    return math.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))


def no_variance(**sides) -> str:
    """Which of the named samples do not vary (e.g. ``no_variance(adapter=x, base=y)``), in words;
    empty where every one does. Where a side does not vary no standardised effect is reported."""
    still = [name for name, values in sides.items() if np.ptp(np.asarray(values, float)) == 0]
    return " and ".join(still)


def correlation_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Pearson correlation over ``n`` cases: within [-1, 1]."""
    if n < 4 or not math.isfinite(r) or abs(r) == 1:
        return math.nan, math.nan
    z, half = math.atanh(r), _st.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    return math.tanh(z - half), math.tanh(z + half)


def paired_sides(frame, side: str, value: str, treatment, control, keys) -> tuple[np.ndarray, np.ndarray]:
    """``value`` of the ``treatment`` and ``control`` rows of ``frame`` (``side`` names which),
    paired by ``keys`` (the seeds, instances or games both sides played): per key each side's
    mean, so that several rows of one key (an adapter trained with several seeds, each playing
    the key) pool into one pair; only keys both sides have."""
    rows = frame[frame[side].isin([treatment, control])]
    means = rows.groupby([side, *keys])[value].mean().unstack(side).dropna()
    if treatment not in means or control not in means:
        return np.array([]), np.array([])
    return means[treatment].to_numpy(float), means[control].to_numpy(float)


def mcnemar_p(treatment, control) -> float:
    """Two-sided exact McNemar p of two paired binary outcomes (the same cases on both sides): the
    binomial test of the discordant pairs; NaN where no pair differs."""
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(treatment, bool), np.asarray(control, bool)
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    if only_a + only_b == 0:
        return math.nan
    return float(mcnemar([[int((a & b).sum()), only_a], [only_b, int((~a & ~b).sum())]], exact=True).pvalue)


def per_seed_differences(
    frame, side: str, value: str, treatment, control, keys, seed: str = "train_seed"
) -> dict[object, float]:
    """Where ``frame`` holds several training seeds (``seed``, on the treatment's rows), the mean
    paired difference of ``value`` (treatment - control, by ``keys``) for each seed alone: the
    per-seed results beside the pooled test of :func:`paired_sides`; empty where there is one seed
    or none. A control evaluated once (no seed on its rows, e.g. the base model) is every seed's; a
    control trained with the same seeds (RLFT without the bonus against with it) is the seed's own."""
    if seed not in frame:
        return {}
    seeds = frame.loc[frame[side] == treatment, seed].dropna().unique()
    if len(seeds) < 2:
        return {}
    control_rows = frame[frame[side] == control]
    seeded = control_rows[seed].notna().any()
    out = {}
    for s in sorted(seeds):
        own_control = control_rows[control_rows[seed] == s] if seeded else control_rows
        rows = pd.concat([frame[(frame[side] == treatment) & (frame[seed] == s)], own_control])
        a, b = paired_sides(rows, side, value, treatment, control, keys)
        out[s] = float(np.mean(a - b)) if a.size else math.nan
    return out


def seeds_in_words(differences: dict) -> str:
    """:func:`per_seed_differences` in words ("" where empty)."""
    if not differences:
        return ""
    named = {int(s) if isinstance(s, float) and s.is_integer() else s: d for s, d in differences.items()}
    return "per training seed: " + ", ".join(f"{s}: {d:+.3f}" for s, d in named.items())
