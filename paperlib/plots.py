"""One seaborn style for every figure, and the functions that draw them.

Each figure is written by exactly one notebook, through one function here, and
saved by ``savefig`` under figures/.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from paperlib import paths  # noqa: E402

OURS = "ours"
PAPER = "paper"
SEED = 0  # every bootstrap interval is drawn with it: the same data gives the same figure


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight"})


def savefig(fig, name: str, directory=None) -> Path:
    """Save ``fig`` as <directory>/<name>.png (figures/ by default) and return its path
    relative to the repository (``paths.relative``), which is what notebooks print."""
    directory = Path(directory or paths.FIGURES)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    fig.savefig(path)
    return paths.relative(path)


set_style()


def reward_vs_meals(episodes, rewards=(("reward", "paper reward"), ("reward_shaped", "shaped reward"))):
    """Reward against meals per episode, one panel per reward; the degenerate maximum shows
    as the no_action points at zero meals and reward 1.0 under the paper's reward."""
    fig, axes = plt.subplots(1, len(rewards), figsize=(5.2 * len(rewards), 4), sharey=True, squeeze=False)
    # a small deterministic horizontal jitter so that coincident episodes stay visible
    jitter = episodes.assign(meals_jitter=episodes["meals_total"] + (episodes["seed"] % 7 - 3) * 0.04)
    for ax, (column, title) in zip(axes[0], rewards):
        sns.scatterplot(data=jitter, x="meals_jitter", y=column, hue="policy", style="n", alpha=0.7, ax=ax, s=28)
        ax.set(title=title, xlabel="meals in the episode", ylabel="episode reward", ylim=(-0.05, 1.08))
        ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
        if ax is not axes[0][-1]:
            ax.get_legend().remove()
    axes[0][-1].legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=8)
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


