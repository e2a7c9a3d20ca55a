"""What every CLI command shares: a command is a tool's name, its flags, a request built from them, and a call.

`memory_commands`, `job_commands` and `file_commands` declare their commands with `Command`;
`run` validates the request before the database and the model are started (a typo is refused at
once, naming the flag: see `errors`), opens the core, calls it, and prints the result or one line
per problem.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from zapomni_cli import render
from zapomni_cli.errors import CliError, describe_engine_error
from zapomni_core import Settings, ZapomniCore, ZapomniError, open_core


@dataclass(frozen=True)
class Prepared:
    """A validated request, and how to name its fields in errors (e.g. text -> --file notes.md)."""

    request: BaseModel | None
    labels: dict[str, str] = field(default_factory=dict)
    extra: Sequence[BaseModel] = field(default_factory=list)  # a command of several requests (one per PATH)


@dataclass(frozen=True)
class Command:
    name: str  # the MCP tool's name
    aliases: tuple[str, ...]
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    prepare: Callable[[argparse.Namespace], Prepared]
    execute: Callable[[ZapomniCore, Prepared, argparse.Namespace], Awaitable[BaseModel]]
    scoped: bool = True  # takes --workspace
    # How to print the result for people when it needs the arguments too (default: `render.render`).
    show: Callable[[BaseModel, argparse.Namespace, Console], None] | None = None


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser, command: Command
) -> None:
    """The subcommand (and its aliases) of one tool, with --workspace when scoped and --json."""
    parser = commands.add_parser(
        command.name,
        aliases=list(command.aliases),
        help=command.help,
        description=command.help[:1].upper() + command.help[1:] + ".",
        parents=[common],
    )
    command.configure(parser)
    if command.scoped:
        parser.add_argument(
            "--workspace", metavar="NAME", help="the workspace to use (default: ZAPOMNI_WORKSPACE, or 'default')"
        )
    parser.add_argument("--json", action="store_true", help="print exactly the structured result as JSON, nothing else")
    parser.set_defaults(memory_command=command)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run a memory command; the exit code: 0 done, 1 refused or failed, 2 a bad argument."""
    command: Command = args.memory_command
    prepared = Prepared(None)
    try:
        prepared = command.prepare(args)
        result = asyncio.run(_execute(settings, command, prepared, args))
    except CliError as exc:
        _error(args, str(exc))
        return exc.code
    except ZapomniError as exc:
        _error(args, describe_engine_error(str(exc), prepared.labels))
        return 1
    if args.json:
        render.print_json(result)
    elif command.show is not None:
        command.show(result, args, render.console())
    else:
        render.render(result, render.console())
    return 0


async def _execute(settings: Settings, command: Command, prepared: Prepared, args: argparse.Namespace) -> BaseModel:
    async with open_core(settings, background_jobs=False) as (core, _info):
        return await command.execute(core, prepared, args)


def _error(args: argparse.Namespace, message: str) -> None:
    # A command of a group (`token create`) is named whole.
    command = getattr(args, "command_path", args.command)
    for line in message.splitlines():
        print(f"zapomni {command}: {line}", file=sys.stderr)


def given(**values: Any) -> dict[str, Any]:
    """The values that were given: those not None."""
    return {key: value for key, value in values.items() if value is not None}
