"""The `zapomni` command's entry point: for `serve`, the embedded database is started before anything heavy loads.

Only the stdio server, started as MCP clients start it (`zapomni serve`, perhaps `-v`): a client waits for its first
answer. `serve --http` checks its address, TLS and tokens first, and a refused one must have started nothing.
Everything else is `zapomni_cli.main`; this module imports only the settings and the logging until it hands over.
"""

from __future__ import annotations

import sys

from pydantic import ValidationError

from zapomni_core import Settings, configure_logging, start_database_early


def main() -> None:
    argv = sys.argv[1:]
    if _serves(argv):
        _start_database(argv)
    from zapomni_cli.main import main as run  # the parser, the commands, the engine: 1.1 s of imports

    run(argv)


def _serves(argv: list[str]) -> bool:
    return argv[:1] == ["serve"] and set(argv[1:]) <= {"-v", "--verbose"}


def _start_database(argv: list[str]) -> None:
    try:
        settings = Settings()
    except ValidationError:
        return  # `zapomni_cli.main` says what is wrong
    configure_logging(settings.log_level)  # the opening logs, and structlog's default writes to stdout
    start_database_early(settings)
