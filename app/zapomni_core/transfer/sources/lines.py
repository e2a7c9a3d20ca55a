"""What every importer from another tool writes: its memories, entities and relations as the lines of a Zapomni
export (zapomni_core.transfer.format), with stable ids and the provenance each memory keeps.

An importer reads its tool's files and calls `memory`, `entity` and `relation` here; the lines go to a temporary
file that the export's own import then validates and writes. So a foreign file gets the same guarantees as an
export: nothing is written until the whole of it has been read, and a memory already stored is skipped.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO

from zapomni_core.content.metadata import MAX_METADATA_BYTES, MAX_TAG_CHARS, MAX_TAGS, MAX_TEXT_BYTES
from zapomni_core.graph.merge import entity_key
from zapomni_core.transfer.format import (
    FORMAT_VERSION,
    HEADER_TYPE,
    ChunkLine,
    EmbedderInfo,
    EndLine,
    EntityLine,
    HeaderLine,
    MemoryLine,
    MentionLine,
    RelationLine,
)

# Ids are uuid5 in this namespace of the source system, the workspace and the source's own id: a second import of
# the same thing gets the same ids, and the import skips what it already stored.
_NAMESPACE = uuid.UUID("5f0c6f4e-9d2a-4e61-8f3b-2b7c1f0a9e55")
# A memory imported from another tool is tagged `imported:<format>`: one import can be listed (list_memories) or
# removed (delete_memory) with that filter.
IMPORT_TAG = "imported:{}"
SAMPLE_SIZE = 3
MetadataExtra = dict[str, str | int | float | bool]
_SAMPLE_CHARS = 200


def stable_id(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


@dataclass(frozen=True)
class ReadOptions:
    """What a person tells an import that the files do not say."""

    user_name: str | None = None  # who "user"/"human" is in a chat export


@dataclass(frozen=True)
class Placed:
    """A memory written to the lines: its id and its chunks' ids (what entity mentions and relations name)."""

    memory_id: str
    chunk_ids: list[str]
    pieces: list[str]  # the chunks' texts

    def chunk_with(self, needle: str) -> str:
        """The id of the first chunk whose text holds `needle`, else of the first chunk."""
        return next((cid for piece, cid in zip(self.pieces, self.chunk_ids, strict=True) if needle in piece),
                    self.chunk_ids[0])  # fmt: skip


@dataclass
class Conversion:
    """What an importer read, and what it left out and why (each reason counted)."""

    format: str
    items: int = 0  # memories written to the lines
    # Counts by reason (plain dicts: dataclasses.asdict would rebuild a Counter from its items, counting pairs).
    skipped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)  # read, but not as written (an unknown type as OTHER, ...)
    sample: list[dict[str, str]] = field(default_factory=list)