def _lines(ax, data, y, order):
    """One line per ``label`` of ``data`` (mean over instances at every step), coloured and
    dashed after its place in ``order``, so a label looks the same in every panel."""
    sns.lineplot(
        data=data, x="turn", y=y, hue="label", style="label", hue_order=order, style_order=order, errorbar=None, ax=ax
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
    """Fig. 3c: final coverage against final regret, one point per run (mean over instances)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sns.scatterplot(data=summary, x="coverage", y="regret", hue="label", style="arms", s=60, ax=ax)
    ax.set(xlabel="action coverage after the last step", ylabel="cumulative regret")
    ax.legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=7)
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


def frequency_bias(results, reported):
    """Fig. 4 / 15: entropy of the action distribution against repetitions of the last action
    (left) and strategy shares per repetition window (right), one row per model; ``results``
    maps a model to ``metrics.frequency_bias`` output, ``reported`` to paper lines (text)."""
    from paperlib.bandits.metrics import STRATEGIES, entropy_correlation, strategy_shares

    fig, axes = plt.subplots(len(results), 2, figsize=(11, 3.6 * len(results)), squeeze=False)
    for (model, result), (left, right) in zip(results.items(), axes):
        r, _ = entropy_correlation(result)
        sns.lineplot(data=result, x="repetitions", y="entropy", errorbar=("ci", 95), seed=SEED, ax=left)
        left.set(title=f"{model}: r = {r:+.2f}", xlabel="repetitions of the last action", ylabel="entropy (nats)")
        shares = strategy_shares(result).drop(index="all")
        shares[list(STRATEGIES)].plot.bar(stacked=True, ax=right, width=0.85, legend=False)
        right.set(title=f"{model}: strategy per window", xlabel="repetitions", ylabel="share", ylim=(0, 1))
        right.tick_params(axis="x", rotation=45, labelsize=7)
    axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.text(0.01, -0.01, f"{PAPER}: " + "; ".join(reported), fontsize=8, ha="left", va="top")
    fig.tight_layout()
    return fig


def knowing_doing_matrices(matrices):
    """Fig. 5: 2 x 3 knowing-doing matrices (% of all steps) side by side, ``matrices`` by title."""
    fig, axes = plt.subplots(1, len(matrices), figsize=(4.2 * len(matrices), 3.3), squeeze=False)
    for ax, (title, matrix) in zip(axes[0], matrices.items()):
        sns.heatmap(matrix.astype(float), annot=True, fmt=".1f", vmin=0, vmax=100, cmap="Blues", cbar=False, ax=ax)
        ax.set(title=title, xlabel="action", ylabel="rationale")
    fig.tight_layout()
    return fig


# -- paper A, notebook 02 ----------------------------------------------------------------


def _gap_label(model: str, decision: str) -> str:
    return model.removeprefix("policy:") if decision == "scripted" else f"{model} ({decision})"


def coordination_gap(table, paper):
    """Fig. 1 rebuilt: mean reward (95% t CI), deadlock rate (Wilson CI) and meals against N,
    one line per model and decision mode (``philosophers.gap.gap_table``); the paper's
    reported numbers (``gap.paper_rows``) as black crosses (a value) or grey bars (a range
    over models), labelled with their id in data/paper_reported.csv."""
    import pandas as pd

    panels = (
        ("reward", "mean reward", "reward"),
        ("deadlock_rate", "deadlock rate", "deadlock"),
        ("meals", "meals per episode", None),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    cells = table.assign(label=[_gap_label(m, d) for m, d in zip(table["model"], table["decision"])])
    ns = sorted(cells["n"].unique())
    offsets = {
        label: (i - (cells["label"].nunique() - 1) / 2) * 0.08 for i, label in enumerate(cells["label"].unique())
    }
    beside = max(offsets.values()) + 0.35  # the paper's numbers stand right of ours
    # scripted baselines dark and dashed, every model line a colour of its own (the default
    # palette has 10, which eleven lines would repeat)
    scripted = set(cells.loc[cells["decision"] == "scripted", "label"])
    models = cells.loc[cells["decision"] != "scripted", "label"].unique()
    colors = dict(
        zip([label for label in cells["label"].unique() if label in scripted], sns.color_palette("dark", len(scripted)))
    ) | dict(zip(models, sns.color_palette(n_colors=len(models))))
    for ax, (column, title, ci) in zip(axes, panels):
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
            style = dict(ls="--", alpha=0.75) if label in scripted else {}
            ax.errorbar(
                x, rows[column], yerr=err, marker="o", ms=4, capsize=2, label=label, color=colors[label], **style
            )
        claims = {"reward": "mean reward", "deadlock_rate": "deadlock rate"}.get(column)
        if claims is not None and len(paper):
            for row in paper[paper["claim"].str.contains(claims)].itertuples():
                if pd.notna(row.value):
                    ax.plot(row.n + beside, row.value, "kx", ms=8, mew=2, zorder=5)
                    ax.annotate(
                        row.id, (row.n + beside, row.value), xytext=(4, 2), textcoords="offset points", fontsize=7
                    )
                else:
                    ax.vlines(row.n + beside, float(row.low), float(row.high), color="0.4", lw=4, alpha=0.6, zorder=4)
                    ax.annotate(
                        row.id, (row.n + beside, float(row.high)), xytext=(4, 3), textcoords="offset points", fontsize=7
                    )
        ax.set(title=title, xlabel="philosophers N", xticks=ns)
    axes[0].set_ylim(-0.05, 1.08)
    axes[1].set_ylim(-0.05, 1.05)
    axes[2].legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=7)
    fig.text(
        0.01,
        -0.02,
        f"{PAPER}: black x = a reported value, grey bar = a reported range over models "
        "(ids as in data/paper_reported.csv)",
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def no_call_reward(episodes):
    """The DeepSeek case: each episode's reward against its share of steps with no parseable
    call (free-mode LLM episodes and the scripted ``no_action``); the paper's DeepSeek-R1-Distill
    (no call at all, reward 1.0 at every N, A13) as a black cross."""
    free = episodes[(episodes["decision"] == "free") | (episodes["policy"] == "no_action")]
    data = free.assign(
        no_action_share=free["no_actions"] / (free["no_actions"] + free["actions_total"]),
        label=[_gap_label(m, d) for m, d in zip(free["model"], free["decision"])],
    )
    data["no_action_share"] += (data["seed"] % 7 - 3) * 0.004  # keep coincident episodes visible
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sns.scatterplot(data=data, x="no_action_share", y="reward", hue="label", style="n", alpha=0.6, s=26, ax=ax)
    ax.plot(1.0, 1.0, "kx", ms=10, mew=2)
    ax.annotate(
        f"{PAPER}: DeepSeek-R1-Distill (A13)",
        (1.0, 1.0),
        xytext=(-6, -14),
        textcoords="offset points",
        ha="right",
        fontsize=8,
    )
    ax.set(
        xlabel="share of the episode's steps with no parseable call",
        ylabel="episode reward (paper's)",
        ylim=(-0.05, 1.08),
    )
    ax.legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=7)
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
        ax.plot(run["step"], run["train_reward"], marker="o", ms=3)
        peak = run.loc[run["train_reward"].idxmax()]
        ax.plot(peak["step"], peak["train_reward"], "^", color="C3", ms=9, label=f"peak (step {int(peak['step'])})")
        last = run.iloc[-1]
        ax.plot(last["step"], last["train_reward"], "s", color="C2", ms=8, label=f"saved (step {int(last['step'])})")
        for step, text in ((paper_peak, "paper's peak"), (paper_saved, "paper's saved step")):
            if step is not None:
                ax.axvline(step, color="0.5", ls=":", lw=1)
                ax.annotate(
                    f"{PAPER}: {text}",
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
        ax.legend(fontsize=7)
        components = run.melt(
            id_vars="step",
            value_vars=["r_nd_mean", "r_thru_mean", "r_fair_mean", "r_idle_mean"],
            var_name="component",
            value_name="mean",
        )
        components["component"] = components["component"].str.removesuffix("_mean")
        sns.lineplot(data=components, x="step", y="mean", hue="component", marker="o", ms=3, ax=row[1])
        row[1].set(title=f"{label}: reward components", xlabel="step", ylabel="mean over the step's episodes")
        row[1].legend(fontsize=7)
        rates = run.melt(
            id_vars="step",
            value_vars=["valid_call_rate", "invalid_action_rate", "valid_share_mean"],
            var_name="rate",
            value_name="value",
        )
        sns.lineplot(data=rates, x="step", y="value", hue="rate", marker="o", ms=3, ax=row[2])
        row[2].set(title=f"{label}: calls and actions", xlabel="step", ylabel="share", ylim=(-0.02, 1.02))
        row[2].legend(fontsize=7)
    fig.tight_layout()
    return fig


def reward_by_selection(episodes, column="reward", order=None):
    """Per-episode ``column`` for the base model and each selected adapter, one panel per N
    (box and every episode as a point, placed without random jitter; where many episodes score
    the same, as at the reward's maximum, the points that do not fit side by side overlap, and
    seaborn's warning that says so is silenced)."""
    ns = sorted(episodes["n"].unique())
    fig, axes = plt.subplots(1, len(ns), figsize=(4.4 * len(ns), 3.8), sharey=True, squeeze=False)
    for ax, n in zip(axes[0], ns):
        cell = episodes[episodes["n"] == n]
        sns.boxplot(data=cell, x="selection", y=column, order=order, color="0.85", fliersize=0, ax=ax)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r".* of the points cannot be placed", UserWarning)
            sns.swarmplot(data=cell, x="selection", y=column, order=order, size=2.5, alpha=0.7, ax=ax)
        ax.set(title=f"N = {n}", xlabel="adapter", ylabel=f"episode {column}")
        ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    return fig


def rlft_training(log):
    """Per update of each RLFT run (``log``'s ``run`` column): the invalid-action rate, regret,
    coverage and KL to the base model on the update's training instances."""
    panels = (
        ("invalid_rate", "invalid-action rate"),
        ("regret", "final cumulative regret"),
        ("coverage", "final coverage"),
        ("kl", "KL to the base model (per token)"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.4))
    for ax, (column, title) in zip(axes, panels):
        sns.lineplot(data=log, x="step", y=column, hue="run", marker="o", ms=3, ax=ax)
        ax.set(title=title, xlabel="update", ylabel=column)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def rlft_held_out(steps, table):
    """Fig. 6 and 7 on held-out instances: mean cumulative regret and coverage per step, one line
    per adapter or reference agent; and each metric's mean with its 95% interval per adapter."""
    fig, axes = plt.subplots(2, 3, figsize=(15, 7.2))
    order = list(dict.fromkeys(steps["adapter"]))
    for ax, column in zip(axes[0][:2], ("regret", "coverage")):
        _lines(ax, steps.rename(columns={"adapter": "label"}), column, order)
        ax.set(title=f"held-out {column}", xlabel="step", ylabel=column)
    _legend_right(axes[0][:2])
    axes[0][2].axis("off")
    for ax, metric in zip(axes[1], ("regret", "coverage", "invalid_share")):
        cells = table[table["metric"] == metric]
        ax.errorbar(
            cells["adapter"],
            cells["mean"],
            yerr=[cells["mean"] - cells["ci_low"], cells["ci_high"] - cells["mean"]],
            fmt="o",
            capsize=4,
        )
        ax.set(title=f"{metric} at the last step (95% CI)", xlabel="", ylabel=metric)
        ax.tick_params(axis="x", rotation=25)
    fig.tight_layout()
    return fig


def exploration_mechanisms(table):
    """Fig. 8: final coverage and regret per exploration mechanism (one marker per model, with
    its 95% interval), UCB and random as dashed lines."""
    llm = table[~table["model"].str.startswith("baseline:")]
    references = table[table["model"].str.startswith("baseline:")]
    order = list(dict.fromkeys(llm["exploration"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for ax, metric in zip(axes, ("coverage", "regret")):
        for i, (model, rows) in enumerate(llm.groupby("model", sort=False)):
            rows = rows.set_index("exploration").loc[order]
            x = [j + 0.12 * i for j in range(len(order))]
            ax.errorbar(
                x,
                rows[metric],
                yerr=[rows[metric] - rows[f"{metric}_low"], rows[f"{metric}_high"] - rows[metric]],
                fmt="o",
                capsize=3,
                label=model,
            )
        for r in references.itertuples():
            ax.axhline(getattr(r, metric), color="0.55", lw=1, ls="--")
            ax.annotate(
                r.exploration,
                (1.0, getattr(r, metric)),
                xycoords=("axes fraction", "data"),
                xytext=(-4, 3),
                textcoords="offset points",
                ha="right",
                fontsize=7,
                color="0.4",
            )
        ax.set_xticks(range(len(order)), order, rotation=30, ha="right")
        ax.set(title=f"final {metric}", ylabel=metric)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def tictactoe_rlft(log, table, reported, main_cells, budget_cells):
    """Paper B's Fig. 9 on held-out games: (a) each RLFT run's training return and invalid-move rate
    per update; (b) the mean return (95% CI) against each opponent (``main_cells``: run -> its
    cells with the run's prompt) of the base model, each adapter and the scripted players, with
    paper B's Gemma2 2B before and after RLFT as crosses; (c) the return against random with CoT
    at each thinking budget (``budget_cells``: budget -> cell)."""
    import pandas as pd

    fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
    for ax, (column, title) in zip(
        axes[:2], (("mean_return", "training return"), ("invalid_rate", "training invalid-move rate"))
    ):
        sns.lineplot(data=log, x="step", y=column, hue="run", marker="o", ms=3, ax=ax)
        ax.set(title=title, xlabel="update", ylabel=column)
        ax.legend(fontsize=7)
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
    for i, label in enumerate(labels):
        rows = main[main["label"] == label].drop_duplicates("opponent").set_index("opponent").reindex(opponents)
        x = [j + 0.1 * (i - len(labels) / 2) for j in range(len(opponents))]
        ax.errorbar(
            x,
            rows["mean"],
            yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
            fmt="o",
            capsize=3,
            label=label,
        )
    paper = pd.to_numeric(reported.set_index("id")["value"], errors="coerce")
    for j, opponent in enumerate(opponents):
        for ids, marker in ((("B24", "B26"), "x"), (("B25", "B27"), "+")):
            value = {"random": paper[ids[0]], "mcts": paper[ids[1]]}.get(opponent)
            if value is not None:
                ax.plot(
                    j,
                    value,
                    marker=marker,
                    color="black",
                    ms=9,
                    ls="none",
                    label=f"paper 2B {'before' if marker == 'x' else 'after'} RLFT" if j == 0 else None,
                )
    ax.set_xticks(range(len(opponents)), opponents)
    ax.set(title="held-out return (95% CI)", xlabel="opponent", ylabel="mean return", ylim=(-1.1, 1.1))
    ax.legend(fontsize=6)
    ax = axes[3]
    budgets = table[(table["metric"] == "return") & table["cell"].isin(budget_cells.values())]
    budgets = budgets[budgets["adapter"].isin(["base", "RLFT"])]
    tokens = {cell: budget for budget, cell in budget_cells.items()}
    budgets = budgets.assign(budget=budgets["cell"].map(tokens), label=budgets["adapter"] + " (" + budgets["run"] + ")")
    for label, rows in budgets.groupby("label", sort=False):
        rows = rows.sort_values("budget")
        ax.errorbar(
            rows["budget"],
            rows["mean"],
            yerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]],
            fmt="o-",
            capsize=3,
            label=label,
        )
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    ax.set(title="thinking budget, CoT, against random", xlabel="max new tokens", ylabel="mean return")
    fig.tight_layout()
    return fig
