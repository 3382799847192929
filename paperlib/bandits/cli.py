"""``paperlib bandit ...``: bandit runs with the classic baselines (no model, no torch) or an LLM."""

from __future__ import annotations

import argparse

from paperlib.argtypes import UsageError, int_at_least, nonnegative_float, nonnegative_int, positive_int


arms = int_at_least(2, "a bandit needs at least 2 arms, got {text}")


def add_commands(groups) -> None:
    from paperlib.bandits.agents import AGENTS
    from paperlib.bandits.baselines import EPSILON
    from paperlib.bandits.env import FAMILIES, HORIZON, NOISE_SIGMA, VARIANTS
    from paperlib.backends import BACKENDS
    from paperlib.llm.core import DECISION_MODES

    group = groups.add_parser("bandit", help="multi-armed bandits (paper B)")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    run = commands.add_parser("run", help="play bandit instances with one agent")
    run.add_argument("--agent", required=True, choices=AGENTS)
    run.add_argument("--model", help="model name, for --agent llm")
    run.add_argument("--arms", type=arms, default=10)
    run.add_argument("--noise", choices=tuple(NOISE_SIGMA), default="low")
    run.add_argument("--horizon", type=positive_int, default=HORIZON)
    run.add_argument("--instances", type=positive_int, default=64)
    run.add_argument("--seed", type=nonnegative_int, default=0, help="instance i gets seed S + i")
    run.add_argument("--variant", choices=VARIANTS, default="button")
    run.add_argument("--cot", action=argparse.BooleanOptionalAction, default=True, help="for --agent llm")
    llm = run.add_argument_group("--agent llm only")
    llm.add_argument("--backend", choices=BACKENDS, help="default hf (local transformers)")
    llm.add_argument("--decision", choices=DECISION_MODES,
                     help="free: the paper's rule (no valid ACTION= plays a random arm); constrained [ours]: "
                          "ACTION= forced after the model's text, the arm chosen by its scores (default free)")
    llm.add_argument("--knowing-doing", action="store_true", default=None, help="the UCB (knowing-doing) prompt")
    llm.add_argument("--temperature", type=nonnegative_float, help="default 0 (greedy, as the paper's evaluation)")
    llm.add_argument("--max-new-tokens", type=positive_int, help="default: the paper's budget for the prompt")
    run.add_argument("--family", choices=FAMILIES, default="gaussian")
    run.add_argument("--epsilon", type=float, default=EPSILON, help="for --agent epsilon_greedy")
    run.add_argument("--out", required=True, help="episode rows (parquet)")
    run.add_argument("--steps-out", help="step rows (parquet)")
    run.set_defaults(func=run_command)


def run_command(args) -> int:
    from paperlib.bandits.agents import make_agent
    from paperlib.bandits.env import BanditSpec
    from paperlib.bandits.runner import run_bandit
    from paperlib.data import check_writable, write_parquet

    llm = {"backend": args.backend, "decision": args.decision, "temperature": args.temperature,
           "max_new_tokens": args.max_new_tokens, "style": "knowing_doing" if args.knowing_doing else None}
    llm = {key: value for key, value in llm.items() if value is not None}
    if args.agent == "llm" and not args.model:
        raise UsageError("--agent llm needs --model")
    for path in filter(None, (args.out, args.steps_out)):
        check_writable(path)
    if args.steps_out and args.steps_out == args.out:
        raise UsageError("--out and --steps-out must be different files")
    spec = BanditSpec(args.arms, args.horizon, args.family, args.noise, args.variant)
    agent = make_agent(args.agent, args.model, epsilon=args.epsilon, cot=args.cot, **llm)
    progress = args.agent == "llm" or args.instances * args.horizon > 20000
    episodes, steps = run_bandit(agent, spec, args.instances, args.seed, progress=progress)
    write_parquet(episodes, args.out)
    if args.steps_out:
        write_parquet(steps, args.steps_out)
    print(
        f"{args.instances} {args.family} bandits, k={args.arms}, T={args.horizon}, {args.agent}: "
        f"regret {episodes['regret'].mean():.2f}, coverage {episodes['coverage'].mean():.2f}, "
        f"invalid steps {episodes['invalid_steps'].mean():.2f} -> {args.out}"
    )
    return 0
