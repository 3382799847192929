"""One name selects every size knob: ``smoke``, ``cpu`` (the default) or ``paper``.

- smoke: seconds to a few minutes; what CI and the notebook tests run.
- cpu: the whole pipeline on the embedded models on a laptop-class CPU, with the
  papers' episode counts wherever the time allows.
- paper: the papers' models and sizes, on GPUs and API gateways.

Each notebook reads its knobs from here and nowhere else, the training recipes included: a
recipe (``grpo_recipe``, ``rlft_recipe``, ``ttt_recipe``) names the trainer's settings the
profile changes from the paper's defaults, as plain values, and the game builds its settings
from it (``philosophers.training.recipe``, ``bandits.training.recipe``,
``tictactoe.training.recipe``); the ``paperlib train`` commands do the same. A knob that
differs from the paper says so in a comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SCRIPTED_POLICIES = ("no_action", "always_think", "random", "left_first", "resource_hierarchy", "waiter")
# Notebook 05's runs [ours: paper A proposes its prescriptions and runs none]: what each changes from
# the profile's GRPO recipe (grpo_recipe). The "recipe" run beside them is notebook 03's paper-reward run.
# - shaped: paper A's first prescription, the no-deadlock credit only with a meal (reward_shaped)
# - curriculum: the shaped reward over N = 5 -> 10 -> 15 within the steps (paper A's third; its schedule
#   and what it costs: philosophers.training.SOURCES["curriculum"])
# - penalty: the shaped reward plus paper B's -5 per invalid or missing call, on paper A's scale
#   (philosophers.reward.invalid_penalty)
INTERVENTIONS = {
    "shaped": {"reward": "shaped"},
    "curriculum": {"reward": "shaped", "curriculum": (5, 10, 15)},
    "penalty": {"reward": "shaped_penalty"},
}


@dataclass(frozen=True)
class Profile:
    name: str
    # -- paper A, notebook 01: the environment and the reward on scripted policies
    env_policies: tuple[str, ...] = SCRIPTED_POLICIES
    env_ns: tuple[int, ...] = (5, 10, 15)
    env_episodes: int = 30
    # Evaluation rounds per episode: the paper states R = 5 for training only [ours].
    rounds: int = 5
    mode: str = "simultaneous"
    # -- paper A, notebook 02: the coordination gap; defaults are the paper's grid and models
    # (the seventh, Qwen3-14B + GRPO, is the adapter notebook 03 trains; notebook 04 evaluates it)
    gap_models: tuple[tuple[str, str], ...] = (  # (model, backend)
        ("claude-opus-4.7", "openai"),
        ("gpt-5.4", "openai"),
        ("gemini-3.1-pro", "openai"),
        ("grok-4.2", "openai"),
        ("mistral-small-24b", "vllm"),
        ("qwen3-14b", "vllm"),
        ("deepseek-r1-distill-qwen-7b", "vllm"),
    )
    gap_policies: tuple[str, ...] = SCRIPTED_POLICIES
    gap_ns: tuple[int, ...] = (5, 10, 15)
    gap_episodes: int = 30  # per cell, scripted baselines
    gap_llm_episodes: int = 30  # per cell, LLM agents
    gap_decisions: tuple[str, ...] = ("free", "constrained")  # free is the paper's; constrained is ours
    gap_free_only: tuple[str, ...] = ()  # models that play the grid in free mode only (the paper's protocol)
    # the table sizes a model plays where they are fewer than gap_ns (read through Profile.gap_ns_of)
    gap_model_ns: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    gap_prompts: tuple[str, ...] = ("rules-v1", "options-v1")  # valid-call probe; the best one runs the grid
    gap_probe_episodes: int = 10  # at N = 5 [ours]
    gap_max_new_tokens: int = 1024  # [ours] room for a reasoning model to think before its call
    # rows of one hf forward pass wherever paper A's table plays: notebook 02's grid, the held-out
    # play of notebooks 04 and 05, notebook 06's lens
    gap_max_batch: int = 150
    # -- paper A, notebooks 03-04: GRPO on the table. The recipe: the run's settings that differ from
    # paper A's recipe (the defaults of philosophers.training.TableSettings). paper: Qwen3-14B with
    # room to think (1024 tokens, the evaluation's budget), 6 rows of up to 1024 completion tokens
    # per pass, generation by trl's colocated vLLM on a GPU
    grpo_recipe: Mapping[str, object] = field(
        default_factory=lambda: {"model": "qwen3-14b", "max_new_tokens": 1024, "micro_batch": 6, "generation": "vllm"}
    )
    # the training seeds of the run under the paper's reward (paper A reports one run; the positive
    # control trains the first only); notebook 04 evaluates each seed's adapters
    grpo_seeds: tuple[int, ...] = (0, 1, 2)
    grpo_control_episodes: int = (
        30  # held-out episodes per side of the positive control's test, at the recipe's N [ours]
    )
    grpo_val_episodes: int = 30  # validation episodes per saved step (best_val) [ours]
    grpo_eval_ns: tuple[int, ...] = (5, 10, 15)  # the paper's evaluation grid
    grpo_eval_episodes: int = 30  # per cell, the paper's
    # -- paper A, notebook 05: its three prescriptions, run (INTERVENTIONS); the second, checkpoint
    # discipline, on every run (last, best_train, best_val). The recipe run and the base model are
    # notebook 04's rows, read, not played again: the seeds, N and episodes below lie within
    # grpo_seeds, grpo_eval_ns and grpo_eval_episodes (the same evaluation seeds, paired)
    intervention_runs: Mapping[str, Mapping[str, object]] = field(default_factory=lambda: dict(INTERVENTIONS))
    intervention_seeds: tuple[int, ...] = (0, 1, 2)  # three training seeds per run (paper B's practice)
    intervention_val_episodes: int = 30  # validation episodes per step (best_val), as grpo_val_episodes
    intervention_eval_ns: tuple[int, ...] = (5, 10, 15)  # the paper's evaluation grid
    intervention_eval_episodes: int = 30  # per cell, the paper's
    # -- paper B, notebook 14: RLFT on the bandits. The recipe: the run's settings that differ from
    # paper B's (the defaults of bandits.training.BanditSettings); paper: 16 decisions per pass [ours]
    rlft_recipe: Mapping[str, object] = field(default_factory=lambda: {"model": "gemma2-2b", "micro_batch": 16})
    # the training seeds of the recipe's runs, with and without the bonus (paper B reports three
    # seeds); the controls and the CoT ablation train the first only
    rlft_seeds: tuple[int, ...] = (0, 1, 2)
    rlft_eval_instances: int = 64  # held-out instances per adapter [ours: notebook 11's 64 instances]
    # [ours] models the positive control also trains (the recipe with only the model changed): the
    # harder case of a model that rarely writes a valid action; the paper's models need none
    rlft_control_models: tuple[str, ...] = ()
    # the CoT ablation (paper B, Fig. 9b): the recipe again with its CoT flipped, at this many new
    # tokens; 0: no ablation run. paper: without CoT at the paper's 16 no-CoT tokens
    rlft_cot_ablation_tokens: int = 16
    # the CoT ablation's decisions per forward and backward pass (0: the recipe's) [ours: memory]: the
    # same gradient in more, smaller passes
    rlft_cot_micro_batch: int = 0
    # -- paper B, notebook 15: the exploration mechanisms (Fig. 8) on the main bandit
    explore_models: tuple[str, ...] = ("gemma2-2b", "gemma2-9b")
    explore_arms: int = 10
    explore_instances: int = 64
    explore_horizon: int = 50
    explore_cot: bool = True
    explore_decision: str = "free"
    explore_tokens: int | None = 256
    # [ours] one sampling temperature for every mechanism: self-consistency votes over sampled
    # answers, so the plain agent it is compared with samples at the same temperature
    explore_temperature: float = 1.0
    # -- paper B, notebooks 11-13 (defaults: the paper's sizes and models)
    bandit_models: tuple[str, ...] = ("gemma2-2b", "gemma2-9b", "gemma2-27b")
    bandit_backend: str = "vllm"
    # [ours] vLLM's tensor parallelism per model: Gemma2 27B's weights are about 54 GB in bfloat16,
    # which leaves one 80 GB GPU little room for the KV cache; 2 divides its attention heads
    vllm_tensor_parallel: tuple[tuple[str, int], ...] = (("gemma2-27b", 2),)
    bandit_horizon: int = 50
    bandit_instances: int = 64  # baselines
    bandit_llm_instances: int = 64
    bandit_arms: tuple[int, ...] = (5, 10, 20)  # baselines
    bandit_llm_arms: tuple[int, ...] = (5, 10, 20)
    bandit_main_arms: int = 10
    bandit_noises: tuple[str, ...] = ("low", "medium", "high")
    bandit_decisions: tuple[str, ...] = ("free", "constrained")  # constrained is ours
    bandit_figure_decision: str = "free"  # the paper's rule
    # models that play notebooks 11 and 13 in free mode only (the paper's protocol), whatever the
    # figure's mode: their figures, claims and matrices are of free runs, and they play no constrained one
    bandit_free_only: tuple[str, ...] = ()
    # per model, the sizes of notebooks 11 and 13 that differ from this profile's for it, by knob name
    # (bandit_llm_instances, bandit_cot_tokens, kd_instances, kd_horizon, kd_tokens); see bandit_size
    bandit_model_sizes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    bandit_main_cot: tuple[bool, ...] = (False, True)
    bandit_compare_models: tuple[str, ...] = ("gemma2-2b", "gemma2-9b", "gemma2-27b")  # also in the other decisions
    bandit_compare_cot: tuple[bool, ...] = (False, True)
    bandit_sweep_models: tuple[str, ...] = ("gemma2-2b", "gemma2-9b", "gemma2-27b")  # on the other arms and noises
    bandit_sweep_cot: tuple[bool, ...] = (False, True)
    bandit_cot_tokens: int = 256
    freq_models: tuple[str, ...] = ("gemma2-2b", "gemma2-9b", "gemma2-27b")
    freq_arms: int = 10
    freq_lengths: tuple[int, ...] = tuple(range(2, 11))
    freq_repetitions: tuple[int, ...] = tuple(range(0, 101))
    freq_histories: int = 64  # per length [ours: the paper's 64 instances]
    kd_models: tuple[str, ...] = ("gemma2-27b",)
    kd_arms: int = 10  # the paper does not state it [ours]
    kd_instances: int = 64
    kd_horizon: int = 50
    kd_tokens: int = 2048
    kd_decisions: tuple[str, ...] = ("free", "constrained")
    # -- paper B's knowing-doing lens on paper A's table, notebook 06 [ours]: free decisions
    # (a rationale must be written), prompt sensible-v1
    lens_models: tuple[tuple[str, str], ...] = (("qwen3-14b", "vllm"), ("qwen3-8b", "vllm"))  # (model, backend)
    lens_ns: tuple[int, ...] = (5, 10, 15)
    lens_episodes: int = 30
    lens_tokens: int = 256  # [ours] room for a sentence, the tag and the call
    # -- paper B, notebook 16: RLFT on tic-tac-toe. The recipe: the runs' settings that differ from
    # paper B's (the defaults of tictactoe.training.TicTacToeSettings), CoT and its budget aside
    ttt_recipe: Mapping[str, object] = field(default_factory=lambda: {"model": "gemma2-2b", "updates": 2_000})
    # the training seeds of the main run (paper B reports three seeds); its CoT ablation trains the first only
    ttt_seeds: tuple[int, ...] = (0, 1, 2)
    # an RLFT run with CoT and one without (the paper's ablation); the first is the main run, and the
    # one `paperlib train rlft-tictactoe` trains unless told
    ttt_cot_runs: tuple[bool, ...] = (True, False)
    ttt_cot_tokens: int = 256  # the CoT run's new tokens per move, in training and its cells (the paper's 256)
    ttt_cot_micro_batch: int = 16  # the CoT run's decisions per forward and backward pass (0: all) [ours: memory]
    ttt_no_cot_tokens: int = 16  # the run without CoT: new tokens per move (the paper's 16)
    ttt_no_cot_micro_batch: int = 16  # and its decisions per forward and backward pass (0: all) [ours: memory]
    ttt_games: int = 100  # held-out games per adapter and cell [ours: the paper does not say]
    ttt_budgets: tuple[int, ...] = (16, 64, 256, 512)  # thinking budgets with CoT at evaluation (the paper's Fig. 9c)
    # why the recipes above change a setting from the paper's (setting -> reason): the settings
    # tables show it beside the two values (paperlib.training.settings.settings_table)
    recipe_reasons: Mapping[str, str] = field(
        default_factory=lambda: {
            "model": "the model the paper names for this run",
            "max_new_tokens": "ours: a budget for Qwen3's thinking (the paper gives none)",
            "micro_batch": "memory: decisions per forward and backward pass on one GPU",
            "generation": "trl's colocated vLLM engine on a GPU",
        }
    )

    def gap_ns_of(self, model: str) -> tuple[int, ...]:
        """The table sizes ``model`` plays in notebook 02's grid: its entry in :attr:`gap_model_ns`,
        else :attr:`gap_ns`."""
        return tuple(self.gap_model_ns.get(model, self.gap_ns))

    def bandit_size(self, model: str, knob: str) -> int:
        """``knob`` (a size of notebooks 11 and 13, e.g. ``kd_tokens``) for ``model``: its entry in
        :attr:`bandit_model_sizes`, else the profile's own value."""
        return self.bandit_model_sizes.get(model, {}).get(knob, getattr(self, knob))

    def backend_options(self, backend: str, model: str) -> dict:
        """What ``paperlib.backends.make_backend`` takes for ``model`` on ``backend`` beyond the
        defaults: vLLM's ``tensor_parallel_size`` where :attr:`vllm_tensor_parallel` names the model."""
        gpus = dict(self.vllm_tensor_parallel).get(model)
        return {"tensor_parallel_size": gpus} if backend == "vllm" and gpus else {}


