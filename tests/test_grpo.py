"""GRPO on the philosophers: settings refused before any model loads, the rollout's row layout
(over a scripted backend), and on SmolLM2: a smoke run's adapters and log, resume, the
on-policy adapter hashes, trl's log-probabilities with the shared prefix, the positive control."""

import json

import numpy as np
import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

from paperlib.philosophers.training import (
    TRAINING_SEEDS,
    VALIDATION_SEEDS,
    TableSettings,
    add_outcomes,
    lens_of_last_adapter,
    recipe,
    validate,
)
from paperlib.training import grpo
from paperlib.training.checkpoints import RunDir, adapter_hash, each_adapter, file_hash
from paperlib.training.grpo import Rollout, train
from paperlib.training.settings import settings_table


def call(tool):
    return f'<tool_call>{{"name": "{tool}"}}</tool_call>'


# -- settings --------------------------------------------------------------------------------
def test_the_default_is_the_papers_recipe():
    s = TableSettings()
    assert (s.n, s.rounds, s.steps, s.groups, s.group_size, s.lora_rank) == (5, 5, 16, 2, 3, 8)
    assert s.beta == 0.0 and s.reward == "paper" and s.max_grad_norm == 0.1
    table = settings_table(s).set_index("setting")
    assert set(table.index) >= {"learning_rate", "beta", "loss_type", "epsilon", "temperature", "rows", "seat_reward"}
    assert table.loc["n", "source"] == "paper (N = 5)" and table.loc["beta", "source"].startswith("ART's default")
    assert set(table.loc[["model", "seed", "profile", "reward"], "source"]) == {"run"}  # every other has a source
    assert (table["source"] != "run").sum() == len(table) - 4
    assert recipe("cpu").model == "qwen2.5-coder-0.5b" and recipe("cpu").steps == 16
    assert recipe("cpu").profile == "cpu" and recipe("paper") == TableSettings(
        profile="paper", max_new_tokens=1024, micro_batch=6, generation="vllm"
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"steps": 0}, "steps must be at least 1, got 0"),
        ({"group_size": 1}, "a group of 1 episode"),
        ({"model": "no-such-model"}, "unknown model 'no-such-model'"),
        ({"model": "gpt-5.4"}, "gateway model"),
        ({"reward": "meals"}, "unknown reward 'meals'; choose one of paper, shaped, valid"),
        ({"rows": "episode"}, "unknown rows 'episode'"),
        ({"micro_batch": 5}, "micro_batch 5 must divide the step's 12 rows"),
        ({"temperature": 0.0}, "must be positive"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message) as error:
        recipe("smoke", **overrides)
    assert "\n" not in str(error.value)


def test_an_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown profile 'gpu'; choose one of smoke, cpu, paper"):
        recipe("gpu")


