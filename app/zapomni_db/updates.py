"""Which memory replaced which: `(older:Memory)-[:SUPERSEDED_BY]->(newer:Memory)` edges, and the links a user undid.

A link lives on an edge, so a delete of either memory (DETACH DELETE) takes it along and the older memory is
current again; a workspace's links go with its graph. A link a user undid becomes a `NOT_SUPERSEDED_BY` edge,
which no later detection overrides. Both memories of a link are in the same graph (workspace) by construction.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from zapomni_db._cypher import at_numbers
from zapomni_db.client import GraphClient
from zapomni_db.records.updates import STATED, LinkRow, StoredLink

# A link is made once, never where the user undid it, and never against one made the other way.
_LINK = (
    "UNWIND $links AS l MATCH (o:Memory {id: l.older}) MATCH (n:Memory {id: l.newer}) "
    "WITH o, n, l WHERE NOT (o)-[:SUPERSEDED_BY]->(n) AND NOT (o)-[:NOT_SUPERSEDED_BY]->(n) "
    "AND NOT (n)-[:SUPERSEDED_BY]->(o) "
    "CREATE (o)-[:SUPERSEDED_BY {confidence: l.confidence, attribute: l.attribute, subject: l.subject, "
    "cues: l.cues, evidence: l.evidence, method: l.method, linked_at: $now}]->(n) RETURN count(n)"
)
_FIELDS = (
    "o.id, n.id, r.confidence, r.attribute, r.subject, r.cues, r.evidence, r.method, r.linked_at, "
    "o.date, o.created_at, n.date, n.created_at, coalesce(n.head, n.text), coalesce(o.head, o.text)"
)
# Each side from the id index, one lookup per id: `WHERE o.id IN $ids` beside an edge pattern scanned every memory
# (22 ms a search at 10K memories).
_LINKS_OF = (
    f"UNWIND $ids AS mid MATCH (o:Memory {{id: mid}})-[r:SUPERSEDED_BY]->(n:Memory) RETURN {_FIELDS} "
    f"UNION UNWIND $ids AS mid MATCH (n:Memory {{id: mid}})<-[r:SUPERSEDED_BY]-(o:Memory) RETURN {_FIELDS}"
)
# The same by the memories' node numbers, read by the same request (`MemoryInfo.node`): no index needed, so as
# fast while the indexes are built after a load, where each lookup above scans every memory (seconds at 1M).
_LINKS_AT = (
    f"{at_numbers('o', 'Memory')} MATCH (o)-[r:SUPERSEDED_BY]->(n:Memory) RETURN {_FIELDS} "
    f"UNION {at_numbers('n', 'Memory')} MATCH (n)<-[r:SUPERSEDED_BY]-(o:Memory) RETURN {_FIELDS}"
)
_UNDO = (
    "MATCH (o:Memory {id: $older}) MATCH (n:Memory {id: $newer}) "
    "OPTIONAL MATCH (o)-[r:SUPERSEDED_BY]->(n) WITH o, n, r, r IS NOT NULL AS existed DELETE r "
    "MERGE (o)-[u:NOT_SUPERSEDED_BY]->(n) ON CREATE SET u.at = $now RETURN existed"
)
# What the rules found; a link the client stated stays.
_FORGET = (
    "MATCH (m:Memory {id: $id}) OPTIONAL MATCH (m)-[r:SUPERSEDED_BY]-(:Memory) WHERE coalesce(r.method, '') <> $stated "
    "WITH collect(r) AS rs FOREACH (r IN rs | DELETE r) RETURN size(rs)"
)
# The client's word replaces whatever was there: a "no" it said before, a link the other way, a rule's link.
_STATE = (
    "MATCH (o:Memory {id: $older}) MATCH (n:Memory {id: $newer}) "
    "OPTIONAL MATCH (o)-[u:NOT_SUPERSEDED_BY]->(n) DELETE u "
    "WITH DISTINCT o, n OPTIONAL MATCH (n)-[b:SUPERSEDED_BY]->(o) DELETE b "
    "WITH DISTINCT o, n MERGE (o)-[r:SUPERSEDED_BY]->(n) "
    "SET r.confidence = 1.0, r.attribute = $stated, r.subject = '?', r.cues = [], r.evidence = $evidence, "
    "r.method = $stated, r.linked_at = $now RETURN count(r)"
)
_COUNT = "MATCH (:Memory)-[r:SUPERSEDED_BY]->(:Memory) RETURN count(r)"
_ALL = f"MATCH (o:Memory)-[r:SUPERSEDED_BY]->(n:Memory) RETURN {_FIELDS} ORDER BY o.id, n.id SKIP $skip LIMIT $limit"


class UpdateLinks:
    """The links between a workspace's memories that say one replaced another."""

    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def link(self, links: Sequence[LinkRow]) -> int:
        """Store `links` (those not already there, nor undone by a user); how many were made."""
        if not links:
            return 0
        rows = await self._client.query(_LINK, {"links": [_link_param(link) for link in links], "now": time.time()})
        return int(rows[0][0]) if rows else 0

    async def of(self, memory_ids: Sequence[str], nodes: Sequence[int | None] | None = None) -> list[StoredLink]:
        """Every link with one of `memory_ids` on either side.

        `nodes`: the memories' node numbers as this request read them (`MemoryInfo.node`; a memory deleted since
        has no links), used when every one is known."""
        if not memory_ids:
            return []
        ids = list(dict.fromkeys(memory_ids))
        known = [node for node in nodes or () if node is not None]
        if nodes is not None and len(known) == len(nodes):
            rows = await self._client.ro_query(_LINKS_AT, {"ids": ids, "nodes": list(dict.fromkeys(known))})
        else:
            rows = await self._client.ro_query(_LINKS_OF, {"ids": ids})
        return [_stored(row) for row in rows]

    async def undo(self, older: str, newer: str) -> bool | None:
        """Remove the link and remember that the user said no; whether it existed, None when either memory does
        not exist."""
        rows = await self._client.query(_UNDO, {"older": older, "newer": newer, "now": time.time()})
        return bool(rows[0][0]) if rows else None

    async def state(self, older: str, newer: str, evidence: str) -> bool:
        """Link `older` as replaced by `newer` because the client said so (`STATED`), whatever was linked or undone
        between them before; False when either memory does not exist."""
        params = {"older": older, "newer": newer, "evidence": evidence, "stated": STATED, "now": time.time()}
        rows = await self._client.query(_STATE, params)
        return bool(rows and rows[0][0])

    async def forget(self, memory_id: str) -> int:
        """Drop the links the rules found on either side of a memory (its text changed: they are found again);
        undone links stay undone, and stated links stay."""
        rows = await self._client.query(_FORGET, {"id": memory_id, "stated": STATED})
        return int(rows[0][0]) if rows else 0

    async def count(self) -> int:
        rows = await self._client.ro_query(_COUNT)
        return int(rows[0][0]) if rows else 0

    async def page(self, skip: int, limit: int) -> list[StoredLink]:
        """All links in a fixed order, a page at a time (an export)."""
        rows = await self._client.ro_query(_ALL, {"skip": skip, "limit": limit})
        return [_stored(row) for row in rows]


def _link_param(link: LinkRow) -> dict[str, Any]:
    return {
        "older": link.older,
        "newer": link.newer,
        "confidence": link.confidence,
        "attribute": link.attribute,
        "subject": link.subject,
        "cues": list(link.cues),
        "evidence": link.evidence,
        "method": link.method,
    }


def _stored(row: list[Any]) -> StoredLink:
    return StoredLink(
        link=LinkRow(
            older=row[0],
            newer=row[1],
            confidence=float(row[2] or 0.0),
            attribute=row[3] or "",
            subject=row[4] or "",
            cues=tuple(row[5] or ()),
            evidence=row[6] or "",
            method=row[7] or "rules",
        ),
        linked_at=float(row[8] or 0.0),
        older_date=row[9],
        older_created_at=float(row[10] or 0.0),
        newer_date=row[11],
        newer_created_at=float(row[12] or 0.0),
        newer_head=row[13] or "",
        older_head=row[14] or "",
    )
