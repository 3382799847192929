"""The bandit figures (notebooks 11-13): the same data draws the same pixels, and every
line is named in the legend."""

import io

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from paperlib import plots
from paperlib.bandits.metrics import STRATEGIES

LABELS = ("ucb", "random", "tiny-lm CoT", "tiny-lm no CoT (free)")
TURNS = 6


def _steps():
    """Step rows of four runs: the baselines on 5 and 10 arms at two noise levels, the LLM
    runs on 10 arms at low noise only (as on ``cpu``, where the 5-arm panel has no LLM)."""
    rng = np.random.default_rng(1)
    rows = []
    for label in LABELS:
        llm = label.startswith("tiny-lm")
        for arms in (10,) if llm else (5, 10):
            for noise in ("low",) if llm else ("low", "medium"):
                for episode in range(3):
                    for turn in range(1, TURNS + 1):
                        rows.append(
                            {
                                "label": label,
                                "arms": arms,
                                "noise": noise,
                                "episode": episode,
                                "turn": turn,
                                "coverage": rng.uniform(0, 1),
                                "regret": turn * rng.uniform(0, 0.5),
                            }
                        )
    return pd.DataFrame(rows)


def _summary():
    return pd.DataFrame(
        {
            "label": ["tiny-lm CoT", "tiny-lm no CoT", "tiny-lm no CoT", "ucb"],
            "decision": ["constrained", "constrained", "free", None],
            "arms": [10, 10, 10, 10],
            "coverage": [0.1, 0.2, 0.5, 1.0],
            "regret": [9.0, 8.0, 6.0, 2.0],
            "valid": [1.0, 1.0, 0.78, 1.0],
        }
    )


def _frequency_result(seed):
    """Many cases per repetition count with scattered entropies: what a bootstrap resamples."""
    rng = np.random.default_rng(seed)
    repetitions = np.repeat(np.arange(0, 50, 5), 8)
    return pd.DataFrame(
        {
            "repetitions": repetitions,
            "entropy": rng.uniform(0, 2.3, len(repetitions)),
            "strategy": rng.choice(STRATEGIES, len(repetitions)),
        }
    )


FIGURES = {
    "coverage": lambda: plots.bandit_coverage(_steps(), [(10, 0.4, "2B CoT")], arms=(5, 10)),
    "regret": lambda: plots.bandit_coverage(_steps(), [], arms=(5, 10), value="regret", ylabel="cumulative regret"),
    "noise_levels": lambda: plots.noise_levels(_steps()[lambda s: s["arms"] == 10]),
    "coverage_vs_regret": lambda: plots.coverage_vs_regret(_summary()),
    "free_vs_constrained": lambda: plots.free_vs_constrained(_summary()[lambda s: s["decision"].notna()]),
    "frequency_bias": lambda: plots.frequency_bias(
        {"tiny-lm": _frequency_result(0), "other-lm": _frequency_result(1)}, ["2B r = -0.67"]
    ),
    "knowing_doing": lambda: plots.knowing_doing_matrices(
        {
            "paper": pd.DataFrame(
                [[21.6, 58.1, 10.6], [0.6, 7.2, 2.0]],
                index=["correct", "wrong"],
                columns=["optimal", "greedy", "other"],
            )
        }
    ),
}


def _pixels(fig) -> np.ndarray:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    buffer.seek(0)
    return matplotlib.image.imread(buffer, format="png")


@pytest.mark.parametrize("name", FIGURES)
def test_the_same_data_draws_the_same_figure(name):
    first, second = _pixels(FIGURES[name]()), _pixels(FIGURES[name]())
    assert first.shape == second.shape and np.array_equal(first, second)


def _legend(fig):
    (legend,) = [legend for ax in fig.axes if (legend := ax.get_legend()) is not None]
    return legend


@pytest.mark.parametrize("name", ["coverage", "regret", "noise_levels"])
def test_every_line_is_named_and_has_one_colour_in_every_panel(name):
    fig = FIGURES[name]()
    legend = _legend(fig)
    names = [text.get_text() for text in legend.get_texts()]
    assert names == list(LABELS)  # the LLM lines too, though one panel has none
    colour = dict(zip(names, (handle.get_color() for handle in legend.legend_handles)))
    for ax in fig.axes:
        drawn = [line.get_color() for line in ax.get_lines() if len(line.get_xdata()) == TURNS]
        # a panel draws the baselines (first in LABELS) and, where they ran, the LLM runs
        assert drawn == [colour[label] for label in LABELS][: len(drawn)] and len(drawn) >= 2
    plt.close(fig)
