"""`python -m zapomni_mcp` runs the stdio server, like `zapomni serve` (without the command line around it)."""

import asyncio
import sys

from pydantic import ValidationError

from zapomni_core import Settings, ZapomniError
from zapomni_core.logs import configure_logging
from zapomni_mcp.serve import serve


def main() -> int:
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"zapomni: invalid configuration in the environment:\n{exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)  # before anything logs: structlog's default writes to stdout
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        pass
    except ZapomniError as exc:
        print(f"zapomni: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