class LineWriter:
    """Writes an import's lines to `out` (binary, UTF-8 JSONL): memories first, then the graph's lines."""

    def __init__(
        self,
        out: IO[bytes],
        *,
        format: str,
        workspace: str,
        embedder: EmbedderInfo,
        pieces: Callable[[str], Sequence[str]],
    ) -> None:
        self._out = out
        self._workspace = workspace
        self._pieces = pieces
        self.conversion = Conversion(format)
        self._chunks = 0
        self._written: set[str] = set()  # memory ids: one line each (the import refuses an id twice)
        self._entities: dict[str, EntityLine] = {}
        self._relations: list[RelationLine] = []
        header = HeaderLine.model_validate(
            {
                "type": HEADER_TYPE,
                "format_version": FORMAT_VERSION,
                "exported_at": datetime.now(UTC).isoformat(),
                "zapomni_version": "import",
                "embedder": {"model": embedder.model, "dimension": embedder.dimension},
                "graph_name": "import",
                "schema_version": 0,
            }
        )
        self._write(header.model_dump_json())

    @property
    def tag(self) -> str:
        return IMPORT_TAG.format(self.conversion.format)

    def skip(self, reason: str, count: int = 1) -> None:
        self.conversion.skipped[reason] = self.conversion.skipped.get(reason, 0) + count

    def note(self, what: str) -> None:
        self.conversion.notes[what] = self.conversion.notes.get(what, 0) + 1

    def memory(
        self,
        original_id: str,
        text: str,
        *,
        when: datetime | None,
        source: str | None = None,
        tags: Sequence[str] = (),
        speaker: str | None = None,
        thread: str | None = None,
        extra: MetadataExtra | None = None,
    ) -> Placed | None:
        """A memory with the provenance every import keeps: the source system, its id there, its time there; None
        (counted as skipped) for a text with nothing in it or too long for a memory."""
        if not text.strip():
            self.skip("empty text")
            return None
        if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
            self.skip(f"text over {MAX_TEXT_BYTES // 1024 // 1024} MB")
            return None
        kept = [tag for tag in tags if 0 < len(tag) <= MAX_TAG_CHARS]
        if len(kept) < len(tags):
            self.note(f"tags longer than {MAX_TAG_CHARS} characters left out")
        memory_id = stable_id(self.conversion.format, self._workspace, original_id)
        if memory_id in self._written:
            self.skip("items the source holds twice (same id)")
            return None
        self._written.add(memory_id)
        pieces = list(self._pieces(text)) or [text]
        chunk_ids = [stable_id(memory_id, str(index)) for index in range(len(pieces))]
        metadata: MetadataExtra = {"imported_from": self.conversion.format, "original_id": original_id[:500]}
        kept_extra = {k: v for k, v in (extra or {}).items() if not (isinstance(v, float) and not math.isfinite(v))}
        if len(json.dumps(kept_extra)) > MAX_METADATA_BYTES // 2:
            self.note("metadata over 5 KB left out")
            kept_extra = {}
        metadata = kept_extra | metadata
        if speaker:
            metadata["speaker"] = speaker[:200]
        if thread:
            metadata["thread"] = thread[:200]
        line = MemoryLine(
            type="memory",
            id=memory_id,
            workspace=self._workspace,
            text=text,
            created_at=(when or datetime.now(UTC)).isoformat(),
            tags=list(dict.fromkeys([self.tag, *kept]))[:MAX_TAGS],
            source=source[:500] if source else None,
            date=when.isoformat() if when else None,
            metadata=metadata,
            chunks=[ChunkLine(id=i, index=n, text=p) for n, (i, p) in enumerate(zip(chunk_ids, pieces, strict=True))],
        )
        self._write(line.model_dump_json(exclude_none=True, exclude_defaults=True))
        self._chunks += len(pieces)
        self.conversion.items += 1
        if len(self.conversion.sample) < SAMPLE_SIZE:
            shown = {"text": text[:_SAMPLE_CHARS], "source": source or "", "date": line.date or ""}
            self.conversion.sample.append(shown | ({"speaker": speaker} if speaker else {}))
        return Placed(memory_id, chunk_ids, pieces)

    def entity(
        self, name: str, entity_type: str, mentions: Sequence[str], *, description: str | None = None
    ) -> str | None:
        """An entity mentioned by these chunks (of memories written above); its key, None for a name that is
        empty once normalised. Two names with one key are one entity, the second an alias of the first."""
        try:
            key = entity_key(name, entity_type)
        except ValueError:
            self.skip("entity name empty once normalised")
            return None
        known = self._entities.get(key)
        if known is None:
            self._entities[key] = EntityLine(
                type="entity",
                workspace=self._workspace,
                key=key,
                id=stable_id("entity", self._workspace, key),
                name=name,
                entity_type=entity_type,
                description=description,
                confidence=1.0,
                mentions=[MentionLine(chunk_id=c, count=1, confidence=1.0) for c in dict.fromkeys(mentions)],
            )
            return key
        self._mention(known, mentions)
        if name != known.name and name not in known.aliases:
            known.aliases.append(name)
        return key

    def mention(self, key: str, chunk_id: str) -> None:
        """Entity `key` is mentioned by this chunk too (a relation's chunk must mention both its ends)."""
        self._mention(self._entities[key], [chunk_id])

    @staticmethod
    def _mention(entity: EntityLine, chunk_ids: Sequence[str]) -> None:
        seen = {m.chunk_id for m in entity.mentions}
        fresh = dict.fromkeys(c for c in chunk_ids if c not in seen)
        entity.mentions.extend(MentionLine(chunk_id=c, count=1, confidence=1.0) for c in fresh)

    def relation(
        self,
        subject: str,
        relation_type: str,
        predicate: str,
        target: str,
        evidence: Placed,
        text: str,
        *,
        chunk_id: str | None = None,
    ) -> None:
        """A relation between two entity keys, with the memory (and its chunk) that states it as its evidence."""
        self._relations.append(
            RelationLine(
                type="relation",
                workspace=self._workspace,
                id=stable_id("relation", self._workspace, subject, relation_type, predicate, target),
                subject=subject,
                object=target,
                relation_type=relation_type,
                predicate=predicate,
                strength=1.0,
                evidence=text[:500],
                method="imported",
                memory_id=evidence.memory_id,
                chunk_id=chunk_id or evidence.chunk_ids[0],
            )
        )

    def finish(self) -> Conversion:
        """The graph's lines (after every memory they name) and the end line."""
        for entity in self._entities.values():
            self._write(entity.model_dump_json(exclude_none=True))
        relations = list({r.id: r for r in self._relations}.values())  # a relation stated twice is one
        for relation in relations:
            self._write(relation.model_dump_json(exclude_none=True))
        end = EndLine(
            type="end",
            memories=self.conversion.items,
            chunks=self._chunks,
            entities=len(self._entities),
            relations=len(relations),
        )
        self._write(end.model_dump_json())
        self._out.flush()
        return self.conversion

    def _write(self, line: str) -> None:
        self._out.write(line.encode("utf-8") + b"\n")
