"""One seaborn style for every figure, and the functions that draw them.

Each figure is written by exactly one notebook, through one function here, and
saved by ``savefig`` under figures/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from paperlib import paths  # noqa: E402

OURS = "ours"
PAPER = "paper"
SEED = 0  # every bootstrap interval is drawn with it: the same data gives the same figure
# [ours] a training step where under 5% of the decisions are valid actions earns paper A's reward
# for doing nothing: notebook 03's figure shades it, its sentences say so
IDLE_VALID_SHARE = 0.05


# What each figure shows, in a sentence a reader can take without the code: build/index.html
# prints it under the figure, beside the notebook that draws it.
CAPTIONS = {
    "01_reward_vs_meals": "Paper A's reward and the shaped reward against the meals eaten, per scripted "
    "episode: doing nothing scores the maximum 1.0 under the paper's reward, with no meal.",
    "02_coordination_gap": "Paper A's Fig. 1 rebuilt: mean reward, deadlock rate and meals against the number "
    "of philosophers, for each model in free and constrained decisions and the scripted baselines, "
    "with the paper's reported numbers beside ours.",
    "02_no_call_reward": "Each free-mode episode's reward against its share of steps with no parseable tool "
    "call: the paper's DeepSeek case (no call, reward 1.0) reproduced by models that never act.",
    "03_grpo_training": "GRPO training curves per run: the training reward with its peak and saved step beside "
    "the paper's, each reward component, and the valid-call and invalid-action rates (with several training "
    "seeds: their mean, and a band from the lowest seed to the highest).",
    "04_null_result": "The base model against the adapter each selection rule keeps, every evaluation episode "
    "with its mean and 95% interval; episodes with no meal (the reward's degenerate maximum) in grey.",
    "05_training": "Paper A's three prescriptions in training, per run: its own training reward (a thin line per "
    "training seed, the seeds' mean thick, a triangle where it peaked before declining), meals, deadlocks, "
    "valid calls and the share of groups with a learning signal.",
    "05_held_out": "Each run's kept adapters on the evaluation seeds at each N: meals per episode and the deadlock "
    "rate with 95% intervals, and both rewards' means, beside the base model and the best scripted policy.",
    "06_knowing_doing_table": "Paper B's knowing-doing lens on paper A's table: whether each turn's stated "
    "reasoning and its action agree, per model and N.",
    "11_coverage": "Paper B's Fig. 3a/b: the share of arms tried by each step, per agent, with the paper's "
    "numbers as dashed lines.",
    "11_coverage_vs_regret": "Paper B's Fig. 3c: coverage after the last step against cumulative regret, one "
    "point per run.",
    "11_regret": "Paper B's Fig. 16: cumulative regret by step, per agent.",
    "11_noise_levels": "Paper B's Fig. 19: cumulative regret by step at each reward-noise level.",
    "11_free_vs_constrained": "Coverage and the share of valid actions per LLM configuration, free decisions "
    "beside constrained ones.",
    "12_frequency_bias": "Paper B's Fig. 4: the entropy of the action distribution against repetitions of the "
    "last action (uniform over 10 arms is ln 10), and which strategy the action follows, per model.",
    "13_knowing_doing": "Paper B's Fig. 5: knowing-doing matrices, the rationale (correct or not) against the "
    "action (optimal, greedy or other), in % of steps, beside the paper's.",
    "14_rlft_training": "RLFT on the bandits, per update: invalid-action rate, regret, coverage and KL to the "
    "base model, with and without the exploration bonus.",
    "14_rlft_held_out": "Paper B's Fig. 6 and 7 on held-out instances: regret and coverage of the base model, "
    "each adapter and the reference agents, with 95% intervals at the last step.",
    "15_exploration_mechanisms": "Paper B's Fig. 8: final coverage and regret per exploration mechanism at "
    "decision time, with UCB and random as references.",
    "16_tictactoe": "Paper B's Fig. 9: tic-tac-toe RLFT training, held-out returns against each opponent beside "
    "the paper's, and the return per thinking budget; hollow points are random play.",
}


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight"})


def savefig(fig, name: str, directory=None) -> Path:
    """Save ``fig`` as <directory>/<name>.png (figures/ by default) and return its path
    relative to the repository (``paths.relative``), which is what notebooks print.

    In a notebook (a running Jupyter kernel) the saved PNG is also shown below the cell, as an
    image output, so the executed notebook and its HTML export carry every figure it writes
    (the backend is Agg, which shows nothing by itself). The figure is then closed."""
    directory = Path(directory or paths.FIGURES)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    fig.savefig(path)
    if _in_kernel():
        from IPython.display import Image, Markdown, display

        # retina: shown at half the saved pixels (savefig.dpi 150), about the figure's size in inches
        display(Image(filename=str(path), retina=True))
        if name in CAPTIONS:  # what the figure shows, under it, as on build/index.html
            display(Markdown(f"*{CAPTIONS[name]}*"))
        plt.close(fig)
    return paths.relative(path)


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (a notebook), not a script or a test."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


set_style()


def reward_vs_meals(episodes, rewards=(("reward", "paper A's reward"), ("reward_shaped", "shaped reward"))):
    """Reward against meals per episode, one panel per reward; the degenerate maximum shows
    as the no_action points at zero meals and reward 1.0 under the paper's reward. Each policy
    stands a little apart from the others at the same meal count (so none hides another), in
    the colour and marker it has in notebook 02's figure; N by the marker's size."""
    policies = list(dict.fromkeys(episodes["policy"]))
    offsets = {policy: (i - (len(policies) - 1) / 2) * 0.11 for i, policy in enumerate(policies)}
    sizes = dict(zip(sorted(episodes["n"].unique()), (14, 26, 42)))
    x = episodes["meals_total"] + episodes["policy"].map(offsets) + (episodes["seed"] % 5 - 2) * 0.012
    fig, axes = plt.subplots(1, len(rewards), figsize=(5.4 * len(rewards), 4.2), sharey=True, squeeze=False)
    for ax, (column, title) in zip(axes[0], rewards):
        for policy in policies:
            rows = episodes["policy"] == policy
            color, marker = SCRIPTED_STYLE.get(policy, ("0.4", "o"))
            ax.scatter(
                x[rows],
                episodes.loc[rows, column],
                s=episodes.loc[rows, "n"].map(sizes).fillna(20),
                marker=marker,
                color=color,
                alpha=0.6,
                edgecolors="none",
            )
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
        ax.set(title=title, xlabel="meals eaten in the episode (all philosophers)", ylim=(-0.05, 1.08))
        ax.set_xticks(sorted(episodes["meals_total"].unique()))
    axes[0][0].set_ylabel("episode reward")
    handles = [
        Line2D(
            [],
            [],
            marker=SCRIPTED_STYLE.get(p, ("0.4", "o"))[1],
            color=SCRIPTED_STYLE.get(p, ("0.4", "o"))[0],
            ls="none",
            label=p,
        )
        for p in policies
    ]
    handles += [
        Line2D([], [], marker="o", color="0.5", ls="none", markersize=size**0.5, label=f"N = {n}")
        for n, size in sizes.items()
    ]
    axes[0][-1].legend(
        handles=handles, title="scripted policy; philosophers", bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=8
    )
    return fig


# -- paper B, notebooks 11-13 ---------------------------------------------------------


def _paper_line(ax, value, label, color="0.35"):
    ax.axhline(value, color=color, lw=1, ls="--")
    ax.annotate(
        f"{PAPER}: {label}",
        (1.0, value),
        xycoords=("axes fraction", "data"),
        xytext=(-4, 3),
        textcoords="offset points",
        ha="right",
        fontsize=7,
        color=color,
    )


BASELINE_STYLE = {  # paper B's reference agents: greys and browns, each its own dash
    "random": ("0.6", (1, 1.5)),
    "greedy": ("#8c564b", (5, 2)),
    "epsilon_greedy": ("#b8860b", (3, 1, 1, 1)),
    "ucb": ("0.1", (6, 2)),
    "thompson": ("0.4", (2, 2)),
}


def _bandit_model(label: str) -> str:
    """The model in a bandit run's label ("gemma3-270m no CoT (free)" -> "gemma3-270m")."""
    return label.split(" (")[0].removesuffix(" no CoT").removesuffix(" CoT").strip()


