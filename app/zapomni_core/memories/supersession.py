"""Which memory is current: links found when a memory is added or changed, shown on every result, and the order
search gives a memory and the one that replaced it (docs/decisions/0043-knowing-which-fact-is-current.md).

The rules are in `zapomni_core.content.updates`; this reads the candidates they compare (the nearest stored
memories by embedding), stores what they find, and reads it back for results.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

import structlog

from zapomni_core.content.updates import Said, UpdateLink, activities, find_updates, linkable_text, terse_fact
from zapomni_core.kernel.registry import Workspace
from zapomni_core.memories import replies
from zapomni_core.memories.replies import Linked, LinkedMemory, SearchHit
from zapomni_core.search.keyword import KeywordRetriever
from zapomni_core.search.keyword_index import KeywordHit
from zapomni_core.search.types import Candidate, LegUnavailable, Ranked, RetrievalQuery
from zapomni_core.validation import iso, parse_iso8601
from zapomni_db import Candidates, Comparable, GraphStores, LinkRow, MemoryRecord, StoredLink

log = structlog.get_logger(__name__)

# The nearest stored memories an added one is compared with, and how near (cosine) they must be: an update
# restates the same subject and attribute, which puts it among the nearest few (decision 0043). Terse notes of two
# values are far apart ("Works as a barista at Blue Bottle", "Works as a software tester at Ubisoft": 0.14), and
# the rules read a note whole: for a note only what is nearly unrelated is left out.
CANDIDATES = 8
MIN_SIMILARITY = 0.25
NOTE_MIN_SIMILARITY = 0.1
# A chat turn's vector is mostly its greeting and its speaker ("Hey Jon! ..."): the turns nearest to it are other
# greetings. The keyword leg, asked with the sentences that could state a change, also finds the turn that spoke of
# the same internship or agency, and the terse note of the same attribute whose value is far from the new one's in
# the embeddings ("Works as ..."). Not for other notes: their vector is their content, and asking cost notes a
# quarter of their adds per second more (decision 0043, session 30).
KEYWORD_CANDIDATES = 8
# Bringing the keyword index up to date commits it: once per add, that halved the adds per second of a stream of
# turns (−47 % with detection, 5,520 LoCoMo turns). Candidates come from the index as it is, caught up in the
# background at most every 2 s, and from the turns written since it last caught up that share a word with the new
# one (an interview and its outcome told one turn after the other). A catch-up costs 20 to 50 ms and reading a
# turn not caught up ~12 µs (measured): at ~45 turns a second, every 2 s costs about a third less than every 1 s,
# and every 3 s little less than every 2 s. UNREAD_CANDIDATES bounds that read while the index is made anew.
KEYWORD_STALE_OK_S = 2.0
UNREAD_CANDIDATES = 256
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
class Comparing:
    """What a memory is compared by before its vector is known (`UpdateLinker.prepare`)."""

    topic: str  # its sentences that could link it
    keyword: KeywordRetriever | None  # the keyword leg, where the workspace has one
    ranked: list[KeywordHit]  # what that leg ranks for `topic`
    unread_after: int | None  # the last change that leg had read: the unread memories are those after it


@dataclass
class Detection:
    """Update detection of one memory being added, in steps that overlap the add (`UpdateLinker.start`): what it
    is compared by is read while the model embeds it, and its candidates are read and compared while it is stored
    (`compare_while_stored`); only writing the links waits for the write. Sequential adds of LoCoMo turns spent
    2.3 ms an add comparing after the write, most of it reading the candidates (decision 0043)."""

    workspace: Workspace
    new: Said
    prepared: asyncio.Task[Comparing | None]
    compared: asyncio.Task[list[UpdateLink]] | None = None

    def compare_while_stored(self, vector: Sequence[float]) -> None:
        """Begin reading and comparing the candidates by the memory's `vector`, before it is stored."""
        self.compared = asyncio.ensure_future(self._compare(vector))

    async def _compare(self, vector: Sequence[float] | None) -> list[UpdateLink]:
        prepared = await self.prepared
        if prepared is None:
            return []
        return _updates(self.new, prepared, await _candidates(self.workspace, self.new, prepared, vector))

    async def updates(self) -> list[UpdateLink]:
        """The links the rules find, its candidates read by its stored first chunk if not read already."""
        return await (self.compared or self._compare(None))

    def abandon(self) -> None:
        """Stop it: the memory was not stored (what the steps raised is not wanted)."""
        for task in (self.compared, self.prepared):
            if task is not None:
                task.cancel()
                task.add_done_callback(lambda done: done.cancelled() or done.exception())


