"""How a conversation turn is read: who said it and when, and the turns said before it.

A turn such as "I went to the support group yesterday" means little alone. An agent that stores
one turn per memory passes `speaker`, `date` and `thread` in its metadata, and the turn is then
embedded and keyword-indexed as `Caroline (8 May 2023): I went to ...`, while the memory's text
stays what was stored. The keyword leg also reads each turn of a thread together with the turns
before it (`zapomni_core.search.keyword_index`); deleting or editing a turn indexes the turns after it
again, so nothing of it stays in its neighbours. Measured on LoCoMo (bench/conversations.py):
docs/decisions/0015-conversational-recall.md.
"""

from __future__ import annotations

from zapomni_core.content.metadata import MemoryMetadata
from zapomni_core.validation import parse_iso8601

# Turns before a turn, in its thread, that its keyword document includes.
THREAD_WINDOW = 2


def reading_context(metadata: MemoryMetadata | None, inferred_speaker: str | None = None) -> str | None:
    """`Speaker (8 May 2023)`, `Speaker` or None: what a reader needs before a turn's text.

    The speaker is the one given, else the one inferred from the text's `Name:` lead
    (zapomni_core.content.turns).
    """
    speaker = (metadata.speaker if metadata else None) or inferred_speaker
    if speaker is None:
        return None
    return f"{speaker} ({_day(metadata.date)})" if metadata and metadata.date else speaker


def _day(iso: str) -> str:
    parsed = parse_iso8601(iso)
    return f"{parsed.day} {parsed:%B %Y}"


def indexed_text(context: str | None, text: str) -> str:
    """The text that is embedded and counted for the keyword index.

    A text that already opens with its speaker's name (`Caroline: ...`) is not read with the name
    twice: `Caroline (8 May 2023): ...`, as a turn stored with metadata is.
    """
    if not context:
        return text
    speaker = context.rsplit(" (", 1)[0] if context.endswith(")") else context
    lead = f"{speaker}:"
    return f"{context}: {text.removeprefix(lead).lstrip()}" if text.startswith(lead) else f"{context}: {text}"
