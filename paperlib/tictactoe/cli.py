"""``paperlib tictactoe ...``: tic-tac-toe games of a scripted or LLM agent against a scripted opponent."""

from __future__ import annotations

import argparse

from paperlib.argtypes import UsageError, nonnegative_float, nonnegative_int, positive_int

# The names of the scripted players, repeated here so that building the parser loads no
# open_spiel; the opponents module holds the players themselves.
PLAYERS = ("random", "mcts", "noisy_mcts")


def add_commands(groups) -> None:
    group = groups.add_parser("tictactoe", help="tic-tac-toe against random and MCTS opponents (paper B)")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    run = commands.add_parser("run", help="play games of one agent against one opponent")
    run.add_argument(
        "--agent", required=True, choices=(*PLAYERS, "llm"), help="a scripted player in the agent's seat, or llm"
    )
    run.add_argument("--opponent", required=True, choices=PLAYERS)
    run.add_argument("--games", type=positive_int, default=100)
    run.add_argument("--seed", type=nonnegative_int, default=0, help="game g gets seed S + g")
    run.add_argument(
        "--no-legal-actions",
        dest="legal_in_prompt",
        action="store_false",
        help="prompts do not list the legal moves (recorded in every game row)",
    )
    from paperlib.backends import BACKENDS
    from paperlib.llm.core import DECISION_MODES

    llm = run.add_argument_group("--agent llm only")
    llm.add_argument("--model", help="model name, e.g. qwen2.5-coder-0.5b")
    llm.add_argument("--backend", choices=BACKENDS, help="default hf (local transformers)")
    llm.add_argument("--cot", action=argparse.BooleanOptionalAction, default=None, help="think first (default on)")
    llm.add_argument(
        "--decision", choices=DECISION_MODES, help="free (paper B's protocol, default) or constrained [ours]"
    )
    llm.add_argument("--temperature", type=nonnegative_float, help="default 0 (paper B's evaluation)")
    llm.add_argument(
        "--max-new-tokens", type=positive_int, help="default: the paper's budget (256 with CoT, 16 without)"
    )
    run.add_argument("--out", required=True, help="game rows (parquet)")
    run.add_argument("--steps-out", help="step rows (parquet)")
    run.set_defaults(func=run_command)


def run_command(args) -> int:
    from paperlib.data import check_writable, write_parquet
    from paperlib.tictactoe.agents import make_agent
    from paperlib.tictactoe.runner import run_games

    llm = {
        name: getattr(args, name)
        for name in ("backend", "cot", "decision", "temperature", "max_new_tokens")
        if getattr(args, name) is not None
    }
    if args.agent == "llm" and not args.model:
        raise UsageError("--agent llm needs --model")
    if args.agent != "llm" and (args.model or llm):
        raise UsageError(f"--model and the LLM options are for --agent llm, not the scripted {args.agent}")
    for path in filter(None, (args.out, args.steps_out)):
        check_writable(path)
    if args.steps_out and args.steps_out == args.out:
        raise UsageError("--out and --steps-out must be different files")
    agent = make_agent(args.agent, args.model, **llm) if args.agent == "llm" else make_agent(args.agent)
    games, steps = run_games(agent, args.opponent, args.games, args.seed, args.legal_in_prompt)
    write_parquet(games, args.out)
    if args.steps_out:
        write_parquet(steps, args.steps_out)
    counts = games["outcome"].value_counts()
    print(
        f"{args.games} games, {args.agent} vs {args.opponent}: mean return {games['return'].mean():.2f} "
        f"({counts.get('win', 0)} wins, {counts.get('draw', 0)} draws, {counts.get('loss', 0)} losses), "
        f"invalid moves {games['invalid_moves'].sum()} -> {args.out}"
    )
    return 0
