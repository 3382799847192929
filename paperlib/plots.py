"""One seaborn style for every figure, and the functions that draw them.

Each figure is written by exactly one notebook, through one function here, and
saved by ``savefig`` under figures/.
"""

from __future__ import annotations

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


def savefig(fig, name: str):
    """Save ``fig`` as figures/<name>.png and return the path."""
    paths.FIGURES.mkdir(parents=True, exist_ok=True)
    path = paths.FIGURES / f"{name}.png"
    fig.savefig(path)
    return path


set_style()