def _bandit_styles(order) -> tuple[dict, dict]:
    """(colour, dashes) per label: a reference agent its grey or brown and dash; an LLM run its
    model's colour (the same model the same colour in every panel and figure), solid with CoT and
    dashed without."""
    models = list(dict.fromkeys(_bandit_model(label) for label in order if label not in BASELINE_STYLE))
    model_colors = dict(zip(models, sns.color_palette("colorblind", len(models))))
    colors, dashes = {}, {}
    for label in order:
        if label in BASELINE_STYLE:
            colors[label], dashes[label] = BASELINE_STYLE[label]
        else:
            colors[label] = model_colors[_bandit_model(label)]
            dashes[label] = (4, 1.5) if " no CoT" in label else ""
    return colors, dashes


def _lines(ax, data, y, order):
    """One line per ``label`` of ``data`` (mean over instances at every step, with its 95%
    bootstrap band), styled after ``_bandit_styles``, so a label looks the same in every panel."""
    colors, dashes = _bandit_styles(order)
    present = [label for label in order if label in set(data["label"])]
    sns.lineplot(
        data=data,
        x="turn",
        y=y,
        hue="label",
        style="label",
        hue_order=present,
        style_order=present,
        palette={label: colors[label] for label in present},
        dashes={label: dashes[label] for label in present},
        errorbar=("ci", 95),
        n_boot=200,
        seed=SEED,
        err_kws={"alpha": 0.12},
        ax=ax,
    )


def _legend_right(axes):
    """One legend right of the last panel naming every line of every panel: a panel may
    lack some (the 5-arm panel has no LLM run), so no single panel's legend will do."""
    handles = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(text, handle)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    axes[-1].legend(list(handles.values()), list(handles), fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))


def bandit_coverage(steps, reported, arms=(10, 20), value="coverage", ylabel="action coverage"):
    """Fig. 3a/b (and Fig. 16 with ``value="regret"``): the mean of ``value`` over instances at
    every step, one panel per arm count, one line per agent; ``reported`` is a list of
    (arms, value, label) drawn as dashed lines."""
    fig, axes = plt.subplots(1, len(arms), figsize=(5.6 * len(arms), 4), squeeze=False, sharey=value == "coverage")
    order = list(dict.fromkeys(steps["label"]))
    for ax, k in zip(axes[0], arms):
        _lines(ax, steps[steps["arms"] == k], value, order)
        for arm_count, number, label in reported:
            if arm_count == k:
                _paper_line(ax, number, label)
        ax.set(title=f"{k} arms", xlabel="step", ylabel=ylabel)
    _legend_right(axes[0])
    return fig


def coverage_vs_regret(summary):
    """Fig. 3c: final coverage against final regret, one point per run (mean over instances), in
    the run's colour from ``_bandit_styles``, the number of arms by marker."""
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    order = list(dict.fromkeys(summary["label"]))
    colors, _ = _bandit_styles(order)
    markers = dict(zip(sorted(summary["arms"].unique()), "os^DP"))
    for row in summary.itertuples():
        hollow = "no CoT" in row.label
        ax.scatter(
            row.coverage,
            row.regret,
            marker=markers[row.arms],
            s=60,
            facecolors="white" if hollow else [colors[row.label]],
            edgecolors=[colors[row.label]],
            linewidths=1.5,
            zorder=3,
        )
    ax.set(xlabel="action coverage after the last step", ylabel="cumulative regret after the last step")
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            ls="none",
            color=colors[label],
            mfc="white" if "no CoT" in label else colors[label],
            mew=1.5,
            label=label,
        )
        for label in order
    ]
    handles += [Line2D([], [], marker=m, ls="none", color="0.4", label=f"{arms} arms") for arms, m in markers.items()]
    ax.legend(
        handles=handles,
        bbox_to_anchor=(1.02, 1),
        loc="upper left",
        fontsize=7,
        title="agent (hollow: no CoT); arms",
        title_fontsize=7,
    )
    return fig


def noise_levels(steps, value="regret", ylabel="cumulative regret"):
    """Fig. 19: ``value`` over steps at each noise level (one panel each), one line per agent."""
    noises = [n for n in ("low", "medium", "high") if n in set(steps["noise"])]
    fig, axes = plt.subplots(1, len(noises), figsize=(5 * len(noises), 4), squeeze=False, sharey=True)
    order = list(dict.fromkeys(steps["label"]))
    for ax, noise in zip(axes[0], noises):
        _lines(ax, steps[steps["noise"] == noise], value, order)
        ax.set(title=f"{noise} noise", xlabel="step", ylabel=ylabel)
    _legend_right(axes[0])
    return fig


