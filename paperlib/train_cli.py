"""``paperlib train grpo ...``: GRPO on the dining philosophers (paper A's recipe);
``paperlib train rlft ...``: RLFT on the bandits, ``paperlib train rlft-tictactoe ...`` on
tic-tac-toe (paper B's). Each starts from its profile's recipe (``paperlib.profiles``), as the
notebooks do; all resume when rerun.

Every refusal (zero steps, a group of one, an unknown model, reward or profile, an output
directory holding another run) is one line, before any model loads.
"""

from __future__ import annotations

import argparse

from paperlib.argtypes import int_at_least, nonnegative_int, positive_float, positive_int


def add_commands(groups) -> None:
    from paperlib.philosophers.training import REWARDS, ROW_LAYOUTS
    from paperlib.tictactoe.training import OPPONENTS

    group = groups.add_parser("train", help="fine-tune a model on a game's own rollouts")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    grpo = _parser(
        commands,
        "grpo",
        "GRPO with a LoRA adapter on the philosophers (paper A)",
        "smoke (SmolLM2, two tiny steps), cpu (Qwen2.5-Coder-0.5B, the paper's recipe), paper (Qwen3-14B, "
        "vLLM on a GPU)",
        "step",
        "episodes",
    )
    grpo.add_argument(
        "--reward",
        choices=tuple(REWARDS),
        default="paper",
        help="paper (paper A's), shaped (no-deadlock credit needs a meal), valid (share of valid "
        "actions: the positive control), shaped_penalty (shaped, less paper B's penalty per failed call)",
    )
    grpo.add_argument("--steps", type=positive_int, help="optimiser steps; default: the profile's (the paper: 16)")
    grpo.add_argument("--groups", type=positive_int, help="groups (seeds) per step; default: the profile's")
    grpo.add_argument(
        "--group-size",
        type=int_at_least(
            2, "a group needs at least 2 episodes (GRPO's advantage is relative within the group), got {text}"
        ),
        help="episodes per group; default: the profile's (the paper: 3)",
    )
    grpo.add_argument("--rows", choices=ROW_LAYOUTS, help="one trl row per turn or per seat; default: the profile's")
    grpo.add_argument(
        "--curriculum",
        type=int_at_least(2, "a table needs at least 2 philosophers, got {text}"),
        nargs="+",
        metavar="N",
        help="N per block of steps, e.g. 5 10 15 (paper A's third prescription; notebook 05); default: none",
    )
    grpo.add_argument(
        "--val-episodes",
        type=nonnegative_int,
        help="validation episodes per step, played in training, for best_val (0: none); default: the profile's",
    )
    grpo.set_defaults(func=grpo_command)

    rlft = _parser(
        commands,
        "rlft",
        "RLFT (PPO with a KL penalty) with a LoRA adapter on the bandits (paper B)",
        "smoke (SmolLM2, two tiny updates), cpu (Qwen2.5-Coder-0.5B without CoT, 5 arms, 10 steps), "
        "paper (Gemma2 2B, the paper's sizes, on a GPU)",
        "update",
        "instances",
    )
    rlft.add_argument("--bonus", action="store_true", help="paper B's exploration bonus: +1 for an arm not yet tried")
    rlft.add_argument("--instances", type=positive_int, help="bandits per update; default: the profile's (paper: 16)")
    rlft.set_defaults(func=rlft_command)

    ttt = _parser(
        commands,
        "rlft-tictactoe",
        "RLFT with a value head and GAE, LoRA, on tic-tac-toe against a scripted opponent (paper B)",
        "smoke (SmolLM2, two tiny updates), cpu (Qwen2.5-Coder-0.5B without CoT), paper (Gemma2 2B with CoT, on a GPU)",
        "update",
        "games",
    )
    ttt.add_argument("--opponent", choices=OPPONENTS, help="default: the profile's (random)")
    ttt.add_argument(
        "--cot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="think before the move, in the profile's tokens for a run with CoT (ttt_cot_tokens) or "
        "without; default: the profile's main run",
    )
    ttt.add_argument(
        "--no-legal-actions",
        dest="legal_in_prompt",
        action="store_false",
        default=None,
        help="prompts do not list the legal moves",
    )
    ttt.add_argument("--games", type=positive_int, help="games per update; default: the profile's (16)")
    ttt.set_defaults(func=rlft_tictactoe_command)
    for command in (rlft, ttt):
        command.add_argument("--updates", type=positive_int, help="updates (optimiser steps); default: the profile's")


