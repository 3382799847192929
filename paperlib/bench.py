"""``paperlib bench ...``: throughput of the local ``hf`` backend on each paper's workload, and
seconds per GRPO step.

Each subcommand times the fast path and its baseline in the same process and prints
ratios against the baseline and where the time goes (``paperlib.bench_hf``,
``paperlib.training.bench``). The
figures depend on the machine and on what else runs on it, so no test times them.
This module imports nothing heavy; the benchmarks load torch when they run.
"""

from __future__ import annotations


def add_commands(groups) -> None:
    group = groups.add_parser(
        "bench", help="throughput of the hf backend, a GRPO step and an RLFT update against their baselines"
    )
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    _add_philosophers(commands)
    _add_bandit(commands)
    _add_grpo(commands)
    _add_rlft(commands)


# -- paper A: philosopher decisions per second ---------------------------------------
def _add_philosophers(commands) -> None:
    from paperlib.argtypes import int_at_least, nonnegative_int, positive_int
    from paperlib.philosophers.cli import table_size

    command = commands.add_parser(
        "philosophers", help="philosopher decisions/s: batched agent vs one generate per philosopher"
    )
    command.add_argument("--model", default="smollm2-135m", help="a local model (hf backend)")
    command.add_argument("--n", type=table_size, default=5)
    command.add_argument("--episodes", type=positive_int, default=30, help="concurrent episodes")
    command.add_argument("--rounds", type=positive_int, default=2, help="rounds timed (every episode)")
    command.add_argument(
        "--naive",
        type=int_at_least(2, "--naive must be at least 2, got {text}"),
        default=10,
        help="decisions timed one generate call at a time",
    )
    command.add_argument("--decision", choices=("free", "constrained"), default="free")
    command.add_argument("--max-new-tokens", type=positive_int, default=32)
    command.add_argument("--seed", type=nonnegative_int, default=0)
    command.set_defaults(func=_run_philosophers)


def _run_philosophers(args) -> int:
    from paperlib.bench_hf import bench_batch, report
    from paperlib.models import resolve

    resolve(args.model)  # an unknown name fails in one line before torch loads
    print(
        report(
            batch=bench_batch(
                args.model,
                args.n,
                args.episodes,
                args.rounds,
                args.naive,
                args.max_new_tokens,
                seed=args.seed,
                decision=args.decision,
            )
        )
    )
    return 0


# -- paper B: bandit steps per second --------------------------------------------------
def _add_bandit(commands) -> None:
    import argparse

    from paperlib.argtypes import int_at_least, nonnegative_int, positive_int
    from paperlib.bandits.cli import arms

    command = commands.add_parser(
        "bandit", help="bandit steps/s and prompt tokens computed: per-instance KV vs recomputing"
    )
    command.add_argument("--model", default="gemma3-270m", help="a local model (hf backend)")
    command.add_argument("--instances", type=positive_int, default=64)
    command.add_argument("--arms", type=arms, default=10)
    command.add_argument("--start", type=nonnegative_int, default=25, help="steps a random policy plays first")
    command.add_argument(
        "--steps",
        type=int_at_least(2, "--steps must be at least 2 (one cold, then warm), got {text}"),
        default=4,
        help="timed steps (the first is cold)",
    )
    command.add_argument("--cot", action=argparse.BooleanOptionalAction, default=False)
    command.add_argument("--decision", choices=("free", "constrained"), default="constrained")
    command.add_argument("--max-new-tokens", type=positive_int, help="default: the paper's budget for the prompt")
    command.set_defaults(func=_run_bandit)


def _run_bandit(args) -> int:
    from paperlib.bench_hf import bench_streams, report

    print(
        report(
            streams=bench_streams(
                args.model,
                args.instances,
                args.arms,
                args.start,
                args.steps,
                args.cot,
                args.decision,
                args.max_new_tokens,
            )
        )
    )
    return 0