def free_vs_constrained(summary):
    """Final coverage and the share of valid actions per LLM configuration, free beside constrained."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (column, label) in zip(
        axes, (("coverage", "action coverage after the last step"), ("valid", "share of steps with a valid ACTION="))
    ):
        sns.barplot(data=summary, x="label", y=column, hue="decision", errorbar=None, ax=ax)  # a bar is one run's mean
        ax.set(xlabel="", ylabel=label, ylim=(0, 1.05))
        ax.tick_params(axis="x", rotation=30, labelsize=7)
        ax.get_legend().remove()
    axes[1].legend(
        *axes[0].get_legend_handles_labels(), title="decision", fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1)
    )
    return fig


def frequency_bias(results, reported, arms: int = 10):
    """Fig. 4 / 15: entropy of the action distribution against repetitions of the last action
    (left, mean with its 95% bootstrap interval, on one axis from 0 to the uniform entropy ln
    ``arms`` in every row, that bound drawn) and strategy shares per repetition window (right),
    one row per model; ``results`` maps a model to ``metrics.frequency_bias`` output,
    ``reported`` to paper lines (text)."""
    import math

    from paperlib.bandits.metrics import STRATEGIES, entropy_correlation, strategy_shares

    uniform = math.log(arms)
    fig, axes = plt.subplots(len(results), 2, figsize=(11, 3.6 * len(results)), squeeze=False)
    for (model, result), (left, right) in zip(results.items(), axes):
        r, _ = entropy_correlation(result)
        sns.lineplot(data=result, x="repetitions", y="entropy", errorbar=("ci", 95), seed=SEED, ax=left)
        left.axhline(uniform, color="0.4", ls="--", lw=1)
        left.annotate(
            f"uniform over {arms} arms (ln {arms} = {uniform:.2f})",
            (0.99, uniform),
            xycoords=("axes fraction", "data"),
            xytext=(0, -10),
            textcoords="offset points",
            ha="right",
            fontsize=7,
            color="0.35",
        )
        left.set(
            title=f"{model}: r = {r:+.2f}",
            xlabel="repetitions of the last action in the context",
            ylabel="entropy of the action distribution (nats)",
            ylim=(0, uniform * 1.08),
        )
        shares = strategy_shares(result).drop(index="all")
        shares[list(STRATEGIES)].plot.bar(stacked=True, ax=right, width=0.85, legend=False)
        right.set(
            title=f"{model}: strategy per window",
            xlabel="repetitions of the last action (window)",
            ylabel="share of the window's cases",
            ylim=(0, 1),
        )
        right.tick_params(axis="x", rotation=45, labelsize=7)
    axes[0][1].legend(
        title="the action taken is", fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    fig.text(0.01, -0.01, f"{PAPER}: " + "; ".join(reported), fontsize=8, ha="left", va="top")
    fig.tight_layout()
    return fig


def knowing_doing_matrices(matrices, notes=None):
    """Fig. 5: 2 x 3 knowing-doing matrices (% of all steps) side by side, ``matrices`` by title;
    ``notes`` (title -> text) is printed under a panel, e.g. where almost no rationale was written,
    so that its "wrong" row is mostly missing rationales rather than wrong ones."""
    notes = notes or {}
    fig, axes = plt.subplots(1, len(matrices), figsize=(4.4 * len(matrices), 3.6), squeeze=False)
    for ax, (title, matrix) in zip(axes[0], matrices.items()):
        shown = matrix.astype(float)
        shown.columns = [str(c).replace("_or_", " or ").replace("_not_", ", not ").replace("_", " ") for c in shown]
        sns.heatmap(shown, annot=True, fmt=".1f", vmin=0, vmax=100, cmap="Blues", cbar=False, ax=ax)
        ax.set(title=title, xlabel="action (% of all steps)", ylabel="rationale")
        ax.tick_params(axis="x", rotation=0, labelsize=8)
        ax.tick_params(axis="y", rotation=0)
        if title in notes:
            ax.annotate(
                notes[title], (0.5, -0.32), xycoords="axes fraction", ha="center", va="top", fontsize=8, color="#8b0000"
            )
    fig.tight_layout()
    return fig


# -- paper A, notebook 02 ----------------------------------------------------------------


def _gap_label(model: str, decision: str) -> str:
    return model.removeprefix("policy:") if decision == "scripted" else f"{model} ({decision})"


SCRIPTED_STYLE = {  # scripted baselines: dotted, each its own shade and marker, none of the models' colours
    "no_action": ("0.15", "s"),
    "always_think": ("0.5", "^"),
    "random": ("#8c564b", "D"),
    "left_first": ("#b8860b", "v"),
    "resource_hierarchy": ("#7b3f99", "P"),
    "waiter": ("#5f8f8f", "*"),
}
PAPER_MARKERS = ("X", "P", "D", "s", "^", "v", "*", "h")


def _model_colors(models) -> dict:
    """One colour per model (not per decision mode), the same in every panel and figure of a notebook."""
    return dict(zip(models, sns.color_palette("colorblind", len(models))))


def coordination_gap(table, paper):
    """Fig. 1 rebuilt: mean reward (95% t CI), deadlock rate (Wilson CI) and meals against N,
    one line per model and decision mode (``philosophers.gap.gap_table``): a model keeps its
    colour, free decisions solid with filled markers, constrained dashed with open ones, the
    scripted baselines dotted in greys and browns. Paper A's reported numbers (``paper_rows``)
    stand right of ours in dark red: a value as a marker of its own, a range over models as a
    bar; the legend below names each by its id in data/paper_reported.csv and what it is."""
    import pandas as pd

    panels = (
        ("reward", "mean episode reward (paper A's)", "reward"),
        ("deadlock_rate", "share of episodes that deadlocked", "deadlock"),
        ("meals", "meals per episode (mean)", None),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    cells = table.assign(label=[_gap_label(m, d) for m, d in zip(table["model"], table["decision"])])
    # an LLM that ate at no N: its rewards are the degenerate maximum or a deadlock, not coordination
    silent = cells[cells["decision"] != "scripted"].groupby("label")["meals"].max().loc[lambda m: m == 0].index
    cells["label"] = [f"{label}: no meal at any N" if label in silent else label for label in cells["label"]]
    ns = sorted(cells["n"].unique())
    # a model that plays fewer table sizes than the grid (the profile's gap_model_ns) says which
    fewer = cells.groupby("label")["n"].unique().loc[lambda played: played.map(len) < len(ns)]
    cells["label"] = [
        f"{label} (N = {', '.join(map(str, sorted(fewer[label])))} only)" if label in fewer.index else label
        for label in cells["label"]
    ]
    labels = list(cells["label"].unique())
    offsets = {label: (i - (len(labels) - 1) / 2) * 0.07 for i, label in enumerate(labels)}
    beside = max(offsets.values()) + 0.4  # the paper's numbers stand right of ours
    llm = cells[cells["decision"] != "scripted"]
    colors = _model_colors(list(dict.fromkeys(llm["model"])))
    paper_handles = {}
    for ax, (column, ylabel, ci) in zip(axes, panels):
        for label, rows in cells.groupby("label", sort=False):
            x = rows["n"] + offsets[label]
            err = (
                None
                if ci is None
                else [
                    (rows[column] - rows[f"{ci}_low"]).clip(lower=0),  # float noise
                    (rows[f"{ci}_high"] - rows[column]).clip(lower=0),
                ]
            )
            decision = rows["decision"].iloc[0]
            if decision == "scripted":
                color, marker = SCRIPTED_STYLE.get(label, ("0.4", "o"))
                style = dict(ls=":", marker=marker, color=color, alpha=0.85, ms=5)
            else:
                color = colors[rows["model"].iloc[0]]
                style = dict(ls="-" if decision == "free" else "--", marker="o", color=color, ms=5, lw=1.6)
                if decision != "free":
                    style.update(mfc="white", mew=1.5)
            ax.errorbar(x, rows[column], yerr=err, capsize=2, label=label, **style)
        claims = {"reward": "mean reward", "deadlock_rate": "deadlock rate"}.get(column)
        if claims is not None and len(paper):
            shown = paper[paper["claim"].str.contains(claims)]
            for n, at_n in shown.groupby("n"):
                for k, row in enumerate(at_n.itertuples()):
                    x = n + beside + 0.22 * k
                    marker = PAPER_MARKERS[list(dict.fromkeys(paper["id"])).index(row.id) % len(PAPER_MARKERS)]
                    if pd.notna(row.value):
                        handle = ax.plot(x, row.value, marker, color="#8b0000", ms=7, mfc="none", mew=1.6, zorder=5)[0]
                        text = f"{row.id}: {row.claim} = {row.value:g}"
                    else:
                        handle = ax.vlines(x, float(row.low), float(row.high), color="#8b0000", lw=4, alpha=0.45)
                        ax.annotate(
                            row.id,
                            (x, float(row.high)),
                            xytext=(0, 2),
                            textcoords="offset points",
                            ha="center",
                            fontsize=6,
                            color="#8b0000",
                        )
                        text = f"{row.id}: {row.claim}, {float(row.low):g} to {float(row.high):g}"
                    paper_handles.setdefault(text, handle)
        ax.set(xlabel="philosophers at the table (N)", ylabel=ylabel, xticks=ns, xlim=(min(ns) - 1, max(ns) + 2.2))
    axes[0].set_ylim(-0.05, 1.08)
    axes[1].set_ylim(-0.05, 1.05)
    axes[2].set_ylim(bottom=-0.05)
    handles, names = axes[0].get_legend_handles_labels()
    axes[2].legend(handles, names, title="ours", bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=7)
    if paper_handles:
        fig.legend(
            list(paper_handles.values()),
            list(paper_handles),
            title="paper A (dark red, right of ours at each N; ids as in data/paper_reported.csv)",
            loc="upper center",
            bbox_to_anchor=(0.45, 0.0),
            ncol=2,
            fontsize=7,
            title_fontsize=8,
            frameon=False,
        )
    fig.tight_layout()
    return fig


def no_call_reward(episodes):
    """The DeepSeek case: each episode's reward against its share of steps with no parseable
    call (free-mode LLM episodes and the scripted ``no_action``), a model in the colour it has in
    ``coordination_gap``, N by marker; the paper's DeepSeek-R1-Distill (no call at all, reward
    1.0 at every N, A13) as a dark red cross, drawn just right of 1.0 so as to hide no point."""
    free = episodes[(episodes["decision"] == "free") | (episodes["policy"] == "no_action")]
    data = free.assign(no_action_share=free["no_actions"] / (free["no_actions"] + free["actions_total"]))
    data["no_action_share"] += (data["seed"] % 7 - 3) * 0.004  # keep coincident episodes visible
    colors = _model_colors(list(dict.fromkeys(episodes.loc[episodes["decision"] != "scripted", "model"])))
    markers = dict(zip(sorted(data["n"].unique()), "o^s"))
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    for model, rows in data.groupby("model", sort=False):
        scripted = model.startswith("policy:")
        for n, cell in rows.groupby("n"):
            ax.scatter(
                cell["no_action_share"],
                cell["reward"],
                marker=markers.get(n, "o"),
                s=40 if scripted else 22,
                alpha=0.9 if scripted else 0.55,
                facecolors="none" if scripted else colors.get(model, "0.5"),
                edgecolors="0.1" if scripted else "none",
                zorder=3 if scripted else 2,
            )
    ax.plot(1.06, 1.0, "X", color="#8b0000", ms=9, mfc="none", mew=1.6, zorder=5)  # at 1.0, drawn beside ours
    ax.set(
        xlabel="share of the episode's steps with no parseable tool call",
        ylabel="episode reward (paper A's)",
        ylim=(-0.05, 1.08),
        xlim=(-0.05, 1.1),
    )
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            ls="none",
            color="0.1" if m.startswith("policy:") else colors.get(m, "0.5"),
            mfc="none" if m.startswith("policy:") else None,
            label=_gap_label(m, "scripted" if m.startswith("policy:") else "free"),
        )
        for m in dict.fromkeys(data["model"])
    ]
    handles += [Line2D([], [], marker=mk, ls="none", color="0.4", label=f"N = {n}") for n, mk in markers.items()]
    handles.append(
        Line2D(
            [],
            [],
            marker="X",
            ls="none",
            color="#8b0000",
            mfc="none",
            mew=1.6,
            label="paper A: DeepSeek-R1-Distill-Qwen-7B, no call (share 1.0), reward 1.0 (A13)",
        )
    )
    ax.legend(handles=handles, bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=7)
    return fig


# -- paper A, notebooks 03-04: GRPO ----------------------------------------------------------


def grpo_training(log, runs, paper_peak=None, paper_saved=None):
    """One row of panels per run (``runs``: label -> the log's ``reward`` name): the training
    reward per step with its peak and the saved (last) step marked, each reward component's
    mean per step, and the valid-call and invalid-action rates per step. Paper A's peak and
    saved steps (A14, A15) as dotted lines on the reward panels."""
    fig, axes = plt.subplots(len(runs), 3, figsize=(15, 3.4 * len(runs)), squeeze=False)
    for row, (label, reward) in zip(axes, runs.items()):
        run = log[log["reward"] == reward].sort_values("step")
        ax = row[0]
        seeded = "train_seed" in run and run["train_seed"].nunique() > 1  # a thin line per training seed
        for seed, one in run.groupby("train_seed") if seeded else ():
            ax.plot(
                one["step"], one["train_reward"], lw=0.8, alpha=0.5, marker=".", ms=3, label=f"training seed {seed}"
            )
        # the seeds' mean (each seed plays as many episodes per step) carries the peak and the saved step
        curve = run.groupby("step", as_index=False)[["train_reward", "valid_share_mean"]].mean() if seeded else run
        ax.plot(curve["step"], curve["train_reward"], marker="o", ms=3, color="C0", lw=2 if seeded else None)
        if seeded:
            ax.lines[-1].set_label("mean of the seeds")
        peak = curve.loc[curve["train_reward"].idxmax()]
        ax.plot(peak["step"], peak["train_reward"], "^", color="C3", ms=9, label=f"peak (step {int(peak['step'])})")
        last = curve.iloc[-1]
        ax.plot(last["step"], last["train_reward"], "s", color="C2", ms=8, label=f"saved (step {int(last['step'])})")
        idle = curve[curve["valid_share_mean"] < IDLE_VALID_SHARE]["step"]  # steps with almost no valid action
        for step in idle:
            ax.axvspan(step - 0.5, step + 0.5, color="0.85", zorder=0, lw=0)
        if len(idle):
            ax.axvspan(
                0, 0, color="0.85", label=f"under {IDLE_VALID_SHARE:.0%} valid actions: reward for doing nothing"
            )
        for step, text in ((paper_peak, "paper A's peak"), (paper_saved, "paper A's saved step")):
            if step is not None:
                ax.axvline(step, color="0.5", ls=":", lw=1)
                ax.annotate(
                    f"{text} ({step})",
                    (step, 1.0),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    xytext=(2, -4),
                    textcoords="offset points",
                    va="top",
                    fontsize=7,
                    color="0.4",
                )
        ax.set(title=f"{label}: training reward ({reward})", xlabel="step", ylabel="mean episode reward")
        ax.set_xlim(0.5, max(run["step"].max(), paper_saved or 0) + 0.5)
        ax.legend(fontsize=7, loc="lower right")
        components = run.melt(
            id_vars="step",
            value_vars=["r_nd_mean", "r_thru_mean", "r_fair_mean", "r_idle_mean"],
            var_name="component",
            value_name="mean",
        )
        components["component"] = components["component"].map(
            {
                "r_nd_mean": "no deadlock (r_nd)",
                "r_thru_mean": "throughput (r_thru)",
                "r_fair_mean": "unfairness (r_fair)",
                "r_idle_mean": "idleness (r_idle)",
            }
        )
        # several training seeds: the line their mean, the band their range (min to max), not an interval
        band = {"errorbar": ("pi", 100)}
        sns.lineplot(data=components, x="step", y="mean", hue="component", marker="o", ms=3, ax=row[1], **band)
        row[1].set(title=f"{label}: reward terms", xlabel="step", ylabel="mean over the step's episodes")
        row[1].legend(fontsize=7, loc="center right")
        rates = run.melt(
            id_vars="step",
            value_vars=["valid_call_rate", "invalid_action_rate", "valid_share_mean"],
            var_name="rate",
            value_name="value",
        )
        rates["rate"] = rates["rate"].map(
            {
                "valid_call_rate": "of the decisions, a parseable tool call",
                "invalid_action_rate": "of the calls, an action the rules refuse",
                "valid_share_mean": "of the decisions, a valid action",
            }
        )
        sns.lineplot(data=rates, x="step", y="value", hue="rate", marker="o", ms=3, ax=row[2], **band)
        row[2].set(title=f"{label}: calls and actions", xlabel="step", ylabel="share", ylim=(-0.02, 1.02))
        row[2].legend(fontsize=7, loc="center right")
    fig.tight_layout()
    return fig


def reward_by_selection(episodes, column="reward", order=None, reported=None):
    """Per-episode ``column`` for the base model and each selected adapter, one panel per N:
    every episode as a point (a deterministic jitter, none left out), coloured by whether it had
    zero meals (the reward's degenerate maximum: 1.0 by never eating, notebook 01), and the mean
    with its 95% bootstrap interval in black. ``reported`` (data/paper_reported.csv) adds paper A's
    Qwen3-14B means at N = 5 before and after GRPO (A05, A08) as crosses."""
    import numpy as np
    import pandas as pd

    from paperlib.stats import bootstrap_mean_ci

    ns = sorted(episodes["n"].unique())
    order = list(order or dict.fromkeys(episodes["selection"]))
    fig, axes = plt.subplots(1, len(ns), figsize=(4.6 * len(ns), 4.4), sharey=True, squeeze=False)
    colors = {True: "0.62", False: sns.color_palette()[0]}
    paper = {}
    if reported is not None:
        values = pd.to_numeric(reported.set_index("id")["value"], errors="coerce")
        paper = {("base", 5): ("A05", values.get("A05")), ("last", 5): ("A08", values.get("A08"))}
    for ax, n in zip(axes[0], ns):
        cell = episodes[episodes["n"] == n]
        for x, selection in enumerate(order):
            rows = cell[cell["selection"] == selection].sort_values("seed")
            if rows.empty:
                continue
            zero = (rows["meals_total"] == 0).to_numpy()
            jitter = np.linspace(-0.28, 0.28, len(rows))
            for flag in (True, False):
                ax.scatter(
                    x + jitter[zero == flag],
                    rows[column].to_numpy()[zero == flag],
                    s=12,
                    alpha=0.6,
                    color=colors[flag],
                    edgecolor="none",
                    zorder=2,
                )
            mean, low, high = bootstrap_mean_ci(rows[column])
            ax.errorbar(
                x + 0.36,
                mean,
                yerr=[[max(mean - low, 0)], [max(high - mean, 0)]],
                fmt="o",
                color="black",
                ms=5,
                capsize=3,
                zorder=4,
            )
            ax.annotate(
                f"{int(zero.sum())}/{len(rows)}\nno meal",
                (x, 0.5),
                xycoords=("data", "axes fraction"),
                ha="center",
                fontsize=7,
                color="0.35",
            )
            if (selection, n) in paper and pd.notna(paper[selection, n][1]):
                ax.plot(x + 0.36, paper[selection, n][1], "x", color="C3", ms=9, mew=2, zorder=5)
        ax.set_xticks(range(len(order)), [s.replace("_", " ") for s in order])
        ax.set(
            title=f"N = {n} philosophers",
            xlabel="base model, or the adapter a rule keeps",
            xlim=(-0.5, len(order) - 0.3),
            ylim=(-0.05, 1.08),
        )
    axes[0][0].set_ylabel(f"episode {'reward (paper A' + chr(39) + 's)' if column == 'reward' else column}")
    handles = [
        Line2D([], [], marker="o", ls="none", color=colors[False], alpha=0.6, label="an episode with meals"),
        Line2D(
            [],
            [],
            marker="o",
            ls="none",
            color=colors[True],
            alpha=0.6,
            label="an episode with no meal (nobody ate: up to 1.0, the reward's degenerate maximum)",
        ),
        Line2D([], [], marker="o", ls="-", color="black", label="mean, 95% bootstrap interval"),
    ]
    if any(pd.notna(v) for _, v in paper.values()):
        handles.append(
            Line2D(
                [],
                [],
                marker="x",
                ls="none",
                color="C3",
                mew=2,
                label="paper A, Qwen3-14B at N = 5: base (A05), GRPO last step (A08)",
            )
        )
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8, frameon=False)
    adapters = episodes[episodes["selection"] != "base"]
    if len(adapters):
        share = (adapters["meals_total"] == 0).mean()
        fig.suptitle(
            f"{share:.0%} of the adapters' episodes had no meal"
            + (": their rewards near 1.0 are the degenerate maximum, not coordination" if share > 0.5 else ""),
            fontsize=10,
        )
    fig.tight_layout()
    return fig


RLFT_COLORS = {  # the same run in the same colour in notebook 14's two figures
    "base": sns.color_palette("colorblind")[0],
    "RLFT": sns.color_palette("colorblind")[1],
    "RLFT + bonus": sns.color_palette("colorblind")[2],
    "ucb": "0.1",
    "random": "0.55",
}


def _per_seed(log) -> dict:
    """A line per training seed (``train_seed``) where a log holds several, in its run's colour."""
    several = "train_seed" in log and log["train_seed"].nunique() > 1
    return {"units": "train_seed", "estimator": None} if several else {}


def rlft_training(log):
    """Per update of each RLFT run (``log``'s ``run`` column): the invalid-action rate, regret,
    coverage and KL to the base model on the update's training instances."""
    panels = (
        ("invalid_rate", "invalid-action rate", "share of steps with no valid action"),
        ("regret", "final cumulative regret", "cumulative regret after the last step"),
        ("coverage", "final coverage", "share of arms tried by the last step"),
        ("kl", "KL to the base model", "KL divergence per token (nats)"),
    )
    runs = list(dict.fromkeys(log["run"]))
    palette = {run: RLFT_COLORS.get(run, sns.color_palette("colorblind")[3 + i % 6]) for i, run in enumerate(runs)}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.5))
    for ax, (column, title, ylabel) in zip(axes, panels):
        sns.lineplot(
            data=log, x="step", y=column, hue="run", palette=palette, marker="o", ms=3, ax=ax, **_per_seed(log)
        )
        ax.set(title=title + " (training instances)", xlabel="update", ylabel=ylabel)
        ax.legend(title="run" + (", a line per training seed" if _per_seed(log) else ""), fontsize=7, title_fontsize=7)
    fig.tight_layout()
    return fig