@dataclass(frozen=True)
class UpdateLinker:
    """Update detection at write time, and the links on results; `enabled` False: no detection (reads still
    show the links already stored)."""

    enabled: bool = True

    def start(self, workspace: Workspace, record: MemoryRecord) -> Detection | None:
        """Begin update detection for `record` before it is embedded and stored; finished by `detect`. None when
        detection is off or `record` is no note."""
        if not self.enabled or record.kind != "note":
            return None
        new = _said(record)
        return Detection(workspace, new, asyncio.ensure_future(self.prepare(workspace, new)))

    async def detect(self, detection: Detection) -> int:
        """Link the memory of `detection`, now stored, with the stored memories it replaces or that replace it;
        how many links were made."""
        return await _link(detection.workspace, detection.new, await detection.updates())

    async def link(self, workspace: Workspace, new: Said) -> int:
        """Link the stored memory `new` (a note or turn) with those it replaces or that replace it, among its
        nearest; how many links were made (none that were there already)."""
        prepared = await self.prepare(workspace, new)
        if prepared is None:
            return 0
        return await _link(workspace, new, _updates(new, prepared, await _candidates(workspace, new, prepared, None)))

    async def prepare(self, workspace: Workspace, new: Said) -> Comparing | None:
        """What `new` is compared by, which needs no vector: the sentences that could link it, and what the keyword
        index ranks for them. None when no sentence could link it."""
        topic = linkable_text(new)
        if len(new.text) > MAX_CHARS or not topic:
            return None
        keyword = _keyword_leg(workspace) if new.speaker is not None or terse_fact(new) else None
        ranked: list[KeywordHit] = []
        after = keyword.caught_up_to if keyword else None  # read first: a catch-up meanwhile leaves no gap
        if keyword is not None:
            try:
                ranked = await keyword.ranked(topic, KEYWORD_CANDIDATES + 1, stale_ok_s=KEYWORD_STALE_OK_S)
                # "I'm volunteering as a mentor for a local school": its other words find the turns about schools
                verbs = activities(new)
                if verbs and verbs != topic:
                    found = {hit.chunk_id for hit in ranked}
                    more = await keyword.ranked(verbs, KEYWORD_CANDIDATES, stale_ok_s=KEYWORD_STALE_OK_S)
                    ranked += [hit for hit in more if hit.chunk_id not in found]
            except LegUnavailable as exc:  # its index is being made: the nearest and the unread turns still count
                log.info("memory.update_keywords_unavailable", memory_id=new.memory_id, reason=str(exc))
        return Comparing(topic, keyword, ranked, after)

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
        query asks about the past. The first hit's replacement comes even when there is no room, in the last hit's
        place (unless that is the first hit itself): the first hit is what an agent reads.

        "What's my usual coffee order?" matches "Usual coffee order: oat milk flat white" better than "Actually I've
        gone off oat milk. These days it's just a cortado": the current fact must come with it, not only be named. Only
        the first hit's replacement takes a matched hit's place: letting every replaced hit's do so lost LoCoMo's
        evidence recall@10 0.006, and a replaced hit names its replacement anyway (decision 0043)."""
        if not hits or asks_about_the_past(query.text):
            return list(hits)
        present = {hit.memory_id for hit in hits}
        room = limit - len(hits)
        replaced = hits if room > 0 else hits[:1] if limit > 1 else []  # full: the first hit's, in the last's place
        wanted: dict[str, SearchHit] = {}
        for hit in replaced:
            latest = hit.superseded_by[0].memory_id if hit.superseded_by else None
            if latest is not None and latest not in present and len(wanted) < max(room, 1):
                wanted.setdefault(latest, hit)
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
        return [*hits[: limit - len(brought)], *await self.annotate(stores, brought)]


def abandon(detection: Detection | None) -> None:
    """Stop a detection `UpdateLinker.start`ed for a memory that was not stored, if there is one."""
    if detection is not None:
        detection.abandon()


async def _candidates(
    workspace: Workspace, new: Said, prepared: Comparing, vector: Sequence[float] | None
) -> Candidates:
    """The candidates of `new` by its `vector`, or (None) by its stored first chunk."""
    return await workspace.stores.search.update_candidates(
        new.memory_id,
        vector=vector,
        k=CANDIDATES + 1,
        ranked=[(hit.chunk_id, hit.node) for hit in prepared.ranked],
        unread_after=prepared.unread_after,
        unread_within=UNREAD_CANDIDATES,
        max_distance=1.0 - (MIN_SIMILARITY if new.speaker else NOTE_MIN_SIMILARITY),
        max_chars=MAX_CHARS,
    )


def _updates(new: Said, prepared: Comparing, found: Candidates) -> list[UpdateLink]:
    """The links the rules find between `new` and its candidates `found`."""
    keyword = prepared.keyword
    # Read while it was stored, it may be among its own nearest or not: the nearest others, as many either way.
    nearest = sorted((c for c in found.nearest if c.memory_id != new.memory_id), key=lambda c: c.distance)
    candidates = nearest[:CANDIDATES] + found.ranked
    if keyword:
        seen = {c.memory_id for c in candidates} | {new.memory_id}
        candidates += _unread(keyword, prepared.topic, found.unread, seen)
    older = [
        (said(c.memory_id, c.text, c.speaker, c.date, c.created_at), 1.0 - c.distance)
        for c in {c.memory_id: c for c in reversed(candidates)}.values()  # one per memory, the nearest leg's kept
        if c.memory_id != new.memory_id
    ]
    return find_updates(new, older)


async def _link(workspace: Workspace, new: Said, updates: Sequence[UpdateLink]) -> int:
    """Store `updates`, found for the stored memory `new`; how many links were made."""
    if not updates:
        return 0
    # A rule's link and the stored row carry the same fields by the same names (method: "rules", the default).
    made = await workspace.stores.updates.link([LinkRow(**asdict(u)) for u in updates])
    log.info("memory.updates_linked", memory_id=new.memory_id, links=made)
    return made


def _keyword_leg(workspace: Workspace) -> KeywordRetriever | None:
    return next((leg for leg in workspace.search.retrievers if isinstance(leg, KeywordRetriever)), None)


def _unread(keyword: KeywordRetriever, topic: str, unread: Sequence[Comparable], seen: set[str]) -> list[Comparable]:
    """The nearest of the memories written since the keyword index last caught up (it answers up to
    KEYWORD_STALE_OK_S behind) that share an index word with `topic`, not `seen` already: as many as the index
    gives."""
    words = keyword.terms(topic)
    sharing = [c for c in unread if c.memory_id not in seen and words & keyword.terms(c.text)]
    return sorted(sharing, key=lambda c: c.distance)[:KEYWORD_CANDIDATES]


def asks_about_the_past(query: str) -> bool:
    return _ASKS_ABOUT_THE_PAST.search(query) is not None


def order_current_first(hits: Sequence[F], query: str) -> list[F]:
    """`hits` (in rank order) with the latest replacement of each replaced memory in its place when that place is
    better (the question the old fact answered best is the current one's), and each replaced memory just below the
    hits that replaced it; unless the query asks about the past. Nothing is dropped."""
    if asks_about_the_past(query):
        return list(hits)
    position: dict[str, float] = {}
    for i, hit in enumerate(hits):
        position.setdefault(hit.memory_id, float(i))
    newer_of = {hit.memory_id: [s.memory_id for s in hit.superseded_by if s.memory_id in position] for hit in hits}
    for _ in range(len(position)):  # a chain of replacements settles in as many rounds as it is long
        moved = False
        for memory_id, newer in newer_of.items():
            if not newer:
                continue
            latest = newer[0]  # `superseded_by` lists the newest first
            if position[memory_id] - 0.5 < position[latest]:
                position[latest] = position[memory_id] - 0.5
                moved = True
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


def _said(record: MemoryRecord) -> Said:
    return said(record.id, record.text, record.speaker, record.date, record.created_at)


def said(memory_id: str, text: str, speaker: str | None, date: str | None, created_at: float) -> Said:
    """A stored memory as the rules read it."""
    return Said(memory_id=memory_id, text=text, speaker=speaker, when=_when(date, created_at), added=created_at)
