"""Several training seeds in notebooks 03, 04, 14 and 16 (``paperlib.reports.seeds``), on hand-made
tables: the base model's rows kept once, a table per seed and pooled, sentences per seed and
pooled, and data of one seed without the column read as before."""

import numpy as np
import pandas as pd
import pytest

from paperlib.reports import seeds

REPORTED = pd.read_csv("data/paper_reported.csv")


def _played(gains=(0.0, 0.1, 0.2), instances=8):
    """Per training seed, what an evaluation returns: the base model's rows (the same for every seed)
    and the adapter's, its coverage raised by the seed's gain, a reference player's."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.5, instances)
    out = {}
    for seed, gain in enumerate(gains):
        rows = []
        for adapter, values in (("base", base), ("RLFT", base + gain + 0.01 * np.arange(instances)), ("ucb", base * 0)):
            rows += [
                {"adapter": adapter, "seed": i, "update": 0 if adapter == "base" else 2, "coverage": v, "regret": 1 - v}
                for i, v in enumerate(values)
            ]
        out[seed] = pd.DataFrame(rows).assign(invalid_steps=0, horizon=10, model="tiny-lm")
    return out


def test_stack_keeps_the_shared_rows_once_and_tags_the_rest_with_their_seed():
    stacked = seeds.stack(_played(), shared=("base", "ucb"))
    assert stacked["train_seed"].dtype == "Int64"
    assert stacked.groupby("adapter")["train_seed"].apply(lambda s: s.isna().all()).to_dict() == {
        "RLFT": False,
        "base": True,
        "ucb": True,
    }
    assert (stacked["adapter"] == "base").sum() == 8 and (stacked["adapter"] == "RLFT").sum() == 24
    assert seeds.seeds_of(stacked) == [0, 1, 2]
    assert list(seeds.split(stacked)) == [0, 1, 2]
    assert len(seeds.split(stacked)[1]) == 8 * 3  # its own adapter's rows, the base model's and ucb's
    assert seeds.of_seed(stacked, 2)["coverage"].sum() == pytest.approx(seeds.split(stacked)[2]["coverage"].sum())
    assert "train_seed" not in seeds.of_seed(stacked, 2)


def test_a_table_per_seed_and_pooled_over_the_seeds():
    from paperlib.bandits.training import before_after

    stacked = seeds.stack(_played(), shared=("base", "ucb"))
    table = seeds.table_by_seed(stacked, before_after, ("adapter", "seed"))
    assert list(dict.fromkeys(table["train_seed"])) == ["pooled", "0", "1", "2"]  # the headline first
    coverage = table[(table["adapter"] == "RLFT") & (table["metric"] == "coverage")].set_index("train_seed")
    base = stacked[stacked["adapter"] == "base"]["coverage"].mean()
    for seed, gain in zip("012", (0.0, 0.1, 0.2)):  # each seed against the one base model
        assert coverage.loc[seed, "difference"] == pytest.approx(gain + 0.035)
    base_rows = table[(table["adapter"] == "base") & (table["metric"] == "coverage")]
    assert len(base_rows) == 4 and base_rows["mean"].to_numpy() == pytest.approx([base] * 4)
    # pooled: per instance the seeds' mean, against the base model on the same 8 instances
    assert coverage.loc["pooled", "difference"] == pytest.approx(0.1 + 0.035)
    assert coverage.loc["pooled", "n"] == 8
    assert len(seeds.pooled(table)) == len(table) / 4 and "train_seed" not in seeds.pooled(table)
    # the sentences: one per part, under its heading, pooled first
    said = seeds.sentences(table, lambda part: f"{len(part)} rows")
    assert said.split("\n\n") == [
        "**Pooled over the 3 training seeds (the seeds' mean per held-out key).** 9 rows",
        "**Training seed 0.** 9 rows",
        "**Training seed 1.** 9 rows",
        "**Training seed 2.** 9 rows",
    ]


def test_data_of_one_seed_or_without_the_column_give_the_table_as_before():
    from paperlib.bandits.training import before_after

    one = seeds.stack({0: _played()[0]}, shared=("base", "ucb"))
    old = one.drop(columns="train_seed")
    for frame in (one, old):
        table = seeds.table_by_seed(frame, before_after, ("adapter", "seed"))
        pd.testing.assert_frame_equal(table, before_after(frame))
        assert seeds.pooled(table) is table and seeds.sentences(table, lambda part: "said") == "said"
    assert seeds.split(old) == {None: old} and seeds.each(old) == {None: old} and seeds.of_seed(old, 0) is old
    assert seeds.columns(old, ["step", "kl"]) == ["step", "kl"]
    assert seeds.columns(one, ["step", "kl"]) == ["train_seed", "step", "kl"]


def test_a_run_of_one_seed_beside_one_of_three_is_in_every_seed_s_part():
    from paperlib.reports.n16_tictactoe import held_out_table

    rows = []
    for run, trained in (("no CoT", (0, 1, 2)), ("CoT", (0,))):
        for adapter, seeds_ in (("base", (None,)), ("RLFT", trained)):
            for s in seeds_:
                for game in range(6):
                    value = [1.0, -1.0, 0.0][game % 3] + (0.0 if s is None else 0.5 * (game % 2) * (s + 1))
                    rows.append(
                        {
                            "run": run,
                            "cell": "random/legal/no_cot/16",
                            "adapter": adapter,
                            "train_seed": s,
                            "seed": game,
                            "return": min(value, 1.0),
                            "invalid_moves": 0,
                            "moves": 4,
                            "update": 0 if s is None else 2,
                            "model": "tiny-lm",
                        }
                    )
    games = pd.DataFrame(rows).astype({"train_seed": "Int64"})
    table = held_out_table(games)
    assert list(dict.fromkeys(table["train_seed"])) == ["pooled", "0", "1", "2"]  # the headline first
    cot = table[(table["run"] == "CoT") & (table["adapter"] == "RLFT") & (table["metric"] == "return")]
    assert len(cot) == 4 and cot["mean"].nunique() == 1  # the ablation's one seed, the same in every part
    main = table[(table["run"] == "no CoT") & (table["adapter"] == "RLFT") & (table["metric"] == "return")]
    assert main["mean"].nunique() == 4


def test_the_null_result_per_seed_and_pooled_with_its_sentences():
    from paperlib.reports import n04_null_result

    rng = np.random.default_rng(1)
    played = {}
    base = rng.uniform(0.3, 0.7, 10)
    for s in (0, 1, 2):
        rows = [{"selection": "base", "seed": e, "reward": v} for e, v in enumerate(base)]
        for rule in ("last", "best_val"):
            rows += [{"selection": rule, "seed": e, "reward": v + 0.05 * s} for e, v in enumerate(base)]
        played[s] = pd.DataFrame(rows).assign(n=5, step=3, meals_total=1, reward_shaped=lambda d: d["reward"] / 2)
    episodes = seeds.stack(played, label="selection")
    table = n04_null_result.null_result_table(episodes)
    last = table[table["selection"] == "last"].set_index("train_seed")
    assert last["difference"].round(6).to_dict() == {"0": 0.0, "1": 0.05, "2": 0.1, "pooled": 0.05}
    shaped = n04_null_result.shaped_reward_table(episodes)
    assert list(shaped.columns) == ["train_seed", "selection", "n", "base_mean", "mean", "p", "g"]
    control = pd.DataFrame({"p": [0.01], "difference": [0.2]})
    said = n04_null_result.null_result_sentences(table, REPORTED, "tiny-lm", control, episodes)
    assert said.count("**Training seed") == 3 and said.count("**Pooled over the 3 training seeds") == 1
    assert said.count("Paper A (Qwen3-14B, N = 5)") == 1 and said.index("Paper A") < said.index("**Training seed")
    assert "Ours (tiny-lm, adapter `last`, step 3): N = 5: 0.504 → 0.554" in said  # seed 1
    assert "Ours (tiny-lm, adapter `last`, step 3 of every seed): N = 5: 0.504 → 0.554" in said  # pooled
    one = episodes[episodes["train_seed"].isna() | (episodes["train_seed"] == 0)].drop(columns="train_seed")
    assert n04_null_result.null_result_sentences(
        n04_null_result.null_result_table(one), REPORTED, "tiny-lm", control, one
    ) == n04_null_result.null_result_sentence(n04_null_result.null_result_table(one), REPORTED, "tiny-lm", control, one)


def test_each_seed_s_run_keeps_its_own_steps():
    from paperlib.reports import n04_null_result

    log = pd.DataFrame(
        {
            "train_seed": [0, 0, 0, 1, 1, 1],
            "step": [1, 2, 3, 1, 2, 3],
            "train_reward": [0.1, 0.5, 0.2, 0.1, 0.2, 0.6],
        }
    )
    validation = pd.DataFrame(
        {"train_seed": [0, 0, 0, 1, 1, 1], "step": [1, 2, 3, 1, 2, 3], "reward": [0.9, 0.1, 0.1, 0.1, 0.1, 0.9]}
    )
    chosen = n04_null_result.chosen_steps(log, validation)
    # best_train credits row k to the adapter of step k - 1
    assert chosen == {0: {"last": 3, "best_train": 1, "best_val": 1}, 1: {"last": 3, "best_train": 2, "best_val": 3}}
    table = n04_null_result.selection_tables(log, validation, chosen)
    assert table["train_seed"].tolist() == [0, 0, 0, 1, 1, 1] and table.loc[5, "validation reward"] == 0.9
    old = n04_null_result.chosen_steps(log[log["train_seed"] == 0].drop(columns="train_seed"), validation.iloc[:3])
    assert old == {None: chosen[0]}


def test_the_training_curve_per_seed_and_of_the_seeds_mean():
    from paperlib.reports.n03_grpo import curve_sentence, curve_sentences

    def run(seed, rewards):
        return pd.DataFrame(
            {
                "train_seed": seed,
                "step": [1, 2, 3],
                "reward": "paper",
                "train_reward": rewards,
                "reward_std": 0.1,
                "episodes": 6,
                "meals": [1.0, 1.0, 0.5],
                "valid_call_rate": [0.8, 0.7, 0.6],
                "valid_share_mean": [0.5, 0.4, 0.3],
                "invalid_action_rate": 0.2,
                "deadlock_rate": 0.0,
            }
        )

    log = pd.concat([run(0, [0.2, 0.6, 0.4]), run(1, [0.2, 0.4, 0.5])], ignore_index=True)
    said = curve_sentences(log, REPORTED, "tiny-lm").split("\n\n")
    assert said[1] == "**Training seed 0.** " + curve_sentence(log[log["train_seed"] == 0], REPORTED, "tiny-lm")
    assert said[0].startswith("**Pooled over the 2 training seeds")
    assert "peaked at step 2 (0.500); the last step scored 0.450; earlier steps with a higher mean: 2." in said[0]
    assert said[0].endswith("The last step was below its own seed's peak in 1 of 2 seeds.")
    one = log[log["train_seed"] == 1]
    assert curve_sentences(one, REPORTED, "m") == curve_sentence(one, REPORTED, "m")


def test_the_figures_draw_a_line_per_seed():
    import matplotlib

    matplotlib.use("Agg")
    from paperlib import plots

    log = pd.DataFrame(
        {
            "train_seed": [0, 0, 1, 1],
            "step": [1, 2, 1, 2],
            "run": "RLFT",
            "invalid_rate": [0.5, 0.4, 0.6, 0.2],
            "regret": 1.0,
            "coverage": 0.5,
            "kl": 0.01,
        }
    )
    fig = plots.rlft_training(log)
    assert len([line for line in fig.axes[0].lines if len(line.get_xdata()) == 2]) == 2  # one per seed
    grpo = log.assign(
        reward="paper",
        train_reward=[0.2, 0.6, 0.4, 0.4],
        valid_share_mean=0.5,
        r_nd_mean=1.0,
        r_thru_mean=0.1,
        r_fair_mean=0.0,
        r_idle_mean=0.0,
        valid_call_rate=0.9,
        invalid_action_rate=0.1,
    )
    fig = plots.grpo_training(grpo, {"paper's reward": "paper"})
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert {"training seed 0", "training seed 1", "mean of the seeds", "peak (step 2)", "saved (step 2)"} <= set(labels)


def test_the_held_out_figure_marks_each_seed_s_own_mean_beside_the_pooled_one():
    import matplotlib

    matplotlib.use("Agg")
    from paperlib import plots
    from paperlib.bandits.training import before_after

    stacked = seeds.stack(_played(), shared=("base", "ucb"))
    table = seeds.table_by_seed(stacked, before_after, ("adapter", "seed"))
    steps = stacked.assign(turn=1, invalid_share=0.0)
    fig = plots.rlft_held_out(steps, seeds.pooled(table), seeds=seeds.seed_parts(table))
    coverage = fig.axes[4]  # the bottom row's middle panel
    hollow = [line for line in coverage.lines if line.get_markerfacecolor() == "none"]
    own = table[(table["adapter"] == "RLFT") & (table["metric"] == "coverage") & (table["train_seed"] != "pooled")]
    # one set of markers, the adapter's (the base model and ucb are the same in every seed): its seeds' own means
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == pytest.approx(own["mean"].tolist())
    assert list(seeds.seed_parts(table)) == ["0", "1", "2"] and seeds.seed_parts(seeds.pooled(table)) == {}
    legend = [text.get_text() for text in fig.axes[2].get_legend().get_texts()]
    assert "each of the 3 training seeds' own mean\n(hollow, left of the pooled mean)" in legend
    plain = plots.rlft_held_out(steps, seeds.pooled(table))  # no seeds given: no hollow marker
    assert not [line for line in plain.axes[4].lines if line.get_markerfacecolor() == "none"]


def test_each_seed_is_compared_with_the_base_model_or_with_its_own_seed_of_a_trained_control():
    from paperlib.stats import per_seed_differences

    def rows(adapter, values, train_seed=None):
        return pd.DataFrame(
            {"adapter": adapter, "seed": range(len(values)), "coverage": values, "train_seed": train_seed}
        )

    frame = pd.concat(
        [
            rows("base", [0.4, 0.6]),  # evaluated once: every seed's control
            *(rows("RLFT", [c, c], s) for s, c in enumerate((0.4, 0.2, 0.2))),
            *(rows("RLFT + bonus", [c, c], s) for s, c in enumerate((1.0, 0.2, 0.5))),
        ]
    ).astype({"train_seed": "Int64"})
    against_base = per_seed_differences(frame, "adapter", "coverage", "RLFT", "base", ["seed"])
    assert against_base == pytest.approx({0: -0.1, 1: -0.3, 2: -0.3})
    # the bonus run's seed k against the run without it of seed k, not against the seeds' mean (0.267)
    bonus = per_seed_differences(frame, "adapter", "coverage", "RLFT + bonus", "RLFT", ["seed"])
    assert bonus == pytest.approx({0: 0.6, 1: 0.0, 2: 0.3})
