"""``paperlib philosophers ...``: scripted runs (no model, no torch) and LLM evaluations."""

from __future__ import annotations

from paperlib.cli import UsageError, int_at_least, nonnegative_int, positive_int
from paperlib.philosophers.env import MODES

_table_size = int_at_least(2, "a table needs at least 2 philosophers, got {text}")


def add_commands(groups) -> None:
    from paperlib.agents.scripted import SCRIPTED

    group = groups.add_parser("philosophers", help="the dining-philosophers benchmark (paper A)")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    run = commands.add_parser("run", help="play episodes with a scripted policy")
    run.add_argument("--policy", required=True, choices=sorted(SCRIPTED))
    run.add_argument("--n", type=_table_size, default=5, help="philosophers at the table")
    run.add_argument("--episodes", type=positive_int, default=30)
    run.add_argument("--rounds", type=positive_int, default=5)
    run.add_argument("--seed", type=nonnegative_int, default=0, help="episode e gets seed S + e")
    run.add_argument("--mode", choices=MODES, default="simultaneous")
    run.add_argument("--out", required=True, help="episode rows (parquet)")
    run.add_argument("--steps-out", help="step rows (parquet)")
    run.set_defaults(func=run_command)


def run_command(args) -> int:
    from paperlib.agents.scripted import make_scripted
    from paperlib.data import check_writable, write_parquet
    from paperlib.philosophers.episode import episode_seeds, run_episodes

    for path in filter(None, (args.out, args.steps_out)):
        check_writable(path)
    if args.steps_out and args.steps_out == args.out:
        raise UsageError("--out and --steps-out must be different files")
    episodes, steps = run_episodes(
        make_scripted(args.policy),
        n=args.n,
        rounds=args.rounds,
        seeds=episode_seeds(args.seed, args.episodes),
        mode=args.mode,
        labels={"policy": args.policy, "model": f"policy:{args.policy}"},
        progress=args.episodes * args.n > 2000,
    )
    write_parquet(episodes, args.out)
    if args.steps_out:
        write_parquet(steps, args.steps_out)
    print(
        f"{args.episodes} episodes of {args.policy} at N={args.n}: "
        f"mean reward {episodes['reward'].mean():.3f}, deadlock rate {episodes['deadlock'].mean():.2f}, "
        f"meals {episodes['meals_total'].mean():.2f} -> {args.out}"
    )
    return 0