def _seed_means(per_seed: list, key) -> list[float]:
    """Each training seed's mean at ``key`` (``per_seed``: a mean per key for each seed), where the
    seeds differ; empty where they agree, where one lacks it, or where there are none."""
    own = [float(means.get(key, float("nan"))) for means in per_seed]
    return own if len(set(own)) > 1 and all(v == v for v in own) else []


def rlft_held_out(steps, table, reported=None, seeds=None):
    """Fig. 6 and 7 on held-out instances: mean cumulative regret and coverage per step (95%
    bootstrap band over instances), one line per adapter or reference agent; and each metric's
    mean with its 95% interval per adapter. ``reported`` (data/paper_reported.csv) adds paper B's
    Gemma2 2B coverage without and with the exploration bonus (B22, B23) as crosses. ``seeds``
    (training seed -> its table, where ``table`` pools several) adds each seed's own mean as a
    hollow marker left of the pooled one, for the adapters whose seeds differ: the pooled
    interval holds the instances' spread, not the seeds'."""
    import pandas as pd

    fig, axes = plt.subplots(2, 3, figsize=(15, 7.4))
    order = list(dict.fromkeys(steps["adapter"]))
    palette = {a: RLFT_COLORS.get(a, sns.color_palette("colorblind")[3 + i % 6]) for i, a in enumerate(order)}
    words = {
        "regret": "cumulative regret",
        "coverage": "share of arms tried (coverage)",
        "invalid_share": "share of steps with no valid action",
    }
    for ax, column in zip(axes[0][:2], ("regret", "coverage")):
        sns.lineplot(
            data=steps,
            x="turn",
            y=column,
            hue="adapter",
            style="adapter",
            hue_order=order,
            style_order=order,
            palette=palette,
            errorbar=("ci", 95),
            seed=SEED,
            n_boot=200,
            ax=ax,
        )
        ax.set(title=f"held-out {column} by step (95% CI band)", xlabel="step", ylabel=words[column])
    handles, names = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][:2]:
        ax.get_legend().remove()
    axes[0][2].axis("off")
    paper = {}
    if reported is not None:
        values = pd.to_numeric(reported.set_index("id")["value"], errors="coerce")
        paper = {"RLFT": values.get("B22"), "RLFT + bonus": values.get("B23")}
    per_seed = [part.set_index(["metric", "adapter"])["mean"] for part in (seeds or {}).values()]
    seeds_drawn = False
    for ax, metric in zip(axes[1], ("regret", "coverage", "invalid_share")):
        cells = table[table["metric"] == metric].set_index("adapter").reindex(order).dropna(subset=["mean"])
        for x, (adapter, row) in enumerate(cells.iterrows()):
            ax.errorbar(
                x,
                row["mean"],
                yerr=[[row["mean"] - row["ci_low"]], [row["ci_high"] - row["mean"]]],
                fmt="o",
                capsize=4,
                color=palette[adapter],
            )
            if metric == "coverage" and pd.notna(paper.get(adapter)):
                crosses = ax.plot(x + 0.25, paper[adapter], "X", color="#8b0000", mfc="none", mew=1.5, ms=8)[0]
            own = _seed_means(per_seed, (metric, adapter))
            if own:
                offsets = [x - 0.3 + 0.06 * i for i in range(len(own))]
                ax.plot(offsets, own, "o", color=palette[adapter], mfc="none", ms=5, mew=1)
                seeds_drawn = True
        ax.set_xticks(range(len(cells)), cells.index, rotation=25)
        ax.set(title=f"{metric.replace('_', ' ')} at the last step (95% CI)", xlabel="", ylabel=words[metric])
    if any(pd.notna(v) for v in paper.values()):
        handles.append(crosses)
        names.append("paper B, Gemma2 2B: coverage without\nand with the exploration bonus (B22, B23)")
    if seeds_drawn:
        handles.append(plt.Line2D([], [], marker="o", ls="", mfc="none", color="0.35", ms=5, mew=1))
        names.append(f"each of the {len(per_seed)} training seeds' own mean\n(hollow, left of the pooled mean)")
    axes[0][2].legend(handles, names, loc="upper left", fontsize=8, title="held-out play of", title_fontsize=8)
    fig.tight_layout()
    return fig


