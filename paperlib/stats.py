"""Interval estimates and two-sample tests used by every table.

Thin wrappers over scipy and statsmodels, so each notebook reports the same
statistics the same way.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats as _st

ALPHA = 0.05  # the significance level every computed sentence uses [ours: the conventional one]


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t confidence interval; (mean, mean, mean) for one value."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else math.nan
    if x.size < 2 or np.all(x == x[0]):
        return mean, mean, mean
    half = _st.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return mean, float(mean - half), float(mean + half)


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
    """Standardised mean difference (treatment - control) with the small-sample correction."""
    a, b = np.asarray(treatment, float), np.asarray(control, float)
    na, nb = a.size, b.size
    pooled = math.sqrt(((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / (na + nb - 2))
    if pooled == 0:
        return 0.0 if a.mean() == b.mean() else math.copysign(math.inf, a.mean() - b.mean())
    correction = 1 - 3 / (4 * (na + nb) - 9)
    return float((a.mean() - b.mean()) / pooled * correction)


def hedges_g_ci(treatment, control, confidence: float = 0.95) -> tuple[float, float, float]:
    """Hedges' g and its normal-approximation interval, with the standard error
    sqrt((na + nb) / (na nb) + g^2 / (2 (na + nb))) (Hedges and Olkin 1985, eq. 5.15)."""
    g = hedges_g(treatment, control)
    na, nb = len(treatment), len(control)
    if not math.isfinite(g):
        return g, math.nan, math.nan
    half = _st.norm.ppf(0.5 + confidence / 2) * math.sqrt((na + nb) / (na * nb) + g * g / (2 * (na + nb)))
    return g, g - half, g + half
