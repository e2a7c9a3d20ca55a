"""`python -m zapomni_mcp` runs the stdio server, like `zapomni serve` (without the command line around it)."""

import sys

from pydantic import ValidationError

from zapomni_core import Settings, configure_logging, start_database_early


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"zapomni: invalid configuration in the environment:\n{exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)  # before anything logs: structlog's default writes to stdout
    start_database_early(settings)  # loading meanwhile: the engine, the SDK and the drivers take 1.8 s to import
    from zapomni_mcp.serve import run

    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