def exploration_mechanisms(table):
    """Fig. 8: final coverage and regret per exploration mechanism (one marker per model, with
    its 95% interval), UCB and random as reference lines named in the legend (not on the plot,
    where two close references printed over each other)."""
    llm = table[~table["model"].str.startswith("baseline:")]
    references = table[table["model"].str.startswith("baseline:")]
    order = list(dict.fromkeys(llm["exploration"]))
    models = list(dict.fromkeys(llm["model"]))
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.0))
    panels = (
        ("coverage", "action coverage after the last step"),
        ("regret", "cumulative regret after the last step"),
    )
    reference_styles = ("--", ":", "-.")
    for ax, (metric, ylabel) in zip(axes, panels):
        for i, model in enumerate(models):
            rows = llm[llm["model"] == model].set_index("exploration").reindex(order)
            x = [j + 0.14 * (i - (len(models) - 1) / 2) for j in range(len(order))]
            ax.errorbar(
                x,
                rows[metric],
                yerr=[rows[metric] - rows[f"{metric}_low"], rows[f"{metric}_high"] - rows[metric]],
                fmt="o",
                capsize=3,
                label=model,
            )
        for k, r in enumerate(references.itertuples()):
            ax.axhline(
                getattr(r, metric), color="0.45", lw=1.2, ls=reference_styles[k % 3], label=r.exploration, zorder=1
            )
        ax.set_xticks(range(len(order)), [o.replace("_", " ") for o in order], rotation=30, ha="right")
        ax.set(title=ylabel.split(" after")[0], xlabel="exploration mechanism at decision time", ylabel=ylabel)
    axes[0].set_ylim(top=1.04)
    axes[1].legend(
        title="model (95% CI); reference", fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1)
    )
    fig.tight_layout()
    return fig


