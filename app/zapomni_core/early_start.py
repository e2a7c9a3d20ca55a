"""The embedded database started before the engine is loaded: what `zapomni serve` does first.

Loading the engine, the MCP SDK and the drivers takes 1.8 s of one core; FalkorDB decoding a large store takes
seconds more on the other (a million chunks: 8-12 s, decision 0045). Started first, the two overlap, and the first
answer comes that much sooner. This module stays light: it is imported before the rest.
"""

from __future__ import annotations

from zapomni_core.settings import Settings
from zapomni_db import open_early


def start_database_early(settings: Settings) -> None:
    """Begin opening the embedded database (nothing for a database server); `open_core` takes it over."""
    if settings.db_mode == "embedded":
        open_early(settings.data_dir, appendfsync=settings.appendfsync)
