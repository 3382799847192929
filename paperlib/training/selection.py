"""Which saved adapter a training run keeps: paper A's rule and the two it proposes.

Paper A keeps the last adapter (step 15 of 16) and reports that its training reward
peaked at step 9 and declined; it proposes checkpoint discipline instead (its second
intervention): choose by training reward, or by reward on held-out validation episodes.
A rule is a function of the run's training log (one row per step: ``step``,
``train_reward``) and, for ``best_val``, a validation table (one row per validation
episode: ``step`` and a reward column), and returns a step.

- ``last``: the last step (the paper's rule).
- ``best_train``: the adapter that earned the highest mean training reward. Row k of the log
  holds the reward of step k's rollout, played by the adapter of step k - 1 (the update comes
  after the rollout): row 1 is the base model's, and the last adapter never played in
  training. So the rule chooses among the adapters of steps 1 .. K - 1, by rows 2 .. K.
- ``best_val``: the step with the highest mean reward on validation episodes, whose seeds
  are disjoint from training and from the final evaluation; every saved step must be
  evaluated, so a partial validation table is refused rather than read as complete.

Ties go to the earliest step **[ours]**: the adapter with the fewest updates among equals.
A log whose steps are not 1, 2, ..., K (a gap, a repeat) is not a finished run's and is
refused; so are validation rows of steps the log does not have. :func:`by_selection` labels
the evaluation's episodes by the rule that keeps each adapter.
"""

from __future__ import annotations

import pandas as pd

RULES = ("last", "best_train", "best_val")


def _steps(log: pd.DataFrame) -> list[int]:
    if log is None or not len(log):
        raise ValueError("the training log is empty: no step to select")
    steps = sorted(int(s) for s in log["step"])
    if steps != list(range(1, len(steps) + 1)):
        missing = sorted(set(range(1, max(steps) + 1)) - set(steps))
        raise ValueError(
            f"the training log's steps are not 1..{max(steps)} once each"
            + (f" (missing {', '.join(map(str, missing))})" if missing else " (a step repeats)")
        )
    return steps


def _earliest_best(means: pd.Series, what: str) -> int:
    """The step (index) of the highest mean, the earliest among ties; NaN means are skipped."""
    means = means.dropna()
    if means.empty:
        raise ValueError(f"no {what} to select by (all missing)")
    best = means.max()
    return int(min(step for step, value in means.items() if value == best))


def last(log: pd.DataFrame, validation: pd.DataFrame | None = None, column: str = "reward") -> int:
    return _steps(log)[-1]


def best_train(log: pd.DataFrame, validation: pd.DataFrame | None = None, column: str = "reward") -> int:
    steps = _steps(log)
    if len(steps) < 2:
        raise ValueError(
            "best_train needs two steps at least: step k's training reward is the adapter of step k - 1's, "
            "so a one-step log holds none of a saved adapter"
        )
    earned = log.set_index("step")["train_reward"].drop(1)
    earned.index = earned.index - 1  # the adapter that played the rollout
    return _earliest_best(earned, "training reward")


def best_val(log: pd.DataFrame, validation: pd.DataFrame | None = None, column: str = "reward") -> int:
    """``column``: the validation table's reward column (the paper's ``reward`` by default)."""
    steps = _steps(log)
    if validation is None or not len(validation):
        raise ValueError("best_val needs a validation table: one row per validation episode of every saved step")
    evaluated = set(int(s) for s in validation["step"])
    unknown = sorted(evaluated - set(steps))
    if unknown:
        raise ValueError(f"validation rows of steps the training log does not have: {', '.join(map(str, unknown))}")
    unevaluated = sorted(set(steps) - evaluated)
    if unevaluated:
        raise ValueError(
            f"steps without validation episodes: {', '.join(map(str, unevaluated))}; "
            f"best_val needs every saved step evaluated"
        )
    return _earliest_best(validation.groupby("step")[column].mean(), f"validation {column}")


def select(rule: str, log: pd.DataFrame, validation: pd.DataFrame | None = None, column: str = "reward") -> int:
    """The step that ``rule`` (one of :data:`RULES`) keeps."""
    rules = {"last": last, "best_train": best_train, "best_val": best_val}
    if rule not in rules:
        raise ValueError(f"unknown selection rule {rule!r}; choose one of {', '.join(RULES)}")
    return rules[rule](log, validation, column)


def by_selection(played: pd.DataFrame, chosen: dict, base: str = "base") -> pd.DataFrame:
    """The evaluation's episodes labelled by ``selection``: the base model's rows as ``base``, and
    for each rule of ``chosen`` (rule -> step) the rows of that step's adapter (``step-<k>``, as
    ``paperlib.philosophers.training.play_adapters`` labels them), repeated when two rules keep
    the same step."""
    parts = [played[played["adapter"] == base].assign(selection=base)]
    for rule, step in chosen.items():
        rows = played[played["adapter"] == f"step-{step}"]
        if rows.empty:
            raise ValueError(f"no evaluation episodes of step {step}, which {rule} keeps")
        parts.append(rows.assign(selection=rule))
    return pd.concat(parts, ignore_index=True)