def test_refusals_come_before_any_model_loads(tmp_path, monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("paperlib.models.load_local", no_model)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        train(TableSettings(model="smollm2-135m", steps=0), tmp_path / "a")
    RunDir(tmp_path / "b").claim(recipe("smoke").config())
    with pytest.raises(ValueError, match=r"holds another run \(its reward differ\)") as error:
        train(recipe("smoke", reward="valid"), tmp_path / "b")
    assert "\n" not in str(error.value)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and holds no run config"):
        train(recipe("smoke"), tmp_path / "c")


def test_the_command_line_refuses_bad_configs_in_one_line(tmp_path, capsys):
    import argparse

    from paperlib import train_cli

    parser = argparse.ArgumentParser(prog="paperlib")
    train_cli.add_commands(parser.add_subparsers(dest="group"))
    base = ["train", "grpo", "--profile", "smoke", "--out", str(tmp_path / "run")]
    for extra, message in [
        (["--steps", "0"], "must be a positive integer, got 0"),
        (["--group-size", "1"], "a group needs at least 2 episodes"),
        (["--reward", "meals"], "invalid choice: 'meals'"),
        (["--curriculum", "5", "1"], "a table needs at least 2 philosophers, got 1"),
        (["--val-episodes", "-1"], "got -1"),
    ]:
        with pytest.raises(SystemExit):
            parser.parse_args(base + extra)
        assert message in capsys.readouterr().err
    args = parser.parse_args(base + ["--model", "no-such-model"])
    with pytest.raises(ValueError, match="unknown model 'no-such-model'"):
        args.func(args)


def test_training_seeds_are_disjoint_from_evaluation_and_validation():
    s = TableSettings(seed=3)
    seeds = [x for step in range(1, s.steps + 1) for x in s.step_seeds(step)]
    assert len(set(seeds)) == s.steps * s.groups == 32
    assert min(seeds) >= TRAINING_SEEDS > VALIDATION_SEEDS + 100_000
    other_run = [x for step in range(1, 17) for x in TableSettings(seed=4).step_seeds(step)]
    assert not set(seeds) & set(other_run)


def test_dataset_rows_are_seed_major():
    s = recipe("smoke", groups=2, steps=2, rows="seat")
    rows = [json.loads(r) for r in s.dataset_rows()]
    a, b = s.step_seeds(1)
    assert len(rows) == s.steps * s.groups * s.n == 12
    assert rows[:4] == [{"seed": a, "seat": 0}, {"seed": a, "seat": 1}, {"seed": a, "seat": 2}, {"seed": b, "seat": 0}]
    assert rows[6]["seed"] == s.step_seeds(2)[0] == b + 1
    turns = [json.loads(r) for r in recipe("smoke").dataset_rows()]
    assert turns[:3] == [
        {"seed": a, "seat": 0, "turn": 1},
        {"seed": a, "seat": 0, "turn": 2},
        {"seed": a, "seat": 1, "turn": 1},
    ]


def test_trls_warning_of_masked_turn_rows_is_filtered_as_accelerate_logs_it():
    import logging

    def record(message):
        return logging.LogRecord("trl.trainer.grpo_trainer", logging.WARNING, __file__, 1, message, None, None)

    assert not grpo._not_a_masked_turn(record("[RANK 0] All reward functions returned None for the following kwargs"))
    assert grpo._not_a_masked_turn(record("[RANK 0] some other warning"))


# -- the run directory ---------------------------------------------------------------------------
def test_the_adapter_hash_is_the_files_and_sees_every_value(tmp_path):
    import torch
    from safetensors.torch import save_file

    tensors = {"b.lora_B": torch.zeros(2, 3), "a.lora_A": torch.arange(6.0).view(3, 2)}
    (tmp_path / "checkpoint-1").mkdir()
    save_file(tensors, tmp_path / "checkpoint-1" / "adapter_model.safetensors")
    assert file_hash(tmp_path / "checkpoint-1") == adapter_hash(dict(reversed(list(tensors.items()))))
    changed = {
        **tensors,
        "b.lora_B": torch.zeros(2, 3).index_put_((torch.tensor(1), torch.tensor(2)), torch.tensor(1e-8)),
    }
    assert adapter_hash(changed) != adapter_hash(tensors)
    assert adapter_hash({"a": torch.zeros(6)}) != adapter_hash({"a": torch.zeros(2, 3)})  # the shape counts


def test_rewind_drops_a_half_written_checkpoint_and_keeps_the_record_a_redone_step_must_repeat(tmp_path):
    run = RunDir(tmp_path)
    run.claim({"x": 1})
    for step in (1, 2, 3):
        run.append_log({"step": step, "train_reward": step / 10, "adapter_hash": f"h{step}"})
        run.save_rollouts(step, pd.DataFrame({"train_step": [step]}), pd.DataFrame({"train_step": [step]}))
        run.checkpoint(step).mkdir()
        (run.checkpoint(step) / "adapter_model.safetensors").write_text("")
    (run.checkpoint(3) / "trainer_state.json").write_text('{"global_step": ')  # cut off mid-write
    for step in (1, 2):  # step 3 was killed while its checkpoint was being written
        (run.checkpoint(step) / "trainer_state.json").write_text("{}")
    assert run.steps_saved() == [1, 2]
    assert run.rewind() == 2
    assert not run.checkpoint(3).exists() and run.recorded_steps() == [1, 2, 3]
    assert list(run.rollouts("episodes")["train_step"]) == [1, 2, 3] == list(run.rollouts("steps")["train_step"])
    run.append_log({"step": 3, "train_reward": 0.5, "adapter_hash": "h3"})  # redone as recorded: replaces its row
    assert list(run.log()["train_reward"]) == [0.1, 0.2, 0.5]
    with pytest.raises(ValueError, match=r"step 2 of .* redone gave adapter_hash other, its record h2") as error:
        run.append_log({"step": 2, "train_reward": 0.2, "adapter_hash": "other"})
    assert "\n" not in str(error.value) and list(run.log()["adapter_hash"]) == ["h1", "h2", "h3"]
    with pytest.raises(ValueError, match=r"holds another run \(its x differ\)"):
        run.claim({"x": 2})
    run.claim({"x": 1})  # the same run: resumes
    with pytest.raises(ValueError, match=r"its y differ"):  # a setting added since, not at its default
        run.claim({"x": 1, "y": 3}, defaults={"y": 0})
    run.claim({"x": 1, "y": 0}, defaults={"y": 0})  # at its default: the same run, now recorded with it
    assert run.config() == {"x": 1, "y": 0}


def test_a_finished_record_is_not_trained_again_and_an_adapter_it_lacks_asks_for_a_replay(tmp_path, monkeypatch):
    """A checkout keeps a run's record, not its checkpoints: training the finished record again
    loads no model, and an adapter without its checkpoint is refused, naming the replay."""
    monkeypatch.setattr("paperlib.models.load_local", lambda *a, **k: pytest.fail("a model was loaded"))
    settings = recipe("smoke")
    run = RunDir(tmp_path)
    run.claim(settings.config())
    for step in range(1, settings.steps + 1):
        run.append_log({"step": step, "adapter_hash": f"h{step}"})
    assert train(settings, tmp_path, progress=False).equals(run.log()) and not run.steps_saved()
    with pytest.raises(ValueError, match=r"no saved adapter of step 2 .*recorded without checkpoint: 1, 2, which a"):
        list(each_adapter(run, settings.model, {"last": 2}))


# -- the rollout's rows, over a scripted backend -------------------------------------------------
# Two seeds, two episodes each, two seats, two rounds. Per episode (seat 0, seat 1) by round:
#   episode 0 (seed A, j = 0): think, no call | think, eat (invalid)   valid share 2/4
#   episode 1 (seed A, j = 1): pick_up_left, pick_up_left -> deadlock   valid share 2/2, no round 2
#   episode 2 (seed B, j = 0): eat (invalid), think | think, think      valid share 3/4
#   episode 3 (seed B, j = 1): no call, no call | think, no call        valid share 1/4
ROUND_1 = [call("think"), "hello", call("pick_up_left"), call("pick_up_left"), call("eat"), call("think"), "x", "y"]
ROUND_2 = [call("think"), call("eat"), call("think"), call("think"), call("think"), "z"]
COMPLETION = {
    (0, 0, 1): ROUND_1[0],
    (0, 1, 1): ROUND_1[1],
    (1, 0, 1): ROUND_1[2],
    (1, 1, 1): ROUND_1[3],
    (2, 0, 1): ROUND_1[4],
    (2, 1, 1): ROUND_1[5],
    (3, 0, 1): ROUND_1[6],
    (3, 1, 1): ROUND_1[7],
    (0, 0, 2): ROUND_2[0],
    (0, 1, 2): ROUND_2[1],
    (2, 0, 2): ROUND_2[2],
    (2, 1, 2): ROUND_2[3],
    (3, 0, 2): ROUND_2[4],
    (3, 1, 2): ROUND_2[5],
}
VALID_SHARE = [0.5, 1.0, 0.75, 0.25]


class FakeTrainer:
    """What the rollout reads of trl's trainer: the step, and the model (a tiny peft model)."""

    def __init__(self):
        import torch
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(0)
        self.model = get_peft_model(torch.nn.Sequential(torch.nn.Linear(4, 4)), LoraConfig(r=2, target_modules=["0"]))
        self.state = type("State", (), {"global_step": 0})()
        self.accelerator = type(
            "Accelerator", (), {"unwrap_model": staticmethod(lambda m, keep_fp32_wrapper=True: m)}
        )()


def scripted_rollout(tmp_path, rows):
    settings = recipe("smoke", n=2, rounds=2, groups=2, group_size=2, reward="valid", rows=rows)
    rollout = Rollout(settings, type("Tokenizer", (), {"eos_token_id": 0})(), RunDir(tmp_path))
    rollout.backend = ScriptedBackend(ROUND_1 + ROUND_2)
    trainer = FakeTrainer()
    dataset = settings.dataset_rows()
    prompts = [
        row for row in dataset[: len(dataset) // settings.steps] for _ in range(settings.group_size)
    ]  # trl's repetition of each row, one step's batch
    return settings, rollout, trainer, prompts, rollout(prompts, trainer)


def test_turn_rows_carry_each_episodes_turn_and_reward(tmp_path):
    from peft import get_peft_model_state_dict

    settings, rollout, trainer, prompts, out = scripted_rollout(tmp_path, "turn")
    seeds = settings.step_seeds(1)
    seen = {}
    for i, prompt in enumerate(prompts):
        key = json.loads(prompt)
        j = seen[prompt] = seen.get(prompt, -1) + 1
        episode = seeds.index(key["seed"]) * 2 + j
        text = COMPLETION.get((episode, key["seat"], key["turn"]))
        if text is None:  # episode 1 deadlocked in round 1: a masked one-token row, no reward
            assert (out["completion_ids"][i], out["env_mask"][i], out["episode_reward"][i]) == ([0], [0], None)
            assert out["policy_logprob"][i] is None
            continue
        assert out["completion_ids"][i] == [ord(c) for c in text]
        assert out["env_mask"][i] == [1] * len(text)
        assert out["episode_reward"][i] == VALID_SHARE[episode]
        assert out["policy_logprob"][i] == -0.5 * len(text)  # the scripted backend's per-token -0.5
        prompt_text = "".join(map(chr, out["prompt_ids"][i]))
        assert f"You are philosopher {key['seat']}. Round {key['turn']}." in prompt_text
    assert sum(r is None for r in out["episode_reward"]) == 2  # episode 1's two seats in round 2
    # what the step's log row and saved rollouts record
    generating = adapter_hash(get_peft_model_state_dict(trainer.model))
    assert rollout.last["rollout_adapter_hash"] == generating
    assert rollout.last["valid_share_mean"] == pytest.approx(np.mean(VALID_SHARE))
    assert rollout.last["deadlock_rate"] == 0.25 and rollout.last["train_reward"] == pytest.approx(0.625)
    saved = RunDir(tmp_path).rollouts("episodes")
    assert list(saved["adapter_hash"]) == [generating] * 4 and list(saved["train_step"]) == [1] * 4
    assert list(saved["seed"]) == [seeds[0], seeds[0], seeds[1], seeds[1]]
    assert trainer.model.training  # handed back in training mode


def test_seat_rows_pack_the_turns_and_mask_the_later_prompts(tmp_path):
    settings, rollout, trainer, prompts, out = scripted_rollout(tmp_path, "seat")
    seed_a = settings.step_seeds(1)[0]
    i = prompts.index(json.dumps({"seed": seed_a, "seat": 1}))  # its first repetition: episode 0, seat 1
    c1, c2 = ([ord(c) for c in COMPLETION[(0, 1, t)]] for t in (1, 2))
    completion, mask = out["completion_ids"][i], out["env_mask"][i]
    assert completion[: len(c1)] == c1 and completion[-len(c2) :] == c2
    later_prompt = "".join(map(chr, completion[len(c1) : -len(c2)]))
    assert "You are philosopher 1. Round 2." in later_prompt
    assert mask == [1] * len(c1) + [0] * (len(completion) - len(c1) - len(c2)) + [1] * len(c2)
    assert out["episode_reward"][i] == 0.5 and out["episode_reward"][i + 1] == 1.0  # episodes 0 and 1
    assert out["completion_ids"][i + 1] == [ord(c) for c in COMPLETION[(1, 1, 1)]]  # deadlocked: one turn


def test_the_rollout_refuses_rows_of_another_step(tmp_path):
    settings = recipe("smoke", val_episodes=0)  # no validation of step 1 before step 2's rollout
    rollout = Rollout(settings, None, RunDir(tmp_path))
    rollout.backend = ScriptedBackend()
    trainer = FakeTrainer()
    trainer.state.global_step = 1  # step 2, fed step 1's rows
    with pytest.raises(RuntimeError, match="step 2 got the rows of seeds"):
        rollout(settings.dataset_rows()[:2], trainer)
    assert trainer.model.training  # handed back in training mode


# -- on SmolLM2 ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_smoke_run_saves_an_adapter_and_a_log_row_per_step(grpo_smoke_run):
    from safetensors.torch import load_file

    settings, run, log = grpo_smoke_run
    assert list(log["step"]) == [1, 2] and run.steps_saved() == [1, 2]
    for step in (1, 2):  # the hash logged is the hash of the adapter saved
        assert file_hash(run.checkpoint(step)) == log.loc[log["step"] == step, "adapter_hash"].item()
    # LoRA's B starts at zero: a nonzero B is learning (weight decay alone keeps it zero)
    tensors = load_file(run.checkpoint(2) / "adapter_model.safetensors")
    assert any(t.abs().max() > 0 for name, t in tensors.items() if "lora_B" in name)
    assert log["adapter_hash"].nunique() == 2
    # the logged rates, recomputed from the saved step rows
    steps = run.rollouts("steps")
    for step, rows in steps.groupby("train_step"):
        row = log[log["step"] == step].iloc[0]
        called = rows["action"] != "none"
        assert row["valid_call_rate"] == pytest.approx(called.mean())
        assert row["valid_share_mean"] == pytest.approx((rows["valid"] & called).groupby(rows["episode"]).mean().mean())
        assert len(rows) == settings.groups * settings.group_size * settings.n * settings.rounds
    assert np.isfinite(log[["loss", "kl", "grad_norm", "entropy", "seconds"]].to_numpy()).all()
    assert set(log["reward"]) == {"valid"} and set(log["profile"]) == {"smoke"}


@pytest.mark.slow
def test_rollouts_come_from_the_adapter_of_the_step_before(grpo_smoke_run):
    _, run, log = grpo_smoke_run
    by_step = log.set_index("step")
    assert by_step.loc[2, "rollout_adapter_hash"] == by_step.loc[1, "adapter_hash"] == file_hash(run.checkpoint(1))
    for step in (1, 2):
        assert by_step.loc[step, "rollout_adapter_hash"] != by_step.loc[step, "adapter_hash"]
    episodes = run.rollouts("episodes")
    assert episodes.groupby("train_step")["adapter_hash"].unique().map(list).to_dict() == {
        step: [by_step.loc[step, "rollout_adapter_hash"]] for step in (1, 2)
    }


@pytest.mark.slow
def test_a_step_without_signal_leaves_the_adapter_as_it_was(tmp_path, monkeypatch):
    from paperlib.data import RolloutStore
    from paperlib.philosophers import training

    # the paper's reward is 1.0 for every smoke episode: every advantage of every step is zero
    settings = recipe("smoke", reward="paper", steps=3)
    log = train(settings, tmp_path / "skipped", progress=False)
    first = log["rollout_adapter_hash"].iloc[0]  # the LoRA initialisation
    assert log["no_signal"].all() and set(log["adapter_hash"]) == set(log["rollout_adapter_hash"]) == {first}
    # the loss is exactly 0 there (beta = 0): no forward pass, no entropy
    assert (log["loss"] == 0).all() and (log["forward_seconds"] == 0).all() and log["entropy"].isna().all()
    # step 2's adapter is step 1's: its validation episodes (played at step 3) are step 1's, and the
    # same as playing them again
    monkeypatch.setattr(training, "_validated", lambda *args: None)
    played = train(settings, tmp_path / "played", progress=False)
    assert list(played["adapter_hash"]) == list(log["adapter_hash"])
    copied, replayed = (RolloutStore(tmp_path / run / "validation" / "step-2") for run in ("skipped", "played"))
    assert len(copied.episodes()) == settings.val_episodes and (copied.episodes()["step"] == 2).all()
    pd.testing.assert_frame_equal(copied.episodes(), replayed.episodes())
    pd.testing.assert_frame_equal(copied.steps(), replayed.steps())
    assert log["validation_seconds"].iloc[2] < played["validation_seconds"].iloc[2] / 5  # read, not played
    # stepped anyway, AdamW moves the adapter on a zero gradient (its weight decay, its moments)
    stepped = train(recipe("smoke", reward="paper", skip_no_signal=False), tmp_path / "stepped", progress=False)
    assert stepped["no_signal"].all() and stepped["rollout_adapter_hash"].iloc[0] == first
    assert stepped["adapter_hash"].nunique() == 2 and first not in set(stepped["adapter_hash"])


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_log(grpo_smoke_run, resumes_to_the_same_log):
    settings, _, uninterrupted = grpo_smoke_run
    resumes_to_the_same_log(settings, train, uninterrupted)


def a_trainer_and_rows(tmp_path):
    """The smoke recipe's trainer (float32), its LoRA B drawn (B = 0 would leave A's gradient zero),
    in training mode, and four rows of the table's prompts (one shorter) with completions of
    different lengths: (trainer, ids, mask, completion width)."""
    import torch
    from trl.trainer.utils import pad

    from paperlib.backends.hf import HFBackend
    from paperlib.philosophers.env import initial_table, observe
    from paperlib.philosophers.prompts import get_prompt

    settings = recipe("smoke", precision="float32")
    run = RunDir(tmp_path)
    run.claim(settings.config())
    trainer = grpo.build_trainer(settings, run, progress=False)
    model = trainer.model
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.02)
    backend = HFBackend(settings.model, lm=model, tokenizer=trainer.processing_class)
    version = get_prompt(settings.prompt)
    prompts = [
        backend.encode(backend.render(version.conversation(observe(initial_table(3), i), native_tools=False)))
        for i in range(3)
    ]
    prompts.append(prompts[0][:-5])  # a shorter prompt: rows of different lengths
    completions = [[1, 2, 3, 4, 5], [7, 8], [9, 10, 11, 12, 13, 14, 15], [20, 21, 22]]
    pad_id = trainer.processing_class.pad_token_id
    ids = torch.cat(
        [
            pad([torch.tensor(p) for p in prompts], pad_id, "left"),
            pad([torch.tensor(c) for c in completions], pad_id, "right"),
        ],
        1,
    )
    mask = torch.cat(
        [
            pad([torch.ones(len(p), dtype=torch.long) for p in prompts], 0, "left"),
            pad([torch.ones(len(c), dtype=torch.long) for c in completions], 0, "right"),
        ],
        1,
    )
    model.train()
    return trainer, ids, mask, max(map(len, completions))


@pytest.mark.slow
def test_shared_prefix_log_probabilities_and_gradients_match_trls(tmp_path):
    """The one overridden trl method against trl's own, on rows sharing the system prompt (in float32:
    bfloat16's agreement with float32 is tests/test_precision.py's)."""
    import torch
    from trl import GRPOTrainer

    trainer, ids, mask, width = a_trainer_and_rows(tmp_path)
    model = trainer.model
    keep = mask[:, -width:]
    model.gradient_checkpointing_enable({"use_reentrant": False})

    def logps_and_grads(method):
        model.zero_grad()
        logps, entropy, _ = method(model, ids, mask, width, compute_entropy=True)
        ((logps * keep).sum() + 0.1 * (entropy * keep).sum()).backward()
        return (
            logps.detach() * keep,
            entropy.detach() * keep,
            {n: p.grad for n, p in model.named_parameters() if p.grad is not None},
        )

    ours = logps_and_grads(trainer._get_per_token_logps_and_entropies)
    theirs = logps_and_grads(lambda *a, **k: GRPOTrainer._get_per_token_logps_and_entropies(trainer, *a, **k))
    torch.testing.assert_close(ours[0], theirs[0], atol=1e-4, rtol=0)
    torch.testing.assert_close(ours[1], theirs[1], atol=1e-4, rtol=0)
    assert ours[2].keys() == theirs[2].keys() and len(ours[2]) == 4 * 2 * model.config.num_hidden_layers
    for name in theirs[2]:
        assert (ours[2][name] - theirs[2][name]).norm() <= 1e-4 * theirs[2][name].norm(), name


@pytest.mark.slow
def test_rows_without_signal_are_left_out_and_the_loss_and_gradient_stay_trls(tmp_path):
    """beta = 0 and trl's dapo loss (normalised by the step's tokens, not the micro-batch's rows): the
    rows whose advantage is zero add 0, so ours runs the model on the others only, and a micro-batch
    with none not at all; trl's runs it on every row. The same loss and gradient."""
    import torch
    from trl import GRPOTrainer

    from paperlib.training.grpo.trainer import ROW_FREE_LOSSES

    trainer, ids, mask, width = a_trainer_and_rows(tmp_path)
    model = trainer.model
    assert trainer.loss_type in ROW_FREE_LOSSES and trainer.beta == 0.0
    trainer.current_gradient_accumulation_steps = trainer.args.steps_per_generation  # as in a training step
    forwarded, logps = [], trainer._logps_and_entropies

    def counted(model, input_ids, *args, **kwargs):
        forwarded.append(input_ids.size(0))
        return logps(model, input_ids, *args, **kwargs)

    trainer._logps_and_entropies = counted

    def loss_and_grads(compute_loss, advantages):
        model.zero_grad()
        forwarded.clear()
        inputs = {
            "prompt_ids": ids[:, :-width],
            "prompt_mask": mask[:, :-width],
            "completion_ids": ids[:, -width:],
            "completion_mask": mask[:, -width:],
            "advantages": torch.tensor(advantages),
            "num_items_in_batch": mask[:, -width:].sum(),
        }
        loss = compute_loss(model, inputs)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        return loss.detach(), grads, list(forwarded)

    for advantages, rows in (([0.7, 0.0, -0.7, 0.0], [2]), ([0.0] * 4, [])):
        ours = loss_and_grads(trainer.compute_loss, advantages)
        theirs = loss_and_grads(lambda *a: GRPOTrainer.compute_loss(trainer, *a), advantages)
        assert ours[2] == rows and theirs[2] == [4]  # the rows the model ran on
        torch.testing.assert_close(ours[0], theirs[0], atol=1e-7, rtol=1e-5)
        assert ours[1].keys() == theirs[1].keys()
        for name, grad in theirs[1].items():
            assert (ours[1][name] - grad).norm() <= 1e-5 * grad.norm() + 1e-12, name
    assert float(theirs[0]) == 0.0 and all(float(g.abs().max()) == 0.0 for g in theirs[1].values())


@pytest.mark.slow
def test_the_positive_control_rises(tmp_path):
    """The valid share on held-out episodes, base model against the trained adapter, in a toy
    setting small enough for a test: N = 2, one round, 2 groups of 4, 4 steps at lr 1e-3."""
    from peft import PeftModel

    from paperlib import stats
    from paperlib.backends.hf import HFBackend
    from paperlib.models import load_local
    from paperlib.philosophers.episode import run_episodes
    from paperlib.philosophers.llm import LLMPolicy

    settings = recipe("smoke", reward="valid", n=2, rounds=1, groups=2, group_size=4, steps=4, learning_rate=1e-3)
    train(settings, tmp_path, progress=False)
    lm, tokenizer = load_local(settings.model)

    def valid_share(model):
        policy = LLMPolicy(
            HFBackend(settings.model, lm=model, tokenizer=tokenizer),
            prompt=settings.prompt,
            max_new_tokens=settings.max_new_tokens,
            seed=7,
        )
        episodes, _ = run_episodes(policy, settings.n, settings.rounds, range(VALIDATION_SEEDS, VALIDATION_SEEDS + 30))
        return add_outcomes(episodes)["valid_share"].to_numpy()

    base = valid_share(lm)
    trained = valid_share(PeftModel.from_pretrained(lm, str(RunDir(tmp_path).checkpoint(settings.steps))))
    assert trained.mean() > base.mean() + 0.2
    assert stats.welch(trained, base)[1] < 0.01


@pytest.mark.slow
def test_a_record_without_checkpoints_replays_to_the_same_adapters(grpo_smoke_run, replays_to_the_same_adapters):
    replays_to_the_same_adapters(grpo_smoke_run, train)


@pytest.mark.slow
def test_validation_plays_each_saved_adapter_and_feeds_best_val(grpo_smoke_run):
    """Each step's validation episodes equal those of that adapter loaded on its own: the first
    ``val_episodes``, played by the trainer at the next step's rollout (step 1's; the last step's
    after training), and the rest played here, where the adapters are swapped in place under one
    backend, whose kept KV must not outlive a swap."""
    from peft import PeftModel

    from paperlib.backends.hf import HFBackend
    from paperlib.models import load_local
    from paperlib.philosophers.episode import run_episodes
    from paperlib.philosophers.llm import LLMPolicy
    from paperlib.training.selection import best_val

    settings, run, log = grpo_smoke_run
    table = validate(run.path, episodes=3, progress=False)
    assert list(table.groupby("step").size().items()) == [(1, 3), (2, 3)]
    assert set(table["seed"]) == {VALIDATION_SEEDS, VALIDATION_SEEDS + 1, VALIDATION_SEEDS + 2}
    assert settings.val_episodes == 2 and (run.path / "validation" / "step-1").is_dir()  # played in training
    assert log["validation_seconds"].iloc[1] > 0 == log["validation_seconds"].iloc[0]
    columns = ["seed", "actions_total", "invalid_actions", "no_actions", "meals_total", "reward"]
    lm, tokenizer = load_local(settings.model)
    # a batch's samples depend on the episodes it holds: step 1's first two were played in training
    for step, batches in [(1, [[0, 1], [2]]), (2, [[0, 1, 2]])]:
        alone = PeftModel.from_pretrained(lm, str(run.saved(step)))
        policy = LLMPolicy(
            HFBackend(settings.model, lm=alone, tokenizer=tokenizer),
            prompt=settings.prompt,
            max_new_tokens=settings.max_new_tokens,
            seed=settings.seed,
        )
        played = table[table["step"] == step].set_index("episode")
        for batch in batches:
            episodes, _ = run_episodes(policy, settings.n, settings.rounds, [VALIDATION_SEEDS + e for e in batch])
            pd.testing.assert_frame_equal(played.loc[batch, columns].reset_index(drop=True), episodes[columns])
        lm = alone.unload()
    assert best_val(log, table, column="valid_share") in (1, 2)
    assert validate(run.path, episodes=3, progress=False).equals(table)  # kept: nothing replayed
    more = validate(run.path, episodes=4, progress=False)  # extended: only the new episode played
    assert list(more.groupby("step").size()) == [4, 4]
    pd.testing.assert_frame_equal(more[more["episode"] < 3].reset_index(drop=True), table)
    assert set(table["adapter_hash"]) == {file_hash(run.saved(1)), file_hash(run.saved(2))}


@pytest.mark.slow
def test_the_knowing_doing_lens_plays_the_last_adapter_on_the_base_models_episodes(grpo_smoke_run, tmp_path):
    from dataclasses import replace

    from paperlib.philosophers import knowing_doing as kd
    from paperlib.profiles import get_profile
    from paperlib.reports.n06_knowing_doing_table import adapter_change

    _, run, _ = grpo_smoke_run
    profile = replace(get_profile("smoke"), lens_episodes=1)
    trained = lens_of_last_adapter(run.path, profile, 0, tmp_path)
    assert set(trained["adapter"]) == {"GRPO step 2"} and set(trained["model"]) == {"smollm2-135m"}
    base = kd.run_lens(profile, 0, tmp_path)
    change = adapter_change(pd.concat([base, trained], ignore_index=True))  # the same episode seeds, or it refuses
    assert list(change["adapter"]) == ["GRPO step 2"]
    assert lens_of_last_adapter(run.path, replace(profile, lens_models=(("gemma3-270m", "hf"),)), 0, tmp_path) is None
    assert lens_of_last_adapter(tmp_path / "no-run", profile, 0, tmp_path) is None
