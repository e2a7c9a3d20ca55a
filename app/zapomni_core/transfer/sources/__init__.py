"""Imports from the tools people use today (`zapomni import --from FORMAT`): each format's reader turns its tool's
files into the lines of a Zapomni export (`lines.LineWriter`), which the export's import validates whole and then
writes (zapomni_core.transfer.importer). What that gives every format: nothing written from a file that cannot be
read to its end; stable ids from the source's own ids or texts, so a second run adds only what is new; every
memory tagged `imported:<format>`, with `imported_from`, `original_id` and the original time as `date`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zapomni_core.transfer.sources import chatgpt, claude_export, markdown_vault, memory_service, reference_memory
from zapomni_core.transfer.sources.lines import IMPORT_TAG, Conversion, LineWriter, ReadOptions


@dataclass(frozen=True)
class SourceFormat:
    name: str
    reads: str  # what PATH is, for the command's help
    read: Callable[[Path, LineWriter, ReadOptions], None]


_EXPORT = "its zip, folder or conversations.json"
# In the order `zapomni import --help` lists them.
IMPORT_FORMATS: dict[str, SourceFormat] = {
    f.name: f
    for f in (
        SourceFormat(reference_memory.NAME, "the reference MCP memory server's memory.jsonl", reference_memory.read),
        SourceFormat(memory_service.NAME, "mcp-memory-service's SQLite database (sqlite_vec.db)", memory_service.read),
        SourceFormat(markdown_vault.NAME, "a folder of Markdown notes (Basic Memory, Obsidian)", markdown_vault.read),
        SourceFormat(chatgpt.NAME, f"a ChatGPT data export ({_EXPORT})", chatgpt.read),
        SourceFormat(claude_export.NAME, f"a Claude data export ({_EXPORT})", claude_export.read),
    )
}

__all__ = ["IMPORT_FORMATS", "IMPORT_TAG", "Conversion", "LineWriter", "ReadOptions", "SourceFormat"]
