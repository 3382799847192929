"""The ``paperlib`` command: what the notebooks do, for batch jobs and clusters.

Each command group registers itself from its own module (``add_commands``); those
modules import nothing heavy at import time, so a scripted run never loads torch.
Bad arguments end with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from paperlib.argtypes import UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not the usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from paperlib import bench, pipeline, publish, train_cli
    from paperlib.bandits import cli as bandits_cli
    from paperlib.philosophers import cli as philosophers_cli
    from paperlib.tictactoe import cli as tictactoe_cli

    parser = _Parser(prog="paperlib", description=__doc__.splitlines()[0])
    groups = parser.add_subparsers(dest="group", required=True, parser_class=_Parser)
    for module in (philosophers_cli, bandits_cli, tictactoe_cli, train_cli, bench, pipeline, publish):
        module.add_commands(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (UsageError, ValueError, OSError) as exc:
        print(f"paperlib: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
