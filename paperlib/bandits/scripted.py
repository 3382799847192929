"""A scripted knowing-doing agent: completions whose rationale and action class are chosen,
so the knowing-doing matrix of its steps is known before it is computed.

At every step and instance the agent draws whether its rationale is correct
(probability ``p_correct``) and which class its action belongs to (``mix`` over
optimal, greedy, other, renormalised over the classes possible at that step: greedy
needs an untried arm beside a tried one, other an arm that is neither), then writes a
completion in the knowing-doing format: the UCB rule, a ``<ucb_values>`` block and
``ACTION=<arm>``. A correct rationale lists the true UCB values (``metrics.ucb_values``,
six decimals, ``inf`` for an untried arm); a wrong one lists the same values but gives
a tried, truly non-top arm ``inf``, as if it were untried (when every arm is truly top,
e.g. before the first step, the block is left empty: no value at all is wrong). The
values are written in two forms (``blue: 0.812345`` and ``green = 0.4 + 0.41 = 0.812345``)
so both of the parser's rules are used.

Its intentions are step columns (``intended_rationale``, ``intended_class``), and
``metrics.knowing_doing_matrix`` of its judged steps must equal the matrix of those
intentions exactly: the validation of notebook 13.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paperlib.bandits.baselines import UCB_ALPHA
from paperlib.bandits.env import AGENT_STREAM, BanditSpec, History, generator
from paperlib.bandits.metrics import ACTION_CLASSES, ucb_values
from paperlib.decisions import Decisions


class ScriptedKnowingDoingAgent:
    name, model, cot = "scripted_knowing_doing", "scripted:knowing_doing", True

    def __init__(self, p_correct: float = 0.8, mix: Sequence[float] = (0.3, 0.5, 0.2)):
        if not 0 <= p_correct <= 1 or len(mix) != 3 or min(mix) < 0 or sum(mix) <= 0:
            raise ValueError(f"p_correct must be in [0, 1] and mix three non-negative weights, got {p_correct}, {mix}")
        self.p_correct, self.mix = p_correct, np.asarray(mix, float)

    def reset(self, spec: BanditSpec, seeds: Sequence[int]) -> None:
        self.spec, self.rng = spec, generator(AGENT_STREAM, seeds)

    def act(self, history: History) -> Decisions:
        actions, texts, rationales, classes = [], [], [], []
        for counts, means in zip(history.counts, history.means):
            true = ucb_values(counts, means, history.t, UCB_ALPHA)
            top, tried = true == true.max(), counts > 0
            greedy = tried & ~top & (true == (true[tried].max() if tried.any() else np.nan))
            arms_of = {"optimal": top, "greedy": greedy, "other": ~top & ~greedy}
            possible = np.array([arms_of[c].any() for c in ACTION_CLASSES])
            weights = self.mix * possible
            if not weights.sum():  # every wanted class impossible here: optimal always exists
                weights = possible.astype(float)
            kind = ACTION_CLASSES[self.rng.choice(3, p=weights / weights.sum())]
            action = int(self.rng.choice(np.flatnonzero(arms_of[kind])))
            correct = bool(self.rng.random() < self.p_correct)
            values = true.copy()
            if not correct and (~top).any():
                values[self.rng.choice(np.flatnonzero(~top))] = np.inf
            elif not correct:
                values[:] = np.nan  # nothing written
            actions.append(action)
            texts.append(self._text(values, means, counts, history.t, action))
            rationales.append("correct" if correct else "wrong")
            classes.append(kind)
        return Decisions(np.array(actions), texts, {"intended_rationale": rationales, "intended_class": classes})

    def _text(self, values, means, counts, t, action) -> str:
        names = self.spec.names
        lines = []
        for a, value in enumerate(values):
            if np.isnan(value):
                continue
            shown = "inf" if np.isinf(value) else f"{value:.6f}"
            if a % 2 and counts[a] > 0 and np.isfinite(value):
                lines.append(f"{names[a]} = {means[a]:.2f} + {value - means[a]:.2f} = {shown}")
            else:
                lines.append(f"{names[a]}: {shown}")
        block = "\n".join(lines)
        return (
            f"UCB(a) = mean(a) + sqrt({UCB_ALPHA} * ln(t) / n(a)) with t = {t}.\n"
            f"<ucb_values>\n{block}\n</ucb_values>\nACTION={names[action]}"
        )
