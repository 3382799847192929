"""Notebook 05's pieces on hand-made tables: paper B's penalty on paper A's scale, the curriculum's
schedule and rows, the share of groups with a learning signal, and the verdict per prescription."""

import json

import pandas as pd
import pytest
from scripted_backend import ScriptedBackend
from test_grpo import FakeTrainer

from paperlib import profiles
from paperlib.philosophers.reward import invalid_penalty
from paperlib.philosophers.training import REWARDS, TableSettings, add_outcomes, recipe, signal_share
from paperlib.reports import n05_interventions as n05
from paperlib.training.checkpoints import RunDir
from paperlib.training.grpo import Rollout


# -- paper B's penalty -----------------------------------------------------------------------
def test_each_failed_call_costs_five_over_the_episodes_decisions():
    assert invalid_penalty(1, 5, 5) == pytest.approx(-0.2)  # -5 / (N R)
    assert invalid_penalty(25, 5, 5) == pytest.approx(-5.0)  # every call failed: five times the reward's range
    assert invalid_penalty(0, 15, 5) == 0.0
    assert invalid_penalty(3, 15, 5) == pytest.approx(-0.2)


def test_the_penalised_reward_is_the_shaped_one_minus_the_failed_calls():
    episodes = pd.DataFrame(
        {
            "n": [5, 5, 10],
            "rounds": [5, 5, 5],
            "actions_total": [25, 20, 0],
            "no_actions": [0, 5, 50],
            "invalid_actions": [0, 10, 0],
            "reward_shaped": [0.7, 0.0, 0.0],
        }
    )
    rows = add_outcomes(episodes)
    # 0 failed; 10 invalid + 5 missing of 25; 50 missing of 50
    assert rows["reward_shaped_penalty"].tolist() == pytest.approx([0.7, -3.0, -5.0])
    assert REWARDS["shaped_penalty"] == "reward_shaped_penalty"


# -- the curriculum ----------------------------------------------------------------------------
def test_the_curriculum_runs_its_tables_in_blocks_the_longer_first():
    s = recipe("paper", reward="shaped", curriculum=(5, 10, 15))
    assert [s.n_at(step) for step in range(1, 17)] == [5] * 6 + [10] * 5 + [15] * 5
    assert [recipe("paper").n_at(step) for step in (1, 16)] == [5, 5]
    assert recipe("paper", curriculum=(5, 10), steps=3).n_at(2) == 5


