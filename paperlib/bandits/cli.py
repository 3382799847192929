"""``paperlib bandit ...``: bandit runs with the classic baselines (no model, no torch) or an LLM."""

from __future__ import annotations

import argparse

from paperlib.argtypes import UsageError, int_at_least, nonnegative_float, nonnegative_int, positive_int

arms = int_at_least(2, "a bandit needs at least 2 arms, got {text}")


def probability(text: str) -> float:
    """An argparse type: a number in [0, 1] (epsilon)."""
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def add_commands(groups) -> None:
    from paperlib.backends import BACKENDS
    from paperlib.bandits.agents import AGENTS
    from paperlib.bandits.baselines import EPSILON
    from paperlib.bandits.env import FAMILIES, HORIZON, NOISE_SIGMA, VARIANTS
    from paperlib.bandits.exploration import MECHANISMS, SAMPLES
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
    llm.add_argument(
        "--decision",
        choices=DECISION_MODES,
        help="free: the paper's rule (no valid ACTION= plays a random arm); constrained [ours]: "
        "ACTION= forced after the model's text, the arm chosen by its scores (default free)",
    )
    llm.add_argument("--knowing-doing", action="store_true", default=None, help="the UCB (knowing-doing) prompt")
    llm.add_argument("--temperature", type=nonnegative_float, help="default 0 (greedy, as the paper's evaluation)")
    llm.add_argument("--max-new-tokens", type=positive_int, help="default: the paper's budget for the prompt")
    llm.add_argument(
        "--exploration",
        choices=MECHANISMS,
        help="one of paper B's exploration mechanisms (its Fig. 8; default none): try_all plays every arm "
        "once first; epsilon_greedy a random arm with probability --epsilon; context_randomisation "
        "shuffles the history lines; context_summary gives per-arm counts and means instead; "
        "self_correction asks the model to revise its answer; self_consistency plays the majority "
        "of --samples answers (needs --temperature above 0)",
    )
    llm.add_argument(
        "--samples",
        type=positive_int,
        help=f"answers per step, for --exploration self_consistency (default {SAMPLES}, paper B)",
    )
    run.add_argument("--family", choices=FAMILIES, default="gaussian")
    run.add_argument(
        "--epsilon",
        type=probability,
        help=f"for --agent epsilon_greedy or --exploration epsilon_greedy (default {EPSILON})",
    )
    run.add_argument("--out", required=True, help="episode rows (parquet)")
    run.add_argument("--steps-out", help="step rows (parquet)")
    run.set_defaults(func=run_command)


def exploration_of(args):
    """The LLM agent's ``Exploration`` from --exploration, --epsilon and --samples (None without
    --exploration); a parameter for another mechanism is refused."""
    from paperlib.bandits.baselines import LLM_AGENT
    from paperlib.bandits.exploration import Exploration

    mechanism = args.exploration or "none"
    if args.samples is not None and mechanism != "self_consistency":
        raise UsageError("--samples is for --exploration self_consistency")
    if args.epsilon is not None and args.agent == LLM_AGENT and mechanism != "epsilon_greedy":
        raise UsageError("--epsilon is for --agent epsilon_greedy or --exploration epsilon_greedy")
    if args.exploration is None:
        return None
    given = {"epsilon": args.epsilon, "samples": args.samples}
    return Exploration(mechanism, **{key: value for key, value in given.items() if value is not None})


def run_command(args) -> int:
    from paperlib.bandits.agents import make_agent
    from paperlib.bandits.baselines import EPSILON
    from paperlib.bandits.env import BanditSpec
    from paperlib.bandits.runner import run_bandit
    from paperlib.data import check_writable, write_parquet

    llm = {
        "backend": args.backend,
        "decision": args.decision,
        "temperature": args.temperature,
        "max_new_tokens": args.max_new_tokens,
        "style": "knowing_doing" if args.knowing_doing else None,
        "exploration": exploration_of(args),
    }
    llm = {key: value for key, value in llm.items() if value is not None}
    if args.agent == "llm" and not args.model:
        raise UsageError("--agent llm needs --model")
    for path in filter(None, (args.out, args.steps_out)):
        check_writable(path)
    if args.steps_out and args.steps_out == args.out:
        raise UsageError("--out and --steps-out must be different files")
    spec = BanditSpec(args.arms, args.horizon, args.family, args.noise, args.variant)
    agent = make_agent(
        args.agent, args.model, epsilon=EPSILON if args.epsilon is None else args.epsilon, cot=args.cot, **llm
    )
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