def _lighter(color, amount: float = 0.55):
    """``color`` blended towards white: a run's base model beside its adapter."""
    import matplotlib.colors as mcolors

    r, g, b = mcolors.to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


RANDOM_PLAY = 0.5  # a model whose moves were at least this share invalid played the random fallback's game


def tictactoe_rlft(log, table, reported, main_cells, budget_cells, seeds=None):
    """Paper B's Fig. 9 on held-out games: (a) each RLFT run's training return and invalid-move rate
    per update; (b) the mean return (95% CI) against each opponent (``main_cells``: run -> its
    cells with the run's prompt) of the base model, each adapter and the scripted players, with
    paper B's Gemma2 2B before and after RLFT as crosses; (c) the return against random with CoT
    at each thinking budget (``budget_cells``: budget -> cell). A run keeps its colour in every
    panel (its base model a lighter shade); a point whose moves were mostly invalid (so played by
    the random fallback: a random player's game) is drawn hollow; lines that coincide are moved
    apart a little and said to coincide. ``seeds`` (training seed -> its table, where ``table``
    pools several) adds each seed's own mean in (b) as a short dash on the pooled point's bar,
    where the seeds differ: the pooled interval holds the games' spread, not the seeds'."""
    import pandas as pd

    runs = list(dict.fromkeys(log["run"]))
    run_colors = dict(zip(runs, sns.color_palette("colorblind", len(runs))))
    scripted = {"random": ("0.55", "s"), "mcts": ("0.1", "D"), "noisy_mcts": ("0.35", "^")}

    def style(adapter, run):
        if adapter in scripted:
            return scripted[adapter]
        color = run_colors.get(run, "0.5")
        return (color, "o") if adapter == "RLFT" else (_lighter(color), "o")

    invalid = table[table["metric"] == "invalid_share"].set_index(["run", "cell", "adapter"])["mean"]
    per_seed = [part.set_index(["run", "cell", "adapter", "metric"])["mean"] for part in (seeds or {}).values()]

    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2))
    for ax, (column, title, ylabel) in zip(
        axes[:2],
        (
            ("mean_return", "training return", "mean return per game (win 1, loss -1)"),
            ("invalid_rate", "training invalid-move rate", "share of moves invalid"),
        ),
    ):
        sns.lineplot(
            data=log, x="step", y=column, hue="run", palette=run_colors, marker="o", ms=3, ax=ax, **_per_seed(log)
        )
        ax.set(title=title, xlabel="update", ylabel=ylabel)
        ax.legend(
            title="RLFT run" + (", a line per training seed" if _per_seed(log) else ""), fontsize=7, title_fontsize=7
        )
    axes[1].set_ylim(-0.02, 1.02)
    ax = axes[2]
    main = pd.concat(
        [
            table[(table["metric"] == "return") & (table["run"] == run) & table["cell"].isin(cells)]
            for run, cells in main_cells.items()
        ]
    )
    main = main.assign(
        opponent=main["cell"].str.split("/").str[0],
        label=[a if a not in ("base", "RLFT") else f"{a} ({r})" for a, r in zip(main["adapter"], main["run"])],
    )
    opponents = list(dict.fromkeys(main["opponent"]))
    labels = list(dict.fromkeys(main["label"]))
    handles = {}
    seeds_drawn = False
    for i, label in enumerate(labels):
        rows = main[main["label"] == label].drop_duplicates("opponent").set_index("opponent").reindex(opponents)
        color, marker = style(rows["adapter"].dropna().iloc[0], rows["run"].dropna().iloc[0])
        played = rows.dropna(subset=["mean"])
        if len(played) and all(
            invalid.get((r.run, r.cell, r.adapter), 0) >= RANDOM_PLAY for r in played.itertuples()
        ):  # a model that played no move of its own: say so where the reader looks for its name
            label = f"{label}: mostly invalid moves, a random player's games"
        for j, row in enumerate(rows.itertuples()):
            if pd.isna(row.mean):
                continue
            hollow = invalid.get((row.run, row.cell, row.adapter), 0) >= RANDOM_PLAY
            x = j + 0.09 * (i - (len(labels) - 1) / 2)
            own = _seed_means(per_seed, (row.run, row.cell, row.adapter, "return"))
            if own:
                ax.plot([x] * len(own), own, "_", color=color, ms=9, mew=1.5, zorder=4, gid="seed means")
                seeds_drawn = True
            handles[label] = ax.errorbar(
                x,
                row.mean,
                yerr=[[row.mean - row.ci_low], [row.ci_high - row.mean]],
                fmt=marker,
                color=color,
                mfc="white" if hollow else color,
                mew=1.5,
                capsize=3,
            )
    paper = pd.to_numeric(reported.set_index("id")["value"], errors="coerce")
    for j, opponent in enumerate(opponents):
        for ids, marker in ((("B24", "B26"), "x"), (("B25", "B27"), "+")):
            value = {"random": paper[ids[0]], "mcts": paper[ids[1]]}.get(opponent)
            if value is not None:
                handle = ax.plot(j + 0.36, value, marker=marker, color="#8b0000", ms=9, mew=2, ls="none")[0]
                name = f"paper B, Gemma2 2B {'before' if marker == 'x' else 'after'} RLFT ({ids[0]}, {ids[1]})"
                handles.setdefault(name, handle)
    handles["hollow: half or more of its moves invalid, so a random player's game"] = Line2D(
        [], [], marker="o", ls="none", color="0.3", mfc="white", mew=1.5
    )
    if seeds_drawn:
        handles[f"dashes: each of the {len(per_seed)} training seeds' own mean"] = Line2D(
            [], [], marker="_", ls="none", color="0.3", ms=9, mew=1.5
        )
    ax.set_xticks(range(len(opponents)), [o.replace("_", " ") for o in opponents])
    ax.set(
        title="held-out return (95% CI)",
        xlabel="opponent",
        ylabel="mean return per game",
        ylim=(-1.1, 1.1),
        xlim=(-0.5, len(opponents) - 0.2),
    )
    ax = axes[3]
    budgets = table[(table["metric"] == "return") & table["cell"].isin(budget_cells.values())]
    budgets = budgets[budgets["adapter"].isin(["base", "RLFT"])]
    tokens = {cell: budget for budget, cell in budget_cells.items()}
    budgets = budgets.assign(budget=budgets["cell"].map(tokens), label=budgets["adapter"] + " (" + budgets["run"] + ")")
    groups = list(budgets.groupby("label", sort=False))
    means = {label: tuple(rows.sort_values("budget")["mean"].round(6)) for label, rows in groups}
    for i, (label, rows) in enumerate(groups):
        rows = rows.sort_values("budget")
        color, _ = style(rows["adapter"].iloc[0], rows["run"].iloc[0])
        same = [other for other, m in means.items() if other != label and m == means[label]]
        flat = rows["mean"].nunique() == 1 and len(rows) > 1
        notes = (["the same at every budget"] if flat else []) + ([f"= {', '.join(same)}"] if same else [])
        shift = 2 ** (0.07 * (i - (len(groups) - 1) / 2))  # coincident lines side by side
        hollow = [invalid.get((r.run, r.cell, r.adapter), 0) >= RANDOM_PLAY for r in rows.itertuples()]
        ax.errorbar(
            rows["budget"] * shift,
            rows["mean"],
            yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
            fmt="-",
            color=color,
            capsize=3,
            label=f"{label}" + (f": {'; '.join(notes)}" if notes else ""),
        )
        ax.scatter(
            rows["budget"] * shift,
            rows["mean"],
            s=30,
            zorder=3,
            facecolors=["white" if h else color for h in hollow],
            edgecolors=[color] * len(rows),
            linewidths=1.5,
        )
    reference = table[
        (table["metric"] == "return") & (table["adapter"] == "random") & table["cell"].isin(budget_cells.values())
    ]
    if len(reference):
        ax.axhline(reference["mean"].iloc[0], color="0.55", ls="--", lw=1, label="random player against random")
    ax.set_xscale("log", base=2)
    ax.set(
        title="thinking budget, CoT, against random",
        xlabel="thinking budget (max new tokens per move)",
        ylabel="mean return per game",
        ylim=(-1.1, 1.1),
    )
    ax.legend(fontsize=6.5, loc="lower left")
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        bbox_to_anchor=(0.6, 0.0),
        ncol=3,
        fontsize=7,
        frameon=False,
    )
    fig.tight_layout()
    return fig


