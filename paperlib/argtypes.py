"""Argument types and the one-line usage error shared by every command group."""

from __future__ import annotations

import argparse


class UsageError(ValueError):
    """A bad argument found after parsing; printed as one line."""


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


def positive_float(text: str) -> float:
    """An argparse type: a number above zero (a learning rate)."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def nonnegative_float(text: str) -> float:
    """An argparse type: a number of zero or more (a sampling temperature)."""
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value
