"""``paperlib philosophers ...``: scripted runs (no model, no torch) and LLM evaluations."""

from __future__ import annotations

from paperlib.argtypes import UsageError, int_at_least, nonnegative_float, nonnegative_int, positive_int
from paperlib.philosophers.env import MODES

table_size = int_at_least(2, "a table needs at least 2 philosophers, got {text}")


def add_commands(groups) -> None:
    from paperlib.philosophers.scripted import SCRIPTED

    group = groups.add_parser("philosophers", help="the dining-philosophers benchmark (paper A)")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    run = commands.add_parser("run", help="play episodes with a scripted policy")
    run.add_argument("--policy", required=True, choices=sorted(SCRIPTED))
    run.add_argument("--n", type=table_size, default=5, help="philosophers at the table")
    run.add_argument("--episodes", type=positive_int, default=30)
    run.add_argument("--rounds", type=positive_int, default=5)
    run.add_argument("--seed", type=nonnegative_int, default=0, help="episode e gets seed S + e")
    run.add_argument("--mode", choices=MODES, default="simultaneous")
    run.add_argument("--out", required=True, help="episode rows (parquet)")
    run.add_argument("--steps-out", help="step rows (parquet)")
    run.set_defaults(func=run_command)

    from paperlib.backends import BACKENDS
    from paperlib.llm.core import DECISION_MODES
    from paperlib.philosophers.prompts import PROMPTS

    ev = commands.add_parser("eval", help="evaluate a model (or policy:NAME) over a grid of N, resumable")
    ev.add_argument("--model", required=True, help="a registered model, a hub id, or policy:NAME for a scripted policy")
    ev.add_argument("--n", type=table_size, nargs="+", default=[5, 10, 15], help="table sizes")
    ev.add_argument("--episodes", type=positive_int, default=30, help="episodes per N")
    ev.add_argument("--rounds", type=positive_int, default=5)
    ev.add_argument("--seed", type=nonnegative_int, default=0, help="episode e gets seed S + e at every N")
    ev.add_argument("--mode", choices=MODES, default="simultaneous")
    ev.add_argument("--out", required=True, help="a directory of episode and step shards; rerun to resume")
    agent = ev.add_argument_group("LLM agent (not for policy:NAME; defaults in paperlib.philosophers.llm)")
    agent.add_argument("--backend", choices=BACKENDS)
    agent.add_argument("--prompt", choices=sorted(PROMPTS), help="prompt version")
    agent.add_argument("--decision", choices=DECISION_MODES, help="free (the paper's protocol) or constrained [ours]")
    agent.add_argument("--temperature", type=nonnegative_float)
    agent.add_argument("--max-new-tokens", type=positive_int)
    ev.add_argument("--batch-episodes", type=positive_int, help="episodes played (and saved) together; default all")
    ev.set_defaults(func=eval_command)


def run_command(args) -> int:
    from paperlib.data import check_writable, write_parquet
    from paperlib.philosophers.episode import episode_seeds, run_episodes
    from paperlib.philosophers.scripted import make_scripted

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


_AGENT_OPTIONS = ("backend", "prompt", "decision", "temperature", "max_new_tokens")  # make_llm_policy's


def eval_command(args) -> int:
    from paperlib.data import RolloutStore
    from paperlib.philosophers.analysis import summarise
    from paperlib.philosophers.evaluate import evaluate

    given = {name: getattr(args, name) for name in _AGENT_OPTIONS if getattr(args, name) is not None}
    if args.model.startswith("policy:") and given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{flags}: scripted policies take no agent options")
    store = RolloutStore(args.out)
    episodes, _ = evaluate(
        args.model,
        list(dict.fromkeys(args.n)),
        args.episodes,
        rounds=args.rounds,
        mode=args.mode,
        seed=args.seed,
        store=store,
        batch_episodes=args.batch_episodes,
        **given,
    )
    table = summarise(episodes, rewards=("reward",))
    for row in table.itertuples():
        print(
            f"{args.model} N={row.n}: {row.episodes} episodes, mean reward {row.reward:.3f} "
            f"[{row.reward_low:.3f}, {row.reward_high:.3f}], deadlock rate {row.deadlock_rate:.2f}, meals {row.meals:.2f}"
        )
    print(f"-> {args.out}")
    return 0
