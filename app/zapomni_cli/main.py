"""`zapomni`: the parser, the log level, and dispatch to serve, the memory commands and the operator commands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from pydantic import ValidationError

from zapomni_cli import commands, file_commands, job_commands, memory_commands, token_commands
from zapomni_core import Settings, ZapomniError, configure_logging, describe_settings_error, package_version
from zapomni_ops.cli import register as register_operator_commands

# Commands that run until stopped: they log at LOG_LEVEL (default INFO), like any server. `zapomni console` is
# a person's, in a terminal: it logs warnings unless asked (-v, LOG_LEVEL), like the operator commands.
LONG_RUNNING = frozenset({"serve", "health-server"})
# One-shot commands log less unless asked: the memory commands only errors (their result says
# the rest), the operator commands warnings too (a skipped file in a backup is worth a line).
MEMORY_COMMAND_LEVEL = "ERROR"
OPERATOR_COMMAND_LEVEL = "WARNING"
VERBOSE_LEVEL = "INFO"

EPILOG = """\
Every memory and job command takes --json (exactly the tool's structured result on stdout, nothing
else), and those that act on one workspace take --workspace NAME. Background jobs (a large add's
indexing) are run by `zapomni serve`; job_status, list_jobs and cancel_job follow them. Run
`zapomni COMMAND --help` for a command's options. `zapomni token create|list|revoke` manage the access
tokens of the HTTP server.

Logs are JSON lines on stderr, never on stdout. serve and health-server log at LOG_LEVEL (default
INFO). Other commands log only errors (memory commands) or warnings (operator commands and console),
unless --verbose (INFO) is given or LOG_LEVEL is set in the environment, which then wins.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zapomni",
        description="Local-first long-term memory for AI agents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"zapomni {package_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO on stderr")
    # The same flag after the command (`zapomni add --verbose ...`); SUPPRESS keeps an earlier one.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log at INFO on stderr")

    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _serve_parser(
        commands.add_parser(
            "serve", help="run the MCP server: on stdin/stdout (what MCP clients start), or --http", parents=[common]
        )
    )
    console = commands.add_parser(
        "console",
        help="serve the web console of the local store on 127.0.0.1 (prints its address; sign in with a token)",
        parents=[common],
    )
    console.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free one; default 8765)")
    memory_commands.register(commands, common)
    job_commands.register(commands, common)
    file_commands.register(commands, common)
    token_commands.register(commands, common)
    register_operator_commands(commands)
    for subparser in {id(p): p for p in commands.choices.values()}.values():  # operator commands, once each
        if "--verbose" not in subparser._option_string_actions:
            subparser.add_argument(
                "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log at INFO on stderr"
            )
    return parser


def _serve_parser(serve: argparse.ArgumentParser) -> None:
    serve.description = (
        "Run the MCP server on stdin/stdout, which is how MCP clients start it; with --http, serve MCP Streamable "
        "HTTP for remote clients instead (every request needs a token: `zapomni token create`). The other HTTP "
        "settings come from the environment (ZAPOMNI_HTTP_*, ZAPOMNI_TLS_CERT, ZAPOMNI_TLS_KEY; see the README)."
    )
    serve.add_argument("--http", action="store_true", help="serve MCP over HTTP instead of stdio")
    serve.add_argument("--host", help="address to listen on (default ZAPOMNI_HTTP_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=_port, help="port to listen on (default ZAPOMNI_HTTP_PORT, 8765)")
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow listening beyond the loopback without TLS (when a proxy in front terminates it)",
    )
    serve.add_argument(
        "--oauth",
        action="store_true",
        help="also be an OAuth 2.1 authorization server, for clients that sign in (ZAPOMNI_OAUTH=true)",
    )


def _port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number, 1-65535 (got {value!r})")
    return int(value)


def log_level(args: argparse.Namespace, settings: Settings) -> str:
    if args.command in LONG_RUNNING or "LOG_LEVEL" in os.environ:
        return settings.log_level
    if args.verbose:
        return VERBOSE_LEVEL
    return MEMORY_COMMAND_LEVEL if hasattr(args, "memory_command") else OPERATOR_COMMAND_LEVEL


# Options whose value may start with "-" (`--expires -5m`): argparse takes such a value for an option and says
# only "expected one argument"; passed on joined (`--expires=-5m`), the value gets its own, clearer refusal.
DASHED_VALUES = frozenset({"--expires"})


def joined_dashed_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in DASHED_VALUES and rest and rest[0].startswith("-") and not rest[0].startswith("--"):
            arg = f"{arg}={rest.pop(0)}"
        out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(joined_dashed_values(sys.argv[1:] if argv is None else argv))
    try:
        settings = Settings()
    except ValidationError as exc:
        sys.exit(describe_settings_error(exc))
    level = log_level(args, settings)
    configure_logging(level)
    settings = settings.model_copy(update={"log_level": level})  # what the command's own loggers follow too
    try:
        sys.exit(_dispatch(args, settings))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (`zapomni list --json | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        return _serve(args, settings)
    if args.command == "console":
        return _console(settings, args.port)
    if hasattr(args, "memory_command"):
        return commands.run(args, settings)
    # An operator command's parser sets `run` (zapomni_ops.cli).
    run: Callable[[argparse.Namespace, Settings], int] = args.run
    try:
        return run(args, settings)
    except ZapomniError as exc:
        print(f"zapomni {args.command}: {exc}", file=sys.stderr)
        return 1


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    # The MCP SDK (and uvicorn) load only for this command.
    if args.http:
        from zapomni_http.serve import run as run_http

        updates: dict[str, object] = {"http_host": args.host, "http_port": args.port}
        updates = {key: value for key, value in updates.items() if value is not None}
        if args.insecure:
            updates["http_insecure"] = True
        if args.oauth:
            updates["oauth"] = True
        return run_http(settings.model_copy(update=updates))
    if args.host is not None or args.port is not None or args.insecure or args.oauth:
        print("zapomni serve: --host, --port, --insecure and --oauth go with --http", file=sys.stderr)
        return 2
    from zapomni_mcp.serve import run

    return run(settings)


def _console(settings: Settings, port: int) -> int:
    from zapomni_http.console import run  # the web stack loads only for this command

    return run(settings, port)