def _parser(commands, name: str, what: str, sizes: str, step: str, played: str):
    """The options every training command has; ``sizes``: the profiles' recipes in words, ``step``:
    what one optimiser step is called, ``played``: what a step plays (the seed draws it)."""
    from paperlib.profiles import PROFILES
    from paperlib.training.precision import PRECISIONS

    command = commands.add_parser(name, help=f"{what}; rerun to resume")
    command.add_argument("--model", help="a local model (registered name or hub id); default: the profile's")
    command.add_argument("--profile", choices=tuple(PROFILES), default="cpu", help=f"sizes: {sizes}")
    command.add_argument(
        "--out", required=True, help=f"the run's directory: adapters per {step}, training log, rollouts"
    )
    command.add_argument(
        "--seed", type=nonnegative_int, default=0, help=f"the run's seed (LoRA init, {played}, sampling)"
    )
    command.add_argument("--learning-rate", type=positive_float, help="default: the profile's")
    command.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="the training passes': bfloat16 autocast or float32; default: the profile's (auto: bfloat16 where "
        "the hardware multiplies it natively)",
    )
    return command


def grpo_command(args) -> int:
    from paperlib.philosophers.training import recipe, train_and_validate
    from paperlib.training.grpo import train

    settings = recipe(
        args.profile,
        model=args.model,
        reward=args.reward,
        seed=args.seed,
        steps=args.steps,
        groups=args.groups,
        group_size=args.group_size,
        learning_rate=args.learning_rate,
        precision=args.precision,
        rows=args.rows,
        curriculum=tuple(args.curriculum) if args.curriculum else None,
        val_episodes=args.val_episodes,
    )
    # with validation: the last step validated and the adapters checkpoint selection chooses kept
    log = train_and_validate(settings, args.out)[0] if settings.val_episodes else train(settings, args.out)
    final = log.sort_values("step").iloc[-1]
    print(
        f"GRPO {settings.model}, reward {settings.reward}, seed {settings.seed}: {int(final['step'])} steps, "
        f"training reward {final['train_reward']:.3f} at the last step "
        f"(best {log['train_reward'].max():.3f} at step {int(log.loc[log['train_reward'].idxmax(), 'step'])}) "
        f"-> {args.out}"
    )
    return 0


def rlft_command(args) -> int:
    from paperlib.bandits.training import recipe

    settings = recipe(
        args.profile,
        model=args.model,
        bonus=args.bonus or None,
        seed=args.seed,
        updates=args.updates,
        instances=args.instances,
        learning_rate=args.learning_rate,
        precision=args.precision,
    )
    ends = _trained_ends(settings, args.out)
    if ends is None:
        return 0
    first, final = ends
    print(
        f"RLFT {settings.model}{' with the exploration bonus' if settings.bonus else ''}, seed {settings.seed}: "
        f"{int(final['step'])} updates; training invalid-action rate {first['invalid_rate']:.2f} -> "
        f"{final['invalid_rate']:.2f}, regret {first['regret']:.2f} -> {final['regret']:.2f}, coverage "
        f"{first['coverage']:.2f} -> {final['coverage']:.2f} (training instances) -> {args.out}"
    )
    return 0


def _trained_ends(settings, out) -> tuple[dict, dict] | None:
    """Run (or resume) the RLFT run ``settings`` in ``out``; its first and last log rows for the
    command's summary, or None on every process but the main one (one summary per run)."""
    from paperlib.training.distributed import is_main
    from paperlib.training.rlft.loop import train

    log = train(settings, out)
    if not is_main():
        return None
    first, final = log.sort_values("step").iloc[[0, -1]].to_dict("records")
    return first, final


def rlft_tictactoe_command(args) -> int:
    from paperlib.tictactoe.training import recipe

    settings = recipe(
        args.profile,
        args.cot,
        model=args.model,
        opponent=args.opponent,
        legal_in_prompt=args.legal_in_prompt,
        seed=args.seed,
        updates=args.updates,
        games=args.games,
        learning_rate=args.learning_rate,
        precision=args.precision,
    )
    ends = _trained_ends(settings, args.out)
    if ends is None:
        return 0
    first, final = ends
    print(
        f"RLFT {settings.model} on tic-tac-toe against {settings.opponent}, seed {settings.seed}: "
        f"{int(final['step'])} updates; training return {first['mean_return']:.2f} -> {final['mean_return']:.2f}, "
        f"invalid-move rate {first['invalid_rate']:.2f} -> {final['invalid_rate']:.2f} (training games) -> {args.out}"
    )
    return 0
