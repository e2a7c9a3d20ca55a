"""The reference MCP memory server's knowledge graph: the `memory.jsonl` of @modelcontextprotocol/server-memory.

Each line is an entity (`name`, `entityType`, `observations`) or a relation (`from`, `to`, `relationType`); the
server keeps no times and no ids beyond the names. Imported as Zapomni's graph holds such things:

- each observation is a memory, "<entity> — <observation>", mentioning its entity;
- each relation is a memory, "<from> <relation type> <to>", the evidence of the relation (method `imported`);
- an entity with neither gets a memory "<name> (<type>)", so it has a place in the graph.

Types are read as the LLM extractor reads a model's (zapomni_core.graph.vocabulary): "organization" is ORG,
"works_at" WORKS_FOR; what has no Zapomni type is OTHER, its own words kept (the entity's description, the
relation's predicate). Ids come from the names and the texts, so a second import adds only what is new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapomni_core.graph.vocabulary import entity_type_of, relation_type_of
from zapomni_core.transfer.format import TransferError
from zapomni_core.transfer.sources.lines import LineWriter, Placed, ReadOptions

NAME = "mcp-memory"
_ENTITY_FIELDS = frozenset({"type", "name", "entityType", "observations"})
_RELATION_FIELDS = frozenset({"type", "from", "to", "relationType"})


@dataclass
class _Entity:
    name: str
    entity_type: str
    observations: list[str]
    mentions: list[str] = field(default_factory=list)  # chunk ids


@dataclass(frozen=True)
class _Relation:
    subject: str
    relation_type: str
    target: str


def read(path: Path, out: LineWriter, _options: ReadOptions) -> None:
    entities, relations = _parse(path, out)
    source = str(path)
    for entity in entities.values():
        for observation in dict.fromkeys(entity.observations):
            placed = out.memory(
                f"entity:{entity.name}:observation:{observation}", f"{entity.name} — {observation}", when=None,
                source=source,
            )  # fmt: skip
            if placed is not None:
                entity.mentions.extend(placed.chunk_ids)
    stated: list[tuple[_Relation, Placed, str]] = []
    for relation in dict.fromkeys(relations):
        words = " ".join(relation.relation_type.replace("_", " ").split())
        text = f"{relation.subject} {words} {relation.target}"
        placed = out.memory(
            f"relation:{relation.subject}:{relation.relation_type}:{relation.target}", text, when=None, source=source
        )
        if placed is None:
            continue
        for name in (relation.subject, relation.target):
            if name not in entities:  # the server lets a relation name an entity never created
                out.note("relation ends that are no entity, imported as entities of type OTHER")
                entities[name] = _Entity(name, "", [])
            entities[name].mentions.append(placed.chunk_ids[0])
        stated.append((relation, placed, text))
    for entity in entities.values():
        if not entity.mentions:
            what = f"{entity.name} ({entity.entity_type})" if entity.entity_type else entity.name
            placed = out.memory(f"entity:{entity.name}", what, when=None, source=source)
            if placed is not None:
                entity.mentions.extend(placed.chunk_ids)
    keys: dict[str, str | None] = {}
    for entity in entities.values():
        entity_type, reading = entity_type_of(entity.entity_type)
        if reading:
            out.note(f"entity {reading}")
        description = entity.entity_type if entity_type == "OTHER" and entity.entity_type else None
        keys[entity.name] = out.entity(entity.name, entity_type, entity.mentions, description=description)
    for relation, placed, text in stated:
        subject, target = keys.get(relation.subject), keys.get(relation.target)
        if subject is None or target is None:
            continue
        words = " ".join(relation.relation_type.replace("_", " ").split()).lower()
        relation_type, predicate, reading = relation_type_of(relation.relation_type, words)
        if reading:
            out.note(f"relation {reading}")
        out.relation(subject, relation_type, predicate, target, placed, text)
    if out.conversion.items:
        out.note("no times in this format: memories are dated when imported")


def _parse(path: Path, out: LineWriter) -> tuple[dict[str, _Entity], list[_Relation]]:
    """Every line checked first, as the server reads them: blank lines skipped, other types ignored."""
    entities: dict[str, _Entity] = {}
    relations: list[_Relation] = []
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TransferError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = f"{path}: line {number}"
            try:
                item = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise TransferError(f"{where}: not valid JSON ({exc}); nothing was imported") from None
            if not isinstance(item, dict):
                raise TransferError(f"{where}: not a JSON object; nothing was imported")
            kind = item.get("type")
            if kind == "entity":
                entity = _entity(item, where)
                if entity.name in entities:  # the server never writes two; a hand-edited file may
                    entities[entity.name].observations.extend(entity.observations)
                else:
                    entities[entity.name] = entity
                _unknown(item, _ENTITY_FIELDS, out)
            elif kind == "relation":
                relations.append(
                    _Relation(_text(item, "from", where), _text(item, "relationType", where), _text(item, "to", where))
                )
                _unknown(item, _RELATION_FIELDS, out)
            else:
                out.skip(f"lines of type {kind!r} (the memory server reads only entity and relation lines)")
    if not entities and not relations:
        raise TransferError(f"{path}: no entity or relation lines: not a memory server's memory.jsonl")
    return entities, relations


def _entity(item: dict[str, Any], where: str) -> _Entity:
    observations = item.get("observations", [])
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        raise TransferError(f"{where}: observations: must be a list of strings; nothing was imported")
    return _Entity(_text(item, "name", where), _text(item, "entityType", where, empty=True), observations)


def _text(item: dict[str, Any], key: str, where: str, *, empty: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise TransferError(f"{where}: {key}: must be a non-empty string (got {value!r:.50}); nothing was imported")
    return value.strip()


def _unknown(item: dict[str, Any], known: frozenset[str], out: LineWriter) -> None:
    for key in sorted(item.keys() - known):
        out.note(f"field {key!r} (not the memory server's) ignored")