def test_the_curriculum_keeps_the_recipes_rows_per_step():
    plain, s = recipe("paper"), recipe("paper", reward="shaped", curriculum=(5, 10, 15))
    assert s.row_count == plain.row_count == 150  # 5 seats x 5 turns x 2 groups x 3 episodes
    assert s.batch_size == 15 * 6  # every philosopher of the six episodes at N = 15 decides at once
    rows = [json.loads(r) for r in s.dataset_rows()]
    per_step = s.row_count // s.group_size  # trl repeats each row G times
    assert len(rows) == per_step * s.steps
    for step in range(1, s.steps + 1):
        keys = rows[(step - 1) * per_step : step * per_step]
        assert [k["seed"] for k in keys[:: per_step // s.groups]] == s.step_seeds(step)  # seed-major
        for seed in s.step_seeds(step):
            seats = sorted({k["seat"] for k in keys if k["seed"] == seed})
            assert len(seats) == 5 and set(seats) <= set(range(s.n_at(step)))
            assert seats == s.trained_seats(seed, s.n_at(step))
    assert s.trained_seats(7, 5) == [0, 1, 2, 3, 4]
    assert s.trained_seats(7, 15) == s.trained_seats(7, 15) != s.trained_seats(8, 15)  # drawn from the seed


def test_a_run_recorded_before_the_curriculum_resumes_and_one_with_it_reads_back(tmp_path):
    old = {k: v for k, v in recipe("smoke").config().items() if k != "curriculum"}
    RunDir(tmp_path / "old").claim(old)
    RunDir(tmp_path / "old").claim(recipe("smoke").config(), recipe("smoke").defaults())  # the same run
    s = recipe("smoke", curriculum=(2, 3))
    RunDir(tmp_path / "new").claim(s.config())
    assert TableSettings.of_run(tmp_path / "new") == s
    with pytest.raises(ValueError, match="at least 2 philosophers"):
        recipe("smoke", curriculum=(1, 3))
    with pytest.raises(ValueError, match="a curriculum of 3 tables needs as many steps"):
        recipe("smoke", curriculum=(2, 3, 4))  # smoke: 2 steps


def test_a_curriculum_step_plays_its_n_and_trains_the_drawn_seats(tmp_path):
    settings = recipe("smoke", curriculum=(2, 3), rounds=1, groups=1, group_size=2, reward="shaped", val_episodes=0)
    rollout = Rollout(settings, type("Tokenizer", (), {"eos_token_id": 0})(), RunDir(tmp_path))
    rollout.backend = ScriptedBackend(["no call"] * 6)  # step 2: 2 episodes x 3 philosophers x 1 round
    trainer = FakeTrainer()
    trainer.state.global_step = 1
    dataset = settings.dataset_rows()
    half = len(dataset) // 2
    prompts = [row for row in dataset[half:] for _ in range(2)]  # step 2's rows, each repeated G times
    out = rollout(prompts, trainer)
    (seed,) = settings.step_seeds(2)
    seats = settings.trained_seats(seed, 3)
    assert len(out["prompt_ids"]) == len(prompts) == 2 * 2  # the recipe's row count: 2 seats x 2 episodes
    for prompt, ids in zip(prompts, out["prompt_ids"]):
        assert f"You are philosopher {json.loads(prompt)['seat']}." in "".join(map(chr, ids))
    assert {json.loads(p)["seat"] for p in prompts} == set(seats)
    assert rollout.last["n"] == 3 and rollout.last["episodes"] == 2
    assert rollout.last["signal_share"] == 0.0  # nobody acted: both episodes score the same
    assert set(RunDir(tmp_path).rollouts("episodes")["n"]) == {3}


def test_the_signal_share_counts_groups_whose_episodes_differ():
    episodes = pd.DataFrame({"seed": [1, 1, 1, 2, 2, 2], "reward_shaped": [0.0, 0.0, 0.0, 0.0, 0.4, 0.0]})
    assert signal_share(episodes, "reward_shaped") == 0.5
    assert signal_share(episodes.assign(reward_shaped=0.0), "reward_shaped") == 0.0


# -- the report: verdicts and claims on hand-made episodes -------------------------------------
def _claim(ours, p=float("nan"), p_tost=float("nan"), verdict="inconclusive", note="", seeds=(float("nan"),) * 2):
    return {
        "ours": ours,
        "p_holm": p,
        "p_tost_holm": p_tost,
        "verdict": verdict,
        "note": note,
        "seed_low": seeds[0],
        "seed_high": seeds[1],
    }


@pytest.mark.parametrize(
    "meals, deadlock, outcome",
    [
        (_claim(0.4, p=0.001), _claim(0.0, p_tost=0.01), "closes the gap"),
        (_claim(0.4, p=0.001), _claim(-0.2, p=0.01), "closes the gap"),  # fewer deadlocks: no rise
        (_claim(0.4, p=0.001), _claim(0.2, p=0.01), "worse"),  # more meals, but more deadlocks
        (_claim(-0.3, p=0.001), _claim(0.0), "worse"),
        (_claim(0.4, p=0.001, seeds=(0.1, 0.6)), _claim(0.0), "closes the gap"),  # every seed eats more
        (_claim(0.1, p=0.001, seeds=(0.0, 0.2)), _claim(0.0), "inconclusive"),  # one seed did not move
        (_claim(0.4, p=0.001), _claim(0.2, p=0.01, seeds=(-0.1, 0.5)), "closes the gap"),  # not every seed's rise
        (_claim(0.01, p=0.6, p_tost=0.01), _claim(0.0), "no change"),  # only an equivalence test says so
        (_claim(0.01, p=0.6, p_tost=0.3), _claim(0.0), "inconclusive"),
        (_claim(0.4, p=0.001), _claim(0.0, verdict="cannot test", note="cannot test: gate"), "cannot test"),
    ],
)
def test_a_prescriptions_verdict_reads_its_meals_and_deadlock_rows(meals, deadlock, outcome):
    from paperlib.reports.n05_interventions import prescription_verdict

    assert prescription_verdict(meals, deadlock)[0] == outcome


def test_a_prescriptions_verdict_says_when_the_seeds_alone_leave_it_open():
    from paperlib.reports.n05_interventions import prescription_verdict

    meals = _claim(0.1, p=0.001, p_tost=0.01, seeds=(0.0, 0.2))
    assert prescription_verdict(meals, _claim(0.0)) == (
        "inconclusive",
        "the pooled difference in meals is not in every training seed",
    )


def _episodes():
    """Ten evaluation seeds at N = 5: the base model eats 0 or 1 meals, the shaped run's last adapter
    one more on every seed, the recipe's none; two training seeds per run; two scripted policies."""
    rows = []
    runs = {"recipe": 0, "shaped": 1, "curriculum": 1, "penalty": 0}
    for seed in range(10):
        base = seed % 2
        rows.append({"run": "base", "selection": "base", "train_seed": pd.NA, "step": 0, "meals_total": base})
        for policy, meals in (("waiter", 4), ("resource_hierarchy", 3)):
            rows.append({"run": "scripted", "selection": policy, "train_seed": pd.NA, "step": 0, "meals_total": meals})
        for run, extra in runs.items():
            for train_seed in (0, 1):
                for selection, step in (("last", 16), ("best_train", 9), ("best_val", 16)):
                    meals = 0 if run == "recipe" else base + extra
                    rows.append(
                        {
                            "run": run,
                            "selection": selection,
                            "train_seed": train_seed,
                            "step": step,
                            "meals_total": meals,
                        }
                    )
    frame = pd.DataFrame(rows).assign(n=5, deadlock=False, decisions=25, valid_call_rate=0.9)
    frame["seed"] = [i // (3 + 4 * 2 * 3) for i in range(len(frame))]
    frame["reward"] = 1.0 - 0.1 * frame["meals_total"]
    return frame.assign(reward_shaped=0.1 * frame["meals_total"], train_seed=frame["train_seed"].astype("Int64"))


def _signal(runs=("recipe", "shaped", "curriculum", "penalty"), share=0.5):
    steps = [
        {"run": r, "train_seed": s, "step": k, "reward": "shaped", "reward_shaped_std": 0.1, "signal_share": share}
        for r in runs
        for s in (0, 1)
        for k in range(1, 5)
    ]
    from paperlib.reports.n05_interventions import signal_table

    return signal_table(pd.DataFrame(steps))


def test_the_claims_are_our_own_paired_and_the_verdicts_follow_them():
    from paperlib.claims import OURS, OURS_VALUE, addressed

    episodes = _episodes()
    claims = n05.claims_rows(episodes, _signal(), "05_interventions.parquet", "smoke", "tiny-lm", [5])
    assert set(claims["reported"]) == {OURS} and set(claims["paper"]) == {"A"} and not addressed(claims)
    assert set(claims["paper_value"]) == {OURS_VALUE} and claims["claim"].is_unique
    assert len(claims) == len(n05.CONTRASTS) * 2  # meals and deadlocks at one N
    verdicts = n05.verdict_table(claims, [5]).set_index("prescription")
    # shaped eats one more than the recipe on every seed: the paired differences do not vary (Wilcoxon)
    assert verdicts.loc["reward shaping", "meals_difference"] == pytest.approx(1 + 0.5)
    assert verdicts.loc["reward shaping", "verdict"] == "closes the gap"
    assert verdicts.loc["curriculum", "meals_difference"] == 0.0
    assert verdicts.loc["paper B's penalty", "verdict"] == "worse"  # one meal fewer than shaped on every seed
    # best_val kept the last step in every run and seed: the same adapter, nothing to test
    assert verdicts.loc["checkpoint discipline", "verdict"] == "cannot test"
    assert "the same adapter" in verdicts.loc["checkpoint discipline", "why"]
    assert verdicts.loc["the three together", "verdict"] == "closes the gap"
    assert "closes the gap" in n05.verdict_sentences(verdicts.reset_index())


def test_a_run_without_signal_cannot_test_its_prescription():

    signal = pd.concat([_signal(("recipe", "curriculum", "penalty")), _signal(("shaped",), share=0.0)])
    claims = n05.claims_rows(_episodes(), signal, "05_interventions.parquet", "smoke", "tiny-lm", [5])
    verdicts = n05.verdict_table(claims, [5]).set_index("prescription")
    assert verdicts.loc["reward shaping", "verdict"] == "cannot test"
    assert "gate 'learning signal'" in verdicts.loc["reward shaping", "why"]
    assert "Too few to learn in shaped" in n05.signal_sentence(signal)
    assert "shaped carry prescriptions that cannot be tested" in n05.signal_sentence(signal)


def test_a_control_without_signal_leaves_the_comparisons_against_it_standing():

    signal = pd.concat([_signal(("shaped", "curriculum", "penalty")), _signal(("recipe",), share=0.0)])
    sentence = n05.signal_sentence(signal)
    assert "Too few to learn in recipe" in sentence and "cannot be tested" not in sentence
    assert "recipe is no prescription's own run" in sentence
    claims = n05.claims_rows(_episodes(), signal, "05_interventions.parquet", "smoke", "tiny-lm", [5])
    verdicts = n05.verdict_table(claims, [5]).set_index("prescription")
    assert verdicts.loc["reward shaping", "verdict"] == "closes the gap"  # recipe is its control, not its treatment


def test_the_gap_is_measured_to_the_scripted_policy_that_eats_most():

    summary = n05.summary_table(_episodes())
    gap = n05.gap_table(summary).set_index(["run", "selection"])
    assert set(gap["scripted"]) == {"waiter"} and (gap["scripted meals"] == 4).all()
    # base 0.5 meals, shaped 1.5: a third of the way to 4
    assert gap.loc[("shaped", "last"), "gap closed"] == pytest.approx(1.0 / 3.5)
    table = n05.against_table(_episodes(), "base")
    shaped = table[(table["run"] == "shaped") & (table["metric"] == "meals_total")]
    assert (shaped["difference"] == 1.0).all() and (shaped["pairs"] == 10).all()


def test_notebook_99_collects_our_own_claims_beside_the_papers(tmp_path):
    from paperlib.claims import OURS, collect_claims, reported_numbers, write_claims

    claims = n05.claims_rows(_episodes(), _signal(), "05_interventions.parquet", "smoke", "tiny-lm", [5])
    write_claims(claims, tmp_path)
    collected = collect_claims(tmp_path)
    ours = collected[collected["reported"] == OURS]
    assert len(ours) == len(claims) and set(ours["notebook"]) == {"05_interventions"}
    # ours address no reported number: every one of them is listed as not addressed
    assert (collected["notebook"] == "99_claims").sum() == len(reported_numbers())
    verdicts = n05.verdict_table(claims, [5]).set_index("prescription")
    assert verdicts.loc["checkpoint discipline", "why"].startswith("the same adapter")


def test_on_paper_the_frontier_models_stand_beside_the_closest_adapter():

    gap = n05.gap_table(n05.summary_table(_episodes()))
    coordination = pd.DataFrame(
        {
            "model": ["gpt-5.4", "gpt-5.4", "qwen3-14b", "grok-4.2"],
            "decision": ["free", "constrained", "free", "free"],
            "n": [5, 5, 5, 10],
            "meals": [2.5, 3.0, 0.1, 2.0],
            "deadlock_rate": [0.2, 0.1, 0.9, 0.3],
        }
    )
    table = n05.frontier_table(coordination, gap, ["gpt-5.4", "grok-4.2"])
    assert table.to_dict("records") == [
        {
            "model": "gpt-5.4",
            "n": 5,
            "meals": 2.5,
            "deadlock_rate": 0.2,
            "adapter": "shaped (last)",
            "adapter_meals": 1.5,
        }
    ]


def test_where_nobody_can_eat_there_is_no_gap_to_close():

    summary = n05.summary_table(_episodes().assign(meals_total=0))  # e.g. smoke's two rounds: no meal possible
    gap = n05.gap_table(summary)
    assert gap["gap closed"].isna().all() and n05.closest(gap).empty
    assert n05.gap_sentence(gap).endswith("waiter 0.00: no gap to close.")


def test_every_profile_reads_only_rows_notebook_04_plays():
    from dataclasses import replace

    from paperlib.profiles import PROFILES
    from paperlib.reports.n05_interventions import check_reuse

    for profile in PROFILES.values():
        check_reuse(profile)
        assert set(profile.intervention_runs) == {"shaped", "curriculum", "penalty"}
        for changes in profile.intervention_runs.values():  # every run builds on every profile
            recipe(profile.name, **changes)
    with pytest.raises(ValueError, match="intervention_eval_ns must lie within grpo_eval_ns"):
        check_reuse(replace(PROFILES["cpu"], intervention_eval_ns=(5, 20)))
    with pytest.raises(ValueError, match="at most grpo_eval_episodes"):
        check_reuse(replace(PROFILES["cpu"], intervention_eval_episodes=31))


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_every_setting_notebook_05_changes_in_its_runs_says_why(profile):
    from paperlib.training.settings import settings_table

    chosen = profiles.get_profile(profile)
    for run, changes in chosen.intervention_runs.items():
        s = recipe(profile, val_episodes=chosen.intervention_val_episodes, measure_kl=n05.MEASURE_KL, **changes)
        table = settings_table(s, n05.settings_reasons(chosen, run)).set_index("setting")
        assert not table["source"].str.contains("no reason given").any(), table[table["source"].str.contains("no")]
        for name in {*changes, "measure_kl"}:
            assert table.loc[name, "source"].startswith("notebook: "), (run, name)
