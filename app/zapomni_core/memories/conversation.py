"""How a conversation turn is read: who said it and when, and the turns said before it.

A turn such as "I went to the support group yesterday" means little alone. An agent that stores
one turn per memory passes `speaker`, `date` and `thread` in its metadata, and the turn is then
embedded and keyword-indexed as `Caroline (8 May 2023): I went to ...`, while the memory's text
stays what was stored. The keyword leg also reads each turn of a thread together with the turns
before it (`zapomni_core.search.bm25`), computed at query time so that deleting or editing a turn
leaves nothing of it in its neighbours. Measured on LoCoMo (bench/conversations.py):
docs/decisions/0015-conversational-recall.md.
"""

from __future__ import annotations

from zapomni_core.memories.requests import MemoryMetadata
from zapomni_core.validation import parse_iso8601

# Turns before a turn, in its thread, that its keyword document includes.
THREAD_WINDOW = 2


def reading_context(metadata: MemoryMetadata | None) -> str | None:
    """`Speaker (8 May 2023)`, `Speaker` or None: what a reader needs before a turn's text."""
    if metadata is None or metadata.speaker is None:
        return None
    if metadata.date is None:
        return metadata.speaker
    date = parse_iso8601(metadata.date)
    return f"{metadata.speaker} ({date.day} {date:%B %Y})"


def indexed_text(context: str | None, text: str) -> str:
    """The text that is embedded and counted for the keyword index."""
    return f"{context}: {text}" if context else text