def interventions_training(log):
    """Notebook 05's training curves, a panel per measure (each run's own training reward, meals,
    deadlock rate, valid calls, groups with a learning signal) and a colour per run (``run``): a
    thin line per training seed, the seeds' mean thick, and on the reward panel a triangle at a
    peak that the last step falls below (paper A's peak-then-decline)."""
    measures = {
        "train_reward": "training reward (the run's own)",
        "meals": "meals per episode",
        "deadlock_rate": "deadlock rate",
        "valid_call_rate": "decisions holding a call",
        "signal_share": "groups with a learning signal",
    }
    measures = {k: v for k, v in measures.items() if k in log}
    fig, axes = plt.subplots(1, len(measures), figsize=(4.2 * len(measures), 3.6), squeeze=False)
    colors = dict(zip(dict.fromkeys(log["run"]), sns.color_palette("colorblind")))
    for ax, (column, label) in zip(axes[0], measures.items()):
        for run, rows in log.groupby("run", sort=False):
            for _, seed in rows.groupby("train_seed"):
                ax.plot(seed["step"], seed[column], color=colors[run], lw=0.6, alpha=0.4)
            mean = rows.groupby("step")[column].mean()
            ax.plot(mean.index, mean.to_numpy(), color=colors[run], lw=2, marker="o", ms=3, label=run)
            if column == "train_reward" and mean.idxmax() != mean.index[-1] and mean.iloc[-1] < mean.max():
                ax.plot(mean.idxmax(), mean.max(), "^", color=colors[run], ms=9, mec="black")
        ax.set(title=label, xlabel="step")
    axes[0][0].legend(fontsize=7, title="run", title_fontsize=7)
    fig.tight_layout()
    return fig


