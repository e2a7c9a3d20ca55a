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


def reading_context(metadata: MemoryMetadata | None, inferred_speaker: str | None = None) -> str | None:
    """`Speaker (8 May 2023)`, `Speaker` or None: what a reader needs before a turn's text.

    A speaker inferred from the text's own `Name:` lead (zapomni_core.memories.turns) is already
    read with the text, so only the date is added: `(8 May 2023)`.
    """
    if metadata is None or (metadata.speaker is None and inferred_speaker is None):
        return None
    date = _day(metadata.date) if metadata.date else None
    if metadata.speaker is None:
        return f"({date})" if date else None
    return f"{metadata.speaker} ({date})" if date else metadata.speaker


def _day(iso: str) -> str:
    parsed = parse_iso8601(iso)
    return f"{parsed.day} {parsed:%B %Y}"


def indexed_text(context: str | None, text: str) -> str:
    """The text that is embedded and counted for the keyword index."""
    return f"{context}: {text}" if context else text