PROFILES = {
    "smoke": Profile(
        name="smoke",
        env_ns=(5,),
        env_episodes=4,
        # -- paper A, notebook 02
        gap_models=(("smollm2-135m", "hf"),),
        gap_policies=("no_action", "random", "waiter"),
        gap_ns=(3,),
        gap_episodes=2,
        gap_llm_episodes=2,
        gap_probe_episodes=1,
        gap_max_new_tokens=8,
        # -- paper B, notebooks 11-13
        bandit_models=("smollm2-135m",),
        bandit_backend="hf",
        bandit_horizon=6,
        bandit_instances=4,
        bandit_llm_instances=2,
        bandit_arms=(10,),
        bandit_llm_arms=(10,),
        bandit_noises=("low",),
        bandit_figure_decision="constrained",
        bandit_compare_models=("smollm2-135m",),
        bandit_compare_cot=(False,),
        bandit_sweep_models=(),
        bandit_cot_tokens=4,
        freq_models=("smollm2-135m",),
        freq_lengths=(2, 3),
        freq_repetitions=(0, 2, 4),
        freq_histories=1,
        kd_models=("smollm2-135m",),
        kd_instances=2,
        kd_horizon=4,
        kd_tokens=4,
        kd_decisions=("constrained",),
        lens_models=(("smollm2-135m", "hf"),),
        lens_ns=(3,),
        lens_episodes=2,
        lens_tokens=8,
        # -- paper A, notebooks 03-04
        grpo_recipe={
            "model": "smollm2-135m",
            "n": 3,
            "rounds": 2,
            "steps": 2,
            "groups": 1,
            "group_size": 2,
            "max_new_tokens": 16,
        },
        # [ours: CI time] one training seed per run in 03, 04, 14 and 16 (cpu and paper: three); the
        # several-seed paths are tested on hand-made tables (tests/test_seeds.py)
        grpo_seeds=(0,),
        grpo_control_episodes=4,
        grpo_val_episodes=2,
        grpo_eval_ns=(3,),
        grpo_eval_episodes=3,
        intervention_runs={**INTERVENTIONS, "curriculum": {"reward": "shaped", "curriculum": (2, 3)}},
        intervention_seeds=(0,),
        intervention_val_episodes=2,
        intervention_eval_ns=(3,),
        intervention_eval_episodes=3,
        # -- paper B, notebooks 14 and 15
        rlft_recipe={
            "model": "smollm2-135m",
            "updates": 2,
            "instances": 2,
            "pool": 8,
            "arms": 3,
            "horizon": 3,
            "style": "no_cot",
            "max_new_tokens": 4,
            "minibatch": 3,  # two optimiser steps per update, as the paper's several
        },
        rlft_eval_instances=3,
        rlft_seeds=(0,),
        rlft_control_models=("smollm2-135m",),
        rlft_cot_ablation_tokens=4,
        explore_models=("smollm2-135m",),
        explore_instances=2,
        explore_horizon=4,
        explore_cot=False,
        explore_tokens=4,
        # -- paper B, notebook 16
        ttt_recipe={"model": "smollm2-135m", "updates": 2, "games": 2, "minibatch": 4},
        ttt_seeds=(0,),
        recipe_reasons=dict.fromkeys(
            (
                "model",
                "n",
                "rounds",
                "steps",
                "groups",
                "group_size",
                "max_new_tokens",
                "updates",
                "instances",
                "pool",
                "arms",
                "horizon",
                "style",
                "minibatch",
                "games",
                "cot",
                "micro_batch",
            ),
            "smoke: the smallest run that takes every path",
        ),
        ttt_cot_runs=(False,),
        ttt_cot_micro_batch=0,
        ttt_no_cot_tokens=4,
        ttt_no_cot_micro_batch=0,
        ttt_games=2,
        ttt_budgets=(4,),
    ),
    "cpu": Profile(
        name="cpu",
        # -- paper A, notebook 02: the embedded models at the paper's 30 episodes per cell
        gap_models=(
            ("smollm2-135m", "hf"),
            ("gemma3-270m", "hf"),
            ("qwen2.5-coder-0.5b", "hf"),
            ("qwen2.5-coder-1.5b", "hf"),
        ),
        gap_probe_episodes=2,
        # [ours: time] the models that write calls, in the paper's protocol only
        gap_free_only=("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"),
        # [ours: time] Qwen2.5-Coder-1.5B at N = 5 only: it plays 1.35 decisions/s at N = 5 here in
        # float32 (paperlib bench philosophers, 30 episodes, 16 tokens), so the whole grid's 4,500
        # decisions would take about 57 min on top of the other models' 24 (issue 30: the grid if
        # notebook 02 stays within 60 minutes, else N = 5). Measured in notebook 02: N = 5's 750
        # decisions in 374 s, its two prompt probes (2 episodes each) in 322 s
        gap_model_ns={"qwen2.5-coder-1.5b": (5,)},
        # every philosopher of the 30 episodes at N = 15 in one forward pass: Qwen2.5-Coder-0.5B plays
        # 1.4-1.8x the decisions/s of the backend's default 64 (30 episodes at N = 10, one round: 300
        # decisions in 48-52 s against 73-85 s, either order; peak memory 3.7 GB)
        gap_max_batch=450,
        gap_max_new_tokens=16,  # the longest call is 15 tokens up to its name's closing quote
        # -- paper B, notebooks 11-13: the embedded models, sized for 25 minutes on 2 cores, and
        # Qwen2.5-Coder-1.5B (issue 30) for about 50 more
        bandit_models=("gemma3-270m", "smollm2-135m", "qwen2.5-coder-1.5b"),
        bandit_backend="hf",
        bandit_llm_instances=8,
        bandit_llm_arms=(10, 20),
        bandit_figure_decision="constrained",
        bandit_cot_tokens=8,
        # Qwen2.5-Coder-1.5B writes a valid ACTION= itself (in all 800 steps of its notebook 11 run): it
        # plays paper B's free protocol only, as notebook 02's gap_free_only
        bandit_free_only=("qwen2.5-coder-1.5b",),
        # [ours: time] Qwen2.5-Coder-1.5B decodes about 20 row-tokens/s here in float32 (16 bandits: 13.8 s
        # per no-CoT step; 198 s per CoT step at 256 tokens, the paper's budget, which its rationales
        # nearly fill: 850 characters on average). Notebook 11: 16 instances without CoT (10 min), so
        # the 95% interval of its mean coverage is narrower than the gaps to UCB, random and the paper's
        # 0.25 it is read against (measured: 0.28 to 0.30); no CoT run (0 tokens): 50 CoT steps at 256
        # tokens take ≈ 2.7 h. Notebook 13: the paper's free protocol with room for a rationale
        # (512 tokens; notebook 13's table says how many rationales ended before it), 8 instances x 5
        # steps (≈ 25 min; the paper's 64 x 50 at 2048 tokens would take days here)
        bandit_model_sizes={
            "qwen2.5-coder-1.5b": {
                "bandit_llm_instances": 16,
                "bandit_cot_tokens": 0,
                "kd_instances": 8,
                "kd_horizon": 5,
                "kd_tokens": 512,
            }
        },
        # Qwen2.5-Coder writes a valid ACTION= itself: it plays paper B's free protocol
        bandit_compare_models=("gemma3-270m", "qwen2.5-coder-0.5b"),
        bandit_compare_cot=(False,),
        bandit_sweep_models=("gemma3-270m",),
        bandit_sweep_cot=(False,),
        freq_models=("gemma3-270m", "smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"),
        freq_lengths=(2, 4, 6, 8, 10),
        freq_repetitions=tuple(range(0, 101, 10)),
        freq_histories=2,
        kd_models=("gemma3-270m", "qwen2.5-coder-1.5b"),
        kd_instances=4,
        kd_horizon=30,
        kd_tokens=16,
        kd_decisions=("constrained",),
        # the embedded model that writes calls, at N = 5 (the paper's training size)
        lens_models=(("qwen2.5-coder-0.5b", "hf"),),
        lens_ns=(5,),
        lens_tokens=64,  # [ours] the tag and the call take about 30 of Qwen's tokens
        # -- paper A, notebooks 03-04: Qwen2.5-Coder-0.5B, the embedded model that writes calls, at
        # the evaluation's budget (notebook 02) and prompt (notebook 02's probe chose rules-v1 for it);
        # 30 turn rows per pass [ours: memory] (a pass of 50 peaked at 15 GB), each feeding the shared
        # prompt once more, so the backward pass need not recompute the forward (no checkpointing); the
        # KL to the base model measured on every 4th step [ours: time] (its pass is a quarter of a step)
        grpo_recipe={
            "model": "qwen2.5-coder-0.5b",
            "max_new_tokens": 16,
            "micro_batch": 30,
            "prompt": "rules-v1",
            "gradient_checkpointing": False,
            "kl_every": 4,
        },
        # [ours: time] validation on 10 episodes per step, not 30
        grpo_val_episodes=10,
        # -- paper A, notebook 05 [ours: time, 8 hours in all on 2 cores]. Measured in bfloat16 (README,
        # ESTIMATES["05"]): a 16-step run with its validation 31-58 min for the shaped and curriculum runs
        # (the curriculum's 1.2-1.8x, its rollouts grow with N), 14-27 min for the penalty run (its steps
        # took 9-60 s once it deadlocked every episode); the 27 kept adapters' held-out play about 7,840 s
        # (270-330 s an adapter). Three seeds took 7 h 15 min in all. Cut: 5 validation episodes per
        # step, not the recipe's 10, and 10 evaluation episodes per cell, not 30 (30 would add about
        # 4.4 h); the base model's and the recipe's rows are notebook 04's, on its first 10 evaluation
        # seeds and the same training seeds
        intervention_seeds=(0, 1, 2),
        intervention_val_episodes=5,
        intervention_eval_episodes=10,
        # -- paper B, notebook 14: Qwen2.5-Coder-0.5B, the embedded model that writes ACTION= itself
        # (a valid one in 55% of its no-CoT steps in notebook 11), in the paper's free protocol without
        # CoT, sized for 2 cores [ours: time] (the budget is updates x instances x horizon decisions of
        # 16 tokens), 20 decisions per optimiser step [ours: the paper's 128 of an 800-decision rollout
        # is about 6 steps per update; 20 of 80 gives 4], 10 per pass [ours: time and memory: a step's
        # 20 decisions are drawn at random, so its rows' prompts (150-270 tokens) differ in length;
        # sorted and cut in two passes they pad a quarter fewer tokens than in one]
        rlft_recipe={
            "model": "qwen2.5-coder-0.5b",
            "updates": 12,
            "instances": 8,
            "pool": 64,
            "arms": 5,
            "horizon": 10,
            "style": "no_cot",
            "max_new_tokens": 16,
            "micro_batch": 10,
            "minibatch": 20,
            "rollout_old_logprobs": False,
        },
        # [ours: time] 32 held-out instances per adapter, not 64
        rlft_eval_instances=32,
        # [ours] the harder control: Gemma 3 270M almost never writes a valid ACTION= (notebook 11)
        rlft_control_models=("gemma3-270m",),
        # [ours: time] the CoT ablation thinks in 64 tokens (paper 256): a CoT update costs several
        # no-CoT ones
        rlft_cot_ablation_tokens=64,
        # [ours: memory] 10 as notebook 16's CoT run (and now the recipe): at 20 a CoT update held 23 GB
        # of 24 from its first update on, and one rollout thrashed (523 s against 34-74 s); at 10
        # notebook 16's CoT updates peaked at 10.6 GB
        rlft_cot_micro_batch=10,
        # -- paper B, notebook 15: the embedded model that writes ACTION= itself, without CoT
        # [ours: time] (16 tokens; paper 256 with CoT), 8 instances (paper 64)
        explore_models=("qwen2.5-coder-0.5b",),
        explore_instances=8,
        explore_cot=False,
        explore_tokens=None,
        # -- paper B, notebook 16 [ours: time] Qwen2.5-Coder-0.5B against random play, 12 updates of
        # 16 games: the main RLFT run without CoT (16 tokens: Qwen writes ACTION= itself, 20 decisions
        # per pass), then the CoT ablation thinking in 64 tokens (paper 256; as notebook 14's), 10
        # decisions per pass [ours: memory] (a CoT update of the bandits at 20 peaked at 23 GB);
        # 30 held-out games per cell, thinking budgets up to 256 tokens
        # 20 decisions per optimiser step [ours: the bandits' 4 steps per update of about 80 decisions]
        ttt_recipe={"model": "qwen2.5-coder-0.5b", "updates": 12, "games": 16, "minibatch": 20},
        ttt_cot_runs=(False, True),
        ttt_cot_tokens=64,
        ttt_cot_micro_batch=10,
        ttt_no_cot_micro_batch=20,
        ttt_games=30,
        ttt_budgets=(16, 64, 256),
        recipe_reasons={
            "model": "the embedded model that writes tool calls and ACTION= itself (notebooks 02 and 11); the "
            "paper's models do not run on 2 cores",
            "max_new_tokens": "time on 2 cores: the evaluation's budget (GRPO), no chain of thought or 64 thinking "
            "tokens (RLFT)",
            "micro_batch": "memory: decisions per forward and backward pass within 24 GB; on the bandits also time "
            "(a minibatch's rows sorted by length and cut in two pad a quarter fewer tokens)",
            "prompt": "notebook 02's probe chose rules-v1 for this model",
            "gradient_checkpointing": "time: a shared-prefix micro-batch's activations fit in memory, so the "
            "backward pass need not recompute the forward",
            "kl_every": "time: the KL's pass is a quarter of a step; its curve is read every 4 steps",
            "updates": "time on 2 cores (the paper's 30K updates)",
            "instances": "time on 2 cores",
            "pool": "time: 12 updates of 8 instances draw from 64",
            "arms": "time: 5 arms learn within 12 updates",
            "horizon": "time on 2 cores",
            "style": "time: no chain of thought on 2 cores (the CoT ablation runs it)",
            "minibatch": "the paper's 128 of an 800-decision rollout is about 6 optimiser steps; 20 of about 80 "
            "decisions gives 4",
            "games": "time on 2 cores",
            "rollout_old_logprobs": "notebook 14's runs began before the rollout kept its per-token "
            "log-probabilities, and a run goes on with the settings it began with: they score the old ones in a "
            "pass (the same numbers up to rounding)",
            "cot": "time: the main run writes the action without a chain of thought; the CoT run is the ablation",
        },
    ),
    "paper": Profile(name="paper"),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None