def interventions_held_out(summary):
    """Notebook 05's evaluation (``reports.n05_interventions.summary_table``): against N, meals per
    episode and the deadlock rate with their 95% intervals, and both rewards' means; a colour per
    run and a line style per kept adapter, the base model in black, the scripted policies in grey."""
    panels = {
        "meals": "meals per episode",
        "deadlock_rate": "deadlock rate",
        "reward": "paper A's reward",
        "reward_shaped": "shaped reward",
    }
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    trained = [r for r in dict.fromkeys(summary["run"]) if r not in ("base", "scripted")]
    colors = dict(zip(trained, sns.color_palette("colorblind")))
    styles = {"last": "-", "best_train": ":", "best_val": "--"}
    for ax, (column, label) in zip(axes[0], panels.items()):
        for (run, selection), rows in summary.groupby(["run", "selection"], sort=False):
            rows = rows.sort_values("n")
            if run == "base":
                style = {"color": "black", "lw": 2, "label": "base model"}
            elif run == "scripted":
                style = {"color": "0.6", "ls": "-.", "label": f"scripted: {selection}"}
            else:
                style = {"color": colors[run], "ls": styles.get(selection, "-"), "label": f"{run} ({selection})"}
            ax.plot(rows["n"], rows[column], marker="o", ms=3, **style)
            interval = {"meals": ("meals_low", "meals_high"), "deadlock_rate": ("deadlock_low", "deadlock_high")}
            if column in interval:
                low, high = interval[column]
                ax.fill_between(rows["n"], rows[low], rows[high], color=style["color"], alpha=0.08, lw=0)
        ax.set(title=label, xlabel="N philosophers", xticks=sorted(summary["n"].unique()))
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig
