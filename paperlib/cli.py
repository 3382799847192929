"""The ``paperlib`` command: what the notebooks do, for batch jobs and clusters.

Each command group registers itself from its own module (``add_commands``); those
modules import nothing heavy at import time, so a scripted run never loads torch.
Bad arguments end with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys


class UsageError(ValueError):
    """A bad argument found after parsing; printed as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not the usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def int_at_least(least: int, message: str = "must be at least {least}, got {text}"):
    """An argparse type: an integer of at least ``least``, else ``message`` (formatted with least and text)."""

    def parse(text: str) -> int:
        value = int(text)
        if value < least:
            raise argparse.ArgumentTypeError(message.format(least=least, text=text))
        return value

    parse.__name__ = "integer"  # argparse names the type in its "invalid integer value" message
    return parse


positive_int = int_at_least(1, "must be a positive integer, got {text}")
nonnegative_int = int_at_least(0, "must be zero or more, got {text}")


def nonnegative_float(text: str) -> float:
    """An argparse type: a number of zero or more (a sampling temperature)."""
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from paperlib import bench, pipeline
    from paperlib.bandits import cli as bandits_cli
    from paperlib.philosophers import cli as philosophers_cli

    parser = _Parser(prog="paperlib", description=__doc__.splitlines()[0])
    groups = parser.add_subparsers(dest="group", required=True, parser_class=_Parser)
    for module in (philosophers_cli, bandits_cli, bench, pipeline):
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
