"""What `UpdateLinks` takes and returns: a link from an older memory to the newer one that replaced it."""

from __future__ import annotations

from dataclasses import dataclass

# A link the client made (add_memory or update_memory `replaces`): its attribute and method, kept through changes.
STATED = "stated"


@dataclass(frozen=True)
class LinkRow:
    """`older` is superseded by `newer`: what was found, how sure, and why."""

    older: str
    newer: str
    confidence: float
    attribute: str  # what changed: home, work, phone, ...
    subject: str  # whose: a speaker, a name, "self" for the workspace's owner
    cues: tuple[str, ...]  # the words in the newer memory that say it changed
    evidence: str  # the newer memory's sentence that states the change
    method: str = "rules"  # rules, STATED, or imported (a link carried over by an import)


@dataclass(frozen=True)
class StoredLink:
    link: LinkRow
    linked_at: float
    older_date: str | None
    older_created_at: float
    newer_date: str | None
    newer_created_at: float
    newer_head: str  # the start of the newer memory's text
    older_head: str
