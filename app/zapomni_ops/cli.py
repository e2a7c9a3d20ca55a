"""Registers the operator subcommands on the `zapomni` command line.

A command module exposes ``add_parser(commands)``, which adds its subparser and sets
``run=<callable(args, settings) -> int>`` as the parser's default; `zapomni` calls it and exits
with the code it returns.
"""

from __future__ import annotations

import argparse
import importlib

# In the order `zapomni --help` lists them.
COMMAND_MODULES = ("doctor", "health_server", "backup", "restore", "migrate", "transfer")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"zapomni_ops.commands.{name}")
        module.add_parser(commands)
