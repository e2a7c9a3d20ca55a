"""The entity and relation types as other tools write them, read as Zapomni's: "organization" is ORG,
"works_at" is WORKS_FOR. Used where types arrive as free text (a local LLM's answer, an imported graph)."""

from __future__ import annotations

from typing import Any

from zapomni_core.graph.extraction import ENTITY_TYPES
from zapomni_core.graph.llm_schema import LLM_RELATION_TYPES

# Synonyms small models use instead of the schema's names. Unknown types still fall back to OTHER.
ENTITY_ALIASES = {
    "PER": "PERSON",
    "PEOPLE": "PERSON",
    "ORGANIZATION": "ORG",
    "ORGANISATION": "ORG",
    "COMPANY": "ORG",
    "INSTITUTION": "ORG",
    "LOCATION": "PLACE",
    "LOC": "PLACE",
    "GPE": "PLACE",
    "FAC": "PLACE",
    "FACILITY": "PLACE",
    "CITY": "PLACE",
    "COUNTRY": "PLACE",
    "NORP": "GROUP",
    "NATIONALITY": "GROUP",
    "TIME": "DATE",
    "YEAR": "DATE",
    "DATETIME": "DATE",
    "SOFTWARE": "PRODUCT",
    "TOOL": "PRODUCT",
    "TECHNOLOGY": "PRODUCT",
    "LIBRARY": "PRODUCT",
    "FRAMEWORK": "PRODUCT",
    "SERVICE": "PRODUCT",
    "DATABASE": "PRODUCT",
    "BOOK": "WORK_OF_ART",
    "FILM": "WORK_OF_ART",
    "MOVIE": "WORK_OF_ART",
    "SONG": "WORK_OF_ART",
    "CODE": "IDENTIFIER",
    "FUNCTION": "IDENTIFIER",
    "VARIABLE": "IDENTIFIER",
    "IDEA": "CONCEPT",
    "TOPIC": "CONCEPT",
}

# Only synonyms with the same direction: "EMPLOYS" or "CREATED_BY" would flip subject and object.
RELATION_ALIASES = {
    "WORKS_AT": "WORKS_FOR",
    "EMPLOYED_BY": "WORKS_FOR",
    "LOCATED_AT": "LOCATED_IN",
    "INSTANCE_OF": "IS_A",
    "TYPE_OF": "IS_A",
    "KIND_OF": "IS_A",
    "IS": "IS_A",
    "FOUNDED": "CREATED",
    "BUILT": "CREATED",
    "WROTE": "CREATED",
    "MOVED_TO": "LIVES_IN",
    "LIVES_AT": "LIVES_IN",
    "RESIDES_IN": "LIVES_IN",
    "REQUIRES": "DEPENDS_ON",
    "MAINTAINS": "OWNS",
    "USE": "USES",
    "USED": "USES",
}


def clean(value: Any) -> str:
    """A field as one line of text: strings trimmed and whitespace collapsed, numbers spelled out."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return ""
    return " ".join(value.split())


def quote(name: str) -> str:
    return repr(name if len(name) <= 60 else name[:57] + "...")


def type_key(text: str) -> str:
    return text.replace("-", "_").replace(" ", "_").upper().strip("_")


def entity_type_of(value: Any) -> tuple[str, str | None]:
    raw = clean(value)
    key = type_key(raw)
    if key in ENTITY_TYPES:
        return key, None  # "person" is PERSON: case and spacing are not worth a problem line
    if key in ENTITY_ALIASES:
        return ENTITY_ALIASES[key], f"type {quote(raw)} read as {ENTITY_ALIASES[key]}"
    if not raw:
        return "OTHER", "type missing, OTHER assumed"
    return "OTHER", f"unknown type {quote(raw)} replaced by OTHER"


def relation_type_of(value: Any, predicate: str) -> tuple[str, str, str | None]:
    """(type, predicate, note). A missing or unknown type is read from the predicate when that is a
    type's name ("lives in"); otherwise OTHER, keeping the model's words as the predicate."""
    raw = clean(value)
    key = type_key(raw)
    if key in LLM_RELATION_TYPES:
        return key, predicate or key, None
    if key in RELATION_ALIASES:
        found = RELATION_ALIASES[key]
        return found, predicate or raw.lower(), f"type {quote(raw)} read as {found}"
    from_predicate = type_key(predicate)
    read = from_predicate if from_predicate in LLM_RELATION_TYPES else RELATION_ALIASES.get(from_predicate)
    what = "type missing" if not raw else f"unknown type {quote(raw)}"
    if read and read != "OTHER":
        return read, predicate, f"{what}, read from the predicate as {read}"
    if not predicate and raw:
        predicate = raw.replace("_", " ").lower()  # the unknown type is the only wording there is
    return "OTHER", predicate or "OTHER", f"{what}, kept as OTHER"
