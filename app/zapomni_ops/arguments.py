"""argparse value types shared by the operator commands: a bad value is refused with its range."""

from __future__ import annotations

import argparse


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def seconds(value: str) -> float:
    """0 to 3600 seconds."""
    number = float(value)
    if not 0 <= number <= 3600:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 3600 seconds")
    return number


def port(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (1-65535)")
    return number
