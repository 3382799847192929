"""Paper B's bandit metrics: regret, coverage, frequency bias and the knowing-doing gap.

Regret and coverage work on (M, T) arrays of arm indices. The frequency-bias study
builds its own histories and takes a model's scores of every arm as input, so no
model code lives here. The knowing-doing study judges completions and actions against
the true UCB values of the history the model saw.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from paperlib.bandits.baselines import UCB_ALPHA
from paperlib.bandits.env import AGENT_STREAM, BanditEnv, BanditSpec, generator

# -- regret and coverage ---------------------------------------------------------


def cumulative_regret(means: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """sum over s <= t of (mu* - mu_{a_s}), per instance (rows) and step (columns)."""
    means = np.asarray(means, float)
    played = np.take_along_axis(means, np.asarray(actions), axis=1)
    return np.cumsum(means.max(axis=1, keepdims=True) - played, axis=1)


def coverage(actions: np.ndarray, k: int) -> np.ndarray:
    """Fraction of the k arms tried at least once by step t, per instance and step."""
    actions = np.asarray(actions)
    tried = np.maximum.accumulate(actions[:, :, None] == np.arange(k), axis=1)
    return tried.sum(axis=2) / k


# -- frequency bias ---------------------------------------------------------------

STRATEGIES = ("frequent", "greedy", "other")
REPETITIONS = range(0, 101)
HISTORY_LENGTHS = range(2, 11)
WINDOW = 10


def frequency_bias_cases(
    spec: BanditSpec,
    seed: int = 0,
    lengths: Sequence[int] = HISTORY_LENGTHS,
    repetitions: Sequence[int] = REPETITIONS,
    histories: int = 1,
) -> pd.DataFrame:
    """Random-policy histories with their last action repeated, one row per case.

    For each length L and each of ``histories`` bandit instances (seeded S, S+1, ...),
    a uniformly random policy plays L steps; each number r of ``repetitions`` then
    gives the case "those L steps plus the last action r more times", the repeated
    rewards drawn from that arm as usual. All r share the same L steps **[ours]**, so
    within a history only the repetitions vary.
    """
    most = max(repetitions)
    rows = []
    for instance, (length, h) in enumerate(itertools.product(lengths, range(histories)), start=seed):
        env = BanditEnv(replace(spec, horizon=length + most), [instance])
        start = generator(AGENT_STREAM, instance).integers(spec.k, size=length)
        for a in np.concatenate([start, np.full(most, start[-1])]):
            env.step([a])
        actions, rewards = env.history.actions[0], env.history.rewards[0]
        for r in repetitions:
            rows.append(
                {
                    "length": length,
                    "history": h,
                    "seed": instance,
                    "repetitions": r,
                    "actions": actions[: length + r].tolist(),
                    "rewards": rewards[: length + r].tolist(),
                }
            )
    return pd.DataFrame(rows)


def _frequent_and_greedy(actions: Sequence[int], rewards: Sequence[float], k: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(actions, minlength=k)
    sums = np.bincount(actions, weights=rewards, minlength=k)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
    return counts == counts.max(), means == means.max()


def strategy(predicted: int, actions: Sequence[int], rewards: Sequence[float], k: int) -> str:
    """``greedy`` (best mean reward so far), ``frequent`` (most often played) or ``other``.

    Our reading of "greedy wins ties with frequent" **[ours]**: an arm that is both the
    greedy and the most frequent one counts as greedy. Several arms can share the top
    count or the top mean; the prediction belongs to a class when it is any of them.
    """
    frequent, greedy = _frequent_and_greedy(np.asarray(actions, int), np.asarray(rewards, float), k)
    if greedy[predicted]:
        return "greedy"
    return "frequent" if frequent[predicted] else "other"


def frequency_bias(cases: pd.DataFrame, scores: np.ndarray, spec: BanditSpec) -> pd.DataFrame:
    """Each case with its action distribution, entropy, prediction and strategy.

    ``scores`` holds the log-probability of every arm's continuation, shape (cases, k)
    in arm order (a model's: ``paperlib.bandits.llm.frequency_bias_scores``, one
    batched scoring pass over the no-CoT prompt of every case and ``ACTION=``). The
    distribution is the softmax over arms; entropy is in nats; the prediction is its argmax.
    """
    scores = np.asarray(scores, float)
    if scores.shape != (len(cases), spec.k):
        raise ValueError(f"expected scores of shape {(len(cases), spec.k)}, got {scores.shape}")
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs = weights / weights.sum(axis=1, keepdims=True)
    predicted = scores.argmax(axis=1)
    out = cases.copy()
    out["probs"] = list(probs)
    out["entropy"] = -(probs * np.log(np.where(probs > 0, probs, 1))).sum(axis=1)
    out["predicted"] = predicted
    out["strategy"] = [strategy(p, a, r, spec.k) for p, a, r in zip(predicted, cases["actions"], cases["rewards"])]
    return out


def strategy_shares(result: pd.DataFrame, width: int = WINDOW) -> pd.DataFrame:
    """Share of each strategy per repetition window, plus an ``all`` row.

    Windows are [0, 10), [10, 20), ... with the last one closed, so 0..100
    repetitions give ten windows and 100 falls in 90-100 **[ours]**.
    """
    repetitions = result["repetitions"].to_numpy()
    last = max(int(repetitions.max()) - 1, 0) // width * width
    low = np.minimum(repetitions // width * width, last)
    table = pd.crosstab(low, result["strategy"].to_numpy(), normalize="index")
    table.index = [f"{lo}-{lo + width}" for lo in table.index]
    table.loc["all"] = result["strategy"].value_counts(normalize=True)
    return table.reindex(columns=list(STRATEGIES)).fillna(0.0).rename_axis(index="repetitions", columns=None)


def entropy_correlation(result: pd.DataFrame) -> tuple[float, float]:
    """Pearson's r (and its p-value) between repetitions and entropy over all cases.

    The paper prints one correlation per model (-0.67 for Gemma2 2B, +0.61 for 27B)
    without naming it; we take Pearson over cases, not over per-repetition means **[ours]**.
    """
    r, p = stats.pearsonr(result["repetitions"], result["entropy"])
    return float(r), float(p)


# -- knowing-doing gap ---------------------------------------------------------------

ACTION_CLASSES = ("optimal", "greedy", "other")


def ucb_values(counts, means, t: int, c: float = UCB_ALPHA) -> np.ndarray:
    """mean + sqrt(c ln t / n) per arm, +inf for an arm not tried yet."""
    counts, means = np.asarray(counts, float), np.asarray(means, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = means + np.sqrt(c * math.log(max(t, 1)) / counts)
    return np.where(counts > 0, values, np.inf)


def classify_action(counts, means, action: int, t: int, c: float = UCB_ALPHA) -> str:
    """``optimal`` (highest true UCB), ``greedy`` (highest UCB among tried arms) or ``other``.

    ``counts`` and ``means`` per arm are those after t steps, before ``action``. This is
    paper B's definition (Fig. 5): greedy is the tried arm with the highest *UCB*, not the highest
    empirical mean, and an action that is both counts as optimal. So once every arm
    has been tried the two coincide and no action is greedy.
    """
    values = ucb_values(counts, means, t, c)
    if values[action] == values.max():
        return "optimal"
    tried = np.asarray(counts) > 0
    return "greedy" if tried[action] and values[action] == values[tried].max() else "other"


_BLOCK = re.compile(r"<ucb_values>(.*?)(?:</ucb_values>|$)", re.IGNORECASE | re.DOTALL)
_SEGMENT = re.compile(r"\n|;|,(?=\s*[^\s\d.])")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?|inf(?:inity|inite)?\b|∞", re.IGNORECASE)


def parse_ucb_values(text: str, arm_names: Sequence[str]) -> np.ndarray:
    """Per-arm values from the last ``<ucb_values>`` block; NaN for an arm not given.

    Tolerant **[ours]**: a missing closing tag (a truncated completion), one entry per
    line or separated by ``;`` or ``,``; an entry starts with the arm's name (in any
    case, after bullets, markdown, ``UCB(``, ``arm`` or ``button``); its value is the
    first number after the last ``=`` if there is one (``blue: 0.5 + 0.3 = 0.8``),
    else the first number after the name; ``inf``, ``infinity``, ``infinite`` and ∞
    mean +inf. A later entry for the same arm replaces an earlier one.
    """
    values = np.full(len(arm_names), np.nan)
    blocks = _BLOCK.findall(text or "")
    if not blocks:
        return values
    names = sorted(arm_names, key=len, reverse=True)
    entry = re.compile(
        r"^\W*(?:ucb\W*)?(?:arm|button)?\W*(?P<name>" + "|".join(map(re.escape, names)) + r")(?![a-z0-9])(?P<rest>.*)$",
        re.IGNORECASE | re.DOTALL,
    )
    index = {name.lower(): a for a, name in enumerate(arm_names)}
    for segment in _SEGMENT.split(blocks[-1]):
        match = entry.match(segment.strip())
        if not match:
            continue
        rest = match.group("rest")
        number = _NUMBER.search(rest[rest.rfind("=") + 1 :] if "=" in rest else rest)
        if number:
            token = number.group().lower()
            values[index[match.group("name").lower()]] = np.inf if token[:1] in "i∞" else float(token)
    return values


def rationale_correct(values: np.ndarray, counts, means, t: int, c: float = UCB_ALPHA) -> bool:
    """True when the arms the rationale ranks highest are all truly highest-UCB arms.

    Ties count both ways **[ours]**: untried arms share the top (+inf), and a rationale
    that gives inf to every untried arm, and to nothing else, is correct. A rationale
    with no value at all is wrong.
    """
    values = np.asarray(values, float)
    if np.isnan(values).all():
        return False
    true = ucb_values(counts, means, t, c)
    top = values == np.nanmax(values)
    return bool(np.all(true[top] == true.max()))


def knowing_doing(steps: pd.DataFrame, arm_names: Sequence[str], c: float = UCB_ALPHA) -> pd.DataFrame:
    """``steps`` (runner step rows) with ``ucb_values``, ``rationale_correct`` and ``action_class``.

    Each step is judged on the history before it, in its own instance; every step
    counts, an invalid one too (its action is the random arm the runner played).
    """
    k = len(arm_names)
    out = steps.sort_values(["episode", "turn"]).copy()
    parsed, correct, classes = [], [], []
    for _, rows in out.groupby("episode", sort=False):
        counts, sums = np.zeros(k), np.zeros(k)
        for t, (action, reward, text) in enumerate(zip(rows["action"], rows["reward"], rows["raw_completion"])):
            means = np.divide(sums, counts, out=np.zeros(k), where=counts > 0)
            values = parse_ucb_values(text, arm_names)
            parsed.append(values)
            correct.append(rationale_correct(values, counts, means, t, c))
            classes.append(classify_action(counts, means, int(action), t, c))
            counts[action] += 1
            sums[action] += reward
    out["ucb_values"], out["rationale_correct"], out["action_class"] = parsed, correct, classes
    return out


def knowing_doing_matrix(judged: pd.DataFrame) -> pd.DataFrame:
    """The 2 x 3 matrix of Fig. 5: rationale correct / wrong by action class, % of all steps."""
    rationale = np.where(judged["rationale_correct"], "correct", "wrong")
    table = pd.crosstab(rationale, judged["action_class"]) * 100 / len(judged)
    return table.reindex(index=["correct", "wrong"], columns=list(ACTION_CLASSES), fill_value=0.0).rename_axis(
        index="rationale", columns=None
    )
