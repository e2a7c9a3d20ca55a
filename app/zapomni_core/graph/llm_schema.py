"""What the extraction LLM is asked, and the JSON schema its answer is held to.

Ollama's structured outputs (`"format": <JSON schema>`) constrain decoding to the schema, so a
compliant server cannot answer with prose or an unknown type. We still validate every item
(llm_extractor.py): older servers ignore the schema, `num_predict` can cut an answer off, and the
schema cannot say "the subject must be one of the entities you listed".

One prompt serves one chunk or a batch of small ones: chunks are numbered and the answer holds
one item per chunk number, so a batch never mixes up whose entity is whose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zapomni_core.graph.extraction import ENTITY_TYPES, RELATION_TYPES

# CO_OCCURS means "no typed evidence": the graph builder derives it, an LLM never states it.
LLM_RELATION_TYPES: tuple[str, ...] = tuple(t for t in RELATION_TYPES if t != "CO_OCCURS")

# Property order matters: Ollama generates properties in schema order. A relation starts with its
# evidence, so the model copies the sentence first and then reads the triple off what it copied;
# entities come before relations so relations can only point back at names already written.
_ENTITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", "enum": list(ENTITY_TYPES)},
        "description": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["name", "type", "description", "confidence"],
}
_RELATION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "evidence": {"type": "string"},
        "subject": {"type": "string"},
        "predicate": {"type": "string"},
        "object": {"type": "string"},
        "type": {"type": "string", "enum": list(LLM_RELATION_TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["evidence", "subject", "predicate", "object", "type", "confidence"],
}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "chunk": {"type": "integer"},
                    "entities": {"type": "array", "items": _ENTITY},
                    "relations": {"type": "array", "items": _RELATION},
                },
                "required": ["chunk", "entities", "relations"],
            },
        }
    },
    "required": ["chunks"],
}

# One line per relation type: small models pick types by these glosses, not by the names alone.
_RELATION_GLOSSES = {
    "IS_A": "subject is a kind or an instance of object",
    "PART_OF": "subject is a component or section of object",
    "USES": "subject uses object (a tool, library, service, method)",
    "DEPENDS_ON": "subject needs object to work",
    "CREATED": "subject made, founded, wrote or built object",
    "OWNS": "subject owns or maintains object",
    "WORKS_FOR": "a person works for or at an organisation",
    "MEMBER_OF": "subject belongs to a group, team or organisation",
    "LIVES_IN": "a person lives in, or moved to, a place",
    "LOCATED_IN": "something that is not a person is in a place",
    "FAMILY_OF": "two people are family",
    "KNOWS": "two people know each other",
    "LIKES": "subject likes or prefers object",
    "CAUSES": "subject causes or leads to object",
    "HAPPENED_ON": "an event happened on a date",
    "OTHER": "any other relation the text states; put its verb in predicate",
}
assert set(_RELATION_GLOSSES) == set(LLM_RELATION_TYPES), "every relation type needs a gloss"

SYSTEM_PROMPT = f"""You extract a knowledge graph from numbered text chunks. Answer with JSON only.

For each chunk give:
- entities: the people, organisations, places, products, events, works, dates, groups, languages, \
laws, named concepts and code identifiers the chunk names.
  name: exactly as written in the chunk. type: one of {", ".join(ENTITY_TYPES)} \
(GROUP = nationalities, religious or political groups; IDENTIFIER = a name from code). \
description: a few words from the chunk saying what it is. confidence: 0 to 1.
- relations the chunk states between two of its entities.
  evidence: the sentence or clause that states it, copied character for character from the chunk.
  subject, object: names from your entities list. predicate: the verb as written ("moved to").
  type: one of
{chr(10).join(f"    {name}: {gloss}" for name, gloss in _RELATION_GLOSSES.items())}
  confidence: 0 to 1.

Rules:
- Only what the text states: no outside knowledge, no guesses.
- Every relation's subject and object must be in that chunk's entities.
- Direction matters: the subject does the predicate to the object.
- Resolve "he", "it", "the company" to the entity meant, but copy evidence verbatim.
- Skip vague words (the user, the system, something).
- Answer every chunk by its number; a chunk with nothing to extract gets empty lists."""

_INSTRUCTION = (
    "Extract the entities and relations of each chunk below. "
    'Answer {"chunks": [...]} with one item per chunk, "chunk" set to its number.'
)
# Appended when the previous answer was not JSON: temperature 0 would otherwise repeat it exactly.
RETRY_REMINDER = "Your previous answer was not valid JSON. Answer with one JSON object only: no prose, no code fences."


def user_message(texts: Sequence[str], *, reminder: bool = False) -> str:
    """The chunks, numbered from 1, each between `<chunk id="N">` and `</chunk>` lines."""
    parts = [_INSTRUCTION, ""]
    for number, text in enumerate(texts, 1):
        parts += [f'<chunk id="{number}">', text, "</chunk>", ""]
    if reminder:
        parts.append(RETRY_REMINDER)
    return "\n".join(parts).rstrip("\n")


def messages(texts: Sequence[str], *, reminder: bool = False) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_message(texts, reminder=reminder)},
    ]
