"""Which memory is current: links found when a memory is added or changed, shown on every result, and the order
search gives a memory and the one that replaced it (docs/decisions/0043-knowing-which-fact-is-current.md).

The rules are in `zapomni_core.content.updates`; this reads the candidates they compare (the nearest stored
memories by embedding), stores what they find, and reads it back for results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

import structlog

from zapomni_core.content.updates import Said, find_updates, linkable_text
from zapomni_core.kernel.registry import Workspace
from zapomni_core.memories import replies
from zapomni_core.memories.replies import Linked, LinkedMemory, SearchHit
from zapomni_core.search.keyword import KeywordRetriever
from zapomni_core.search.types import Candidate, Ranked, RetrievalQuery
from zapomni_core.validation import iso, parse_iso8601
from zapomni_db import ChunkHit, GraphStores, LinkRow, MemoryInfo, MemoryRecord, SearchFilter, StoredLink

log = structlog.get_logger(__name__)

# The nearest stored memories an added one is compared with, and how near (cosine) they must be: an update
# restates the same subject and attribute, which puts it among the nearest few (decision 0043).
CANDIDATES = 8
MIN_SIMILARITY = 0.25
# A chat turn's vector is mostly its greeting and its speaker ("Hey Jon! ..."): the turns nearest to it are other
# greetings. For a turn the keyword leg, asked with the sentences that could state a change, also finds the turn
# that spoke of the same internship or agency (decision 0043). A note's vector is its content: no keyword query.
KEYWORD_CANDIDATES = 8
# Bringing the keyword index up to date commits it: once per add, that halved the adds per second of a stream of
# turns (−47 % with detection, 5,520 LoCoMo turns). Candidates come from an index up to a second behind (one
# commit a second) and from the turns written since it last caught up that share a word with the new one (an
# interview and its outcome told one turn after the other), among the last this many changes.
KEYWORD_STALE_OK_S = 1.0
UNREAD_CANDIDATES = 48
# Longer texts are documents, pages, abstracts and files, not facts that replace one another, and the rules compare
# every sentence of one with every sentence of the other: a long text costs the square of its sentences. LoCoMo's
# longest turn is 434 characters (more with a photo's caption), the development set's longest statement 208.
MAX_CHARS = 600
# A question about the past keeps the order of relevance: the old value is what it asks for.
_ASKS_ABOUT_THE_PAST = re.compile(
    r"\b(?:before|previous(?:ly)?|used to|(?<!how )old|older|former(?:ly)?|originally|earlier|prior|past|history|"
    r"first|until|back then|at the time|in (?:19|20)\d\d|did (?:\w+ )?(?:use|live|work|have)|was|were)\b",
    re.IGNORECASE,
)

F = TypeVar("F", bound=Linked)


@dataclass(frozen=True)
class UpdateLinker:
    """Update detection at write time, and the links on results; `enabled` False: no detection (reads still
    show the links already stored)."""

    enabled: bool = True

    async def detect(self, workspace: Workspace, record: MemoryRecord, vector: Sequence[float]) -> int:
        """Link `record` (just stored, embedded as `vector`) with the stored memories it replaces or that replace
        it; how many links were made."""
        if not self.enabled or record.kind != "note":
            return 0
        return await self.link(
            workspace, said(record.id, record.text, record.speaker, record.date, record.created_at), vector
        )

    async def link(self, workspace: Workspace, new: Said, vector: Sequence[float]) -> int:
        """Link the stored memory `new` (a note or turn, embedded as `vector`) with those it replaces or that replace
        it, among its nearest; how many links were made (none that were there already)."""
        topic = linkable_text(new)
        if len(new.text) > MAX_CHARS or not topic:
            return 0
        stores = workspace.stores
        hits = await stores.search.vector_search(
            list(vector), k=CANDIDATES + 1, limit=CANDIDATES + 1, filters=SearchFilter()
        )
        keyword = next((leg for leg in workspace.search.retrievers if isinstance(leg, KeywordRetriever)), None)
        if new.speaker is not None and keyword is not None:  # a turn's vector is mostly its greeting
            hits += await _keyword_hits(keyword, topic, vector)
            hits += await _unread_hits(stores, keyword, topic, vector, {h.memory.id for h in hits} | {new.memory_id})
        hits = list({h.memory.id: h for h in reversed(hits)}.values())  # one per memory, the vector's kept
        older = [
            (said(h.memory.id, h.text, h.memory.speaker, h.memory.date, h.memory.created_at), 1.0 - h.distance)
            for h in hits
            if h.memory.id != new.memory_id and _comparable(h.memory, h.text) and 1.0 - h.distance >= MIN_SIMILARITY
        ]
        found = find_updates(new, older)
        if not found:
            return 0
        # A rule's link and the stored row carry the same fields by the same names (method: "rules", the default).
        made = await stores.updates.link([LinkRow(**asdict(f)) for f in found])
        log.info("memory.updates_linked", memory_id=new.memory_id, links=made)
        return made

    async def annotate(
        self, stores: GraphStores, results: Sequence[F], nodes: Sequence[int | None] | None = None
    ) -> list[F]:
        """`results` with the links of each memory (`superseded_by`, `supersedes`); `nodes`: the memories' node
        numbers as the request read them (`MemoryInfo.node`), which find them without an index."""
        if not results:
            return list(results)
        links = await stores.updates.of([r.memory_id for r in results], nodes)
        return [_with_links(r, links) for r in results]

    async def bring_replacements(
        self,
        stores: GraphStores,
        hits: Sequence[SearchHit],
        query: RetrievalQuery,
        *,
        limit: int,
        min_score: float | None = None,
    ) -> list[SearchHit]:
        """`hits` and, for each replaced hit whose latest replacement the search did not return, that replacement
        (`matched_by` ["update"], the replaced hit's rank score), while there is room under `limit` and unless the
        query asks about the past.

        "What's my usual coffee order?" matches "Usual coffee order: oat flat white" better than "Actually I've gone
        off oat milk. These days it's just a cortado": the current fact must come with it, not only be named. It
        never takes a matched hit's place: that cost LoCoMo's evidence recall@10 0.006, and the replaced hit names
        its replacement anyway (decision 0043)."""
        room = limit - len(hits)
        if not hits or room <= 0 or asks_about_the_past(query.text):
            return list(hits)
        present = {hit.memory_id for hit in hits}
        wanted: dict[str, SearchHit] = {}
        for hit in hits:
            if hit.superseded_by and hit.superseded_by[0].memory_id not in present and len(wanted) < room:
                wanted.setdefault(hit.superseded_by[0].memory_id, hit)
        if not wanted:
            return list(hits)
        found = await stores.search.first_chunks(list(wanted), query.vector, filters=query.filters)
        brought = []
        for chunk in found:
            candidate = Candidate.from_hit(chunk)
            if min_score is not None and candidate.similarity < min_score:
                continue
            ranked = Ranked(candidate, rank_score=wanted[chunk.memory.id].rank_score)
            brought.append(replies.hit(ranked, hits[0].workspace).model_copy(update={"matched_by": ["update"]}))
        return [*hits, *await self.annotate(stores, brought)]


def _comparable(memory: MemoryInfo, text: str) -> bool:
    """A note or turn short enough to state one fact (a chunk of a long text is a piece of a document)."""
    return memory.kind in ("note", "turn") and memory.chunk_count == 1 and len(text) <= MAX_CHARS


async def _unread_hits(
    stores: GraphStores, keyword: KeywordRetriever, topic: str, vector: Sequence[float], seen: set[str]
) -> list[ChunkHit]:
    """The nearest memories not `seen` written since the keyword index last caught up that share an index word
    with `topic`: as many as the index gives (it answers a second behind, KEYWORD_STALE_OK_S)."""
    latest, _pruned = await stores.search.sequence()
    since = max(keyword.caught_up_to, latest - UNREAD_CANDIDATES)
    if latest <= since:
        return []
    words = keyword.terms(topic)
    hits = [
        hit
        for hit in await stores.search.written_between(since, latest, list(vector))
        if hit.memory.id not in seen and _comparable(hit.memory, hit.text) and words & keyword.terms(hit.text)
    ]
    return sorted(hits, key=lambda hit: hit.distance)[:KEYWORD_CANDIDATES]


async def _keyword_hits(keyword: KeywordRetriever, topic: str, vector: Sequence[float]) -> list[ChunkHit]:
    query = RetrievalQuery(text=topic, vector=list(vector), filters=SearchFilter(), stale_ok_s=KEYWORD_STALE_OK_S)
    return [candidate.hit for candidate in await keyword.retrieve(query, KEYWORD_CANDIDATES + 1)]


def asks_about_the_past(query: str) -> bool:
    return _ASKS_ABOUT_THE_PAST.search(query) is not None


def order_current_first(hits: Sequence[F], query: str) -> list[F]:
    """`hits` (in rank order) with each replaced memory moved just below the latest of the hits that replaced it,
    unless the query asks about the past. Nothing is dropped."""
    if asks_about_the_past(query):
        return list(hits)
    position: dict[str, float] = {}
    for i, hit in enumerate(hits):
        position.setdefault(hit.memory_id, float(i))
    newer_of = {hit.memory_id: [s.memory_id for s in hit.superseded_by if s.memory_id in position] for hit in hits}
    for _ in range(len(position)):  # a chain of replacements settles in as many rounds as it is long
        moved = False
        for memory_id, newer in newer_of.items():
            if newer:
                target = max(position[n] for n in newer) + 0.5
                if target > position[memory_id]:
                    position[memory_id] = target
                    moved = True
        if not moved:
            break
    ranked = sorted(enumerate(hits), key=lambda pair: (position[pair[1].memory_id], pair[0]))
    return [hit for _, hit in ranked]


def _with_links(result: F, links: Sequence[StoredLink]) -> F:
    newer = [s for s in links if s.link.older == result.memory_id]
    older = [s for s in links if s.link.newer == result.memory_id]
    if not newer and not older:
        return result
    newer.sort(key=lambda s: (_when(s.newer_date, s.newer_created_at), s.link.newer), reverse=True)
    older.sort(key=lambda s: (_when(s.older_date, s.older_created_at), s.link.older), reverse=True)
    return result.model_copy(
        update={
            "superseded_by": [_linked(s, s.link.newer, s.newer_date, s.newer_created_at, s.newer_head) for s in newer],
            "supersedes": [_linked(s, s.link.older, s.older_date, s.older_created_at, s.older_head) for s in older],
        }
    )


def _linked(stored: StoredLink, memory_id: str, date: str | None, created_at: float, head: str) -> LinkedMemory:
    link = stored.link
    return LinkedMemory(
        memory_id=memory_id,
        date=date or iso(created_at),
        preview=replies.preview(head),
        attribute=link.attribute,
        subject=link.subject,
        cues=list(link.cues),
        confidence=link.confidence,
        evidence=link.evidence,
    )


def _when(date: str | None, created_at: float) -> float:
    return parse_iso8601(date).timestamp() if date else created_at


def said(memory_id: str, text: str, speaker: str | None, date: str | None, created_at: float) -> Said:
    """A stored memory as the rules read it."""
    return Said(memory_id=memory_id, text=text, speaker=speaker, when=_when(date, created_at), added=created_at)
