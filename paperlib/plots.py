"""One seaborn style for every figure, and the functions that draw them.

Each figure is written by exactly one notebook, through one function here, and
saved by ``savefig`` under figures/.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from paperlib import paths  # noqa: E402

OURS = "ours"
PAPER = "paper"


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight"})


def savefig(fig, name: str, directory=None):
    """Save ``fig`` as <directory>/<name>.png (figures/ by default) and return the path."""
    directory = Path(directory or paths.FIGURES)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    fig.savefig(path)
    return path


set_style()


def reward_vs_meals(episodes, rewards=(("reward", "paper reward"), ("reward_shaped", "shaped reward"))):
    """Reward against meals per episode, one panel per reward; the degenerate maximum shows
    as the no_action points at zero meals and reward 1.0 under the paper's reward."""
    fig, axes = plt.subplots(1, len(rewards), figsize=(5.2 * len(rewards), 4), sharey=True, squeeze=False)
    # a small deterministic horizontal jitter so that coincident episodes stay visible
    jitter = episodes.assign(meals_jitter=episodes["meals_total"] + (episodes["seed"] % 7 - 3) * 0.04)
    for ax, (column, title) in zip(axes[0], rewards):
        sns.scatterplot(
            data=jitter, x="meals_jitter", y=column, hue="policy", style="n", alpha=0.7, ax=ax, s=28
        )
        ax.set(title=title, xlabel="meals in the episode", ylabel="episode reward", ylim=(-0.05, 1.08))
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
        if ax is not axes[0][-1]:
            ax.get_legend().remove()
    axes[0][-1].legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=8)
    return fig