# -- paper A's training: seconds per GRPO step ----------------------------------------------
def _add_grpo(commands) -> None:
    from paperlib.argtypes import int_at_least, nonnegative_int, positive_int
    from paperlib.philosophers.training import REWARDS
    from paperlib.profiles import PROFILES
    from paperlib.training.bench import VARIANTS

    command = commands.add_parser(
        "grpo", help="seconds per GRPO step and where they go: float32 against bfloat16, or trl's path against ours"
    )
    command.add_argument("--profile", choices=tuple(PROFILES), default="cpu", help="the recipe to time")
    command.add_argument(
        "--lever",
        choices=tuple(VARIANTS),
        default="precision",
        help="precision: float32 against bfloat16 autocast; paths: trl's path against the shared prefix (float32)",
    )
    command.add_argument("--model", help="a local model; default: the profile's")
    command.add_argument(
        "--reward",
        choices=tuple(REWARDS),
        default="valid",
        help="the reward trained on (valid: it varies within a group, so the loss is not zero)",
    )
    command.add_argument("--rounds", type=positive_int, help="rounds per episode; default: the profile's")
    command.add_argument("--groups", type=positive_int, default=1, help="groups per step (the recipe: 2)")
    command.add_argument(
        "--group-size",
        type=int_at_least(2, "--group-size must be at least 2, got {text}"),
        default=2,
        help="episodes per group (the recipe: 3)",
    )
    command.add_argument(
        "--micro-batch",
        type=nonnegative_int,
        help="rows per pass (0: the whole step); default: the largest divisor of the step's rows up to the profile's",
    )
    command.set_defaults(func=_run_grpo)


def _run_grpo(args) -> int:
    from paperlib.philosophers.training import recipe
    from paperlib.training.bench import bench_step, report

    shape = dict(
        model=args.model, reward=args.reward, rounds=args.rounds, groups=args.groups, group_size=args.group_size
    )
    settings = recipe(args.profile, micro_batch=0, **shape)
    micro_batch = args.micro_batch
    if micro_batch is None:
        limit = recipe(args.profile).micro_batch or settings.row_count
        micro_batch = max(d for d in range(1, limit + 1) if settings.row_count % d == 0)
    from paperlib.training.bench import VARIANTS

    settings = recipe(args.profile, micro_batch=micro_batch, **shape)
    print(report(settings, bench_step(settings, VARIANTS[args.lever])))
    return 0


# -- paper B's training: seconds per RLFT update ----------------------------------------------
def _add_rlft(commands) -> None:
    from paperlib.argtypes import nonnegative_int, positive_int
    from paperlib.profiles import PROFILES
    from paperlib.training.bench import RLFT_VARIANTS

    command = commands.add_parser(
        "rlft",
        help="seconds per RLFT update and where they go: float32 against bfloat16, every row whole against the "
        "shared prefix, one pass per minibatch against the recipe's passes, or PPO's old log-probabilities from a "
        "pass against the rollout's",
    )
    command.add_argument(
        "--lever",
        choices=tuple(RLFT_VARIANTS),
        default="precision",
        help="precision: float32 against bfloat16 autocast; paths: every row whole against the shared prefix; "
        "passes: one forward and backward pass per minibatch against the recipe's passes of --micro-batch; "
        "old: PPO's old log-probabilities from a pass without gradients against the rollout's own",
    )
    command.add_argument(
        "--game",
        choices=("bandits", "tictactoe"),
        default="bandits",
        help="bandits (notebook 14) or tic-tac-toe with its value head (notebook 16)",
    )
    command.add_argument("--profile", choices=tuple(PROFILES), default="cpu", help="the recipe to time")
    command.add_argument("--model", help="a local model; default: the profile's")
    command.add_argument("--instances", type=positive_int, help="bandits per update; default: the profile's")
    command.add_argument("--horizon", type=positive_int, help="steps per bandit; default: the profile's")
    command.add_argument("--games", type=positive_int, help="tic-tac-toe games per update; default: the profile's")
    command.add_argument(
        "--micro-batch", type=nonnegative_int, help="decisions per pass (0: all); default: the profile's"
    )
    command.set_defaults(func=_run_rlft)


def _run_rlft(args) -> int:
    from paperlib.argtypes import UsageError
    from paperlib.training.bench import bench_update, report_update

    if args.game == "bandits":
        if args.games is not None:
            raise UsageError("--games is for --game tictactoe")
        from paperlib.bandits.training import recipe

        settings = recipe(
            args.profile, model=args.model, instances=args.instances, horizon=args.horizon, micro_batch=args.micro_batch
        )
    else:
        if args.instances is not None or args.horizon is not None:
            raise UsageError("--instances and --horizon are for --game bandits")
        from paperlib.tictactoe.training import recipe

        settings = recipe(args.profile, model=args.model, games=args.games, micro_batch=args.micro_batch)
    from paperlib.training.bench import RLFT_VARIANTS

    print(report_update(settings, bench_update(settings, RLFT_VARIANTS[args.lever])))
    return 0
