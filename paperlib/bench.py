"""``paperlib bench ...``: throughput of the local ``hf`` backend on each paper's workload.

Each subcommand times the fast path and its baseline in the same process and prints
ratios against the baseline and where the time goes (``paperlib.bench_hf``). The
figures depend on the machine and on what else runs on it, so no test times them.
This module imports nothing heavy; the benchmarks load torch when they run.
"""

from __future__ import annotations


def add_commands(groups) -> None:
    group = groups.add_parser("bench", help="throughput of the hf backend against its naive baseline")
    commands = group.add_subparsers(dest="command", required=True, parser_class=type(group))
    _add_philosophers(commands)
    _add_bandit(commands)


# -- paper A: philosopher decisions per second ---------------------------------------
def _add_philosophers(commands) -> None:
    command = commands.add_parser("philosophers", help="philosopher decisions/s: batched agent vs one generate per philosopher")
    command.set_defaults(func=lambda args: print("TODO(issue 3)") or 1)


# -- paper B: bandit steps per second --------------------------------------------------
def _add_bandit(commands) -> None:
    command = commands.add_parser("bandit", help="bandit steps/s and prompt tokens computed: per-instance KV vs recomputing")
    command.set_defaults(func=lambda args: print("TODO(issue 4)") or 1)
