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

from zapomni_core.transfer.sources import chatgpt, claude_export, markdown_vault, reference_memory
from zapomni_core.transfer.sources.lines import IMPORT_TAG, Conversion, LineWriter, ReadOptions


@dataclass(frozen=True)
class SourceFormat:
    name: str
    reads: str  # what PATH is, for the command's help
    read: Callable[[Path, LineWriter, ReadOptions], None]


_EXPORT_FILES = "its zip, folder or conversations.json"
IMPORT_FORMATS: dict[str, SourceFormat] = {
    f.name: f
    for f in (
        SourceFormat(reference_memory.NAME, "the reference MCP memory server's memory.jsonl", reference_memory.read),
        SourceFormat(
            markdown_vault.NAME, "a folder of Markdown notes (Basic Memory, Obsidian) or one note", markdown_vault.read
        ),
        SourceFormat(chatgpt.NAME, "a ChatGPT data export (its zip, folder or conversations.json)", chatgpt.read),
        SourceFormat(
            claude_export.NAME, "a Claude data export (its zip, folder or conversations.json)", claude_export.read
        ),
    )
}

__all__ = ["IMPORT_FORMATS", "IMPORT_TAG", "Conversion", "LineWriter", "ReadOptions", "SourceFormat"]
