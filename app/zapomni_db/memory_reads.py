"""Reads of memories as a user sees them: one, a page, those matching filters, and export pages."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from zapomni_db._cypher import KIND
from zapomni_db.client import GraphClient
from zapomni_db.records.memories import ChunkPlace, MemoryInfo, PageKey, SearchFilter, StoredChunk, StoredMemory

# Characters of the text a page brings back per memory: enough for a preview, never a whole 10 MB text.
PAGE_TEXT_CHARS = 400


def text_head(text: str) -> str:
    """The start of a text that a page reads (`Memory.head`), stored with the text.

    Cut here, not in Cypher: FalkorDB 4.16's `left` and `substring` measure a text in its NFC form
    but cut its bytes, so where NFC lengthens a text they return too little or half a character
    (which the driver cannot decode), and `substring` crashed the database on some such texts."""
    return text[:PAGE_TEXT_CHARS]


def stored_head(text: str) -> str | None:
    """`Memory.head` as stored: none for a text no longer than a head, which pages read whole instead
    (`coalesce(m.head, m.text)`); storing it twice cost 270 bytes a short memory (decision 0031)."""
    return text_head(text) if len(text) > PAGE_TEXT_CHARS else None


# A chunk with its vector and its place in its file, for a memory bound to `m`, as `_stored_chunk` reads it.
_CHUNK = f"m.id, c.id, c.idx, coalesce(c.text, m.text), c.embedding, {ChunkPlace.projection('c')}, c.context"
_STORED = f"{MemoryInfo.PROJECTION}, m.text, m.metadata, m.content_hash, m.seq, m.file_hash, m.inferred"
# Keyset pagination on (creation time in whole microseconds, id), which never change: adds and
# deletes while a client pages neither shift nor repeat what it has not seen yet. The key is an
# integer computed in the database because FalkorDB returns doubles with 15 significant digits:
# a returned created_at is not the stored one, and a cursor built from it would repeat or skip.
# The comparison and order come from this fixed table, never from user input.
_KEY = "toInteger(m.created_at * 1000000)"


# A page reads the memories of one window of keys, [$lo, $hi), through the range index on
# `created_at` (ordering the whole label costs a scan of the store per page, decision 0026). The
# index is asked for the window widened by `_SLACK_S` on each side, so that no rounding of a double
# can leave out a memory whose key is inside it; the integer key then cuts the window exactly.
# Windows follow each other without gap or overlap, so a page is their rows in order. `where` is the
# filters' conditions (`_conditions`), which the same index answers with the window; unwindowed, the page
# of a filter few memories pass (`_FEW`): all of them, ordered.
def _page_query(order: Literal["newest", "oldest"], where: str, *, windowed: bool = True) -> str:
    op, direction = ("<", "DESC") if order == "newest" else (">", "ASC")
    window = "m.created_at >= $lo_s AND m.created_at < $hi_s AND " if windowed else ""
    in_window = "key >= $lo AND key < $hi AND " if windowed else ""
    return (
        f"MATCH (m:Memory) WHERE {window}{where} "
        f"WITH m, {_KEY} AS key WHERE {in_window}"
        f"($after_key IS NULL OR key {op} $after_key OR (key = $after_key AND m.id {op} $after_id)) "
        # Sorted and cut before the projection: FalkorDB projects every row it sorts.
        f"WITH m, key ORDER BY key {direction}, m.id {direction} LIMIT $limit "
        f"RETURN {MemoryInfo.PROJECTION}, coalesce(m.head, m.text), key"
    )


# The filters a request gives, each as a plain condition on `m`. FalkorDB answers a conjunction of equalities
# and ranges on a label's indexed properties (created_at, source, speaker, thread, tags, kind, date_ts) from
# the label's one index, so a filtered page reads only the memories that pass; `FILTER`'s `$x IS NULL OR ...`
# keeps the planner from the index, and a page whose filter matched nothing read every memory (272 ms at 1M,
# decision 0044). Only which fixed fragments are used depends on the request; values travel as parameters.
_KINDS_STORED = ("document", "code")  # the kinds a memory stores; a note and a turn are read from what it holds
_CONDITIONS = {
    "source": "m.source = $source",
    "date_from": "m.date_ts >= $date_from",
    "date_to": "m.date_ts <= $date_to",
    "thread": "m.thread = $thread",
    "speaker": "m.speaker = $speaker",
}


# A filter the index answers that at most this many memories pass: its page reads them all, ordered, in one
# query, instead of the windows' dozen or more (each window a query, until the far end of the store).
_FEW = 1000


@dataclass(frozen=True)
class _Conditions:
    where: str  # a conjunction on `m`; `true` for no filter
    params: dict[str, Any]
    indexed: bool  # whether the index answers any of them (a note's or turn's kind and `current` it does not)


def _conditions(filters: SearchFilter) -> _Conditions:
    """`filters` as plain conditions on `m`, with their parameters."""
    given = {key: value for key, value in filters.as_params().items() if value is not None}
    where = [_CONDITIONS[key] for key in _CONDITIONS if key in given]
    params = {key: given[key] for key in _CONDITIONS if key in given}
    indexed = bool(where)
    if "kind" in given:
        stored_kind = given["kind"] in _KINDS_STORED
        where.append("m.kind = $kind" if stored_kind else f"{KIND} = $kind")
        params["kind"] = given["kind"]
        indexed = indexed or stored_kind
    if "tags" in given:  # any of them: one indexed membership test per tag
        where.append("(" + " OR ".join(f"$tag{i} IN m.tags" for i in range(len(given["tags"]))) + ")")
        params |= {f"tag{i}": tag for i, tag in enumerate(given["tags"])}
        indexed = True
    if "current" in given:
        where.append("NOT (m)-[:SUPERSEDED_BY]->(:Memory)")
    return _Conditions(" AND ".join(where) or "true", params, indexed)


_SLACK_S = 0.001
# The open end of a window: no creation time reaches it (2^62 µs is year 146,000; a time beyond that
# would overflow `_KEY` anyway). Bounds, not optional conditions: `$x IS NULL OR ...` keeps the
# planner from the index.
_OPEN_US = 2**62
_OPEN_S = 1e12
# Whether any memory was created before (at or after) $t: a range scan of the index that stops at the first one.
_ANY_BEFORE = "MATCH (m:Memory) WHERE m.created_at < $t RETURN m.id LIMIT 1"
_ANY_SINCE = "MATCH (m:Memory) WHERE m.created_at >= $t RETURN m.id LIMIT 1"
# The creation times of the memories made visible last (through the `seq` index), and whether the store's first
# number was reached.
_MADE_LAST = (
    "MATCH (q:Sequence {id: 'chunks'}) WITH q.value - $span AS after "
    "OPTIONAL MATCH (m:Memory) WHERE m.seq > after RETURN m.created_at, after <= 0"
)
# How far back the search for the oldest memory starts stepping (it doubles the step each time).
_FIRST_STEP_S = 60.0
# Halvings that narrow it down then: to a millionth of the store's age, below a page's span up to ~10M memories.
_BISECTIONS = 20


class MemoryReads:
    def __init__(self, client: GraphClient) -> None:
        self._client = client
        self._oldest_s: float | None = None  # see `_oldest_bound`
        self._newest_s: float | None = None  # see `_newest_bound`

    async def get(self, memory_id: str) -> StoredMemory | None:
        rows = await self._client.ro_query(f"MATCH (m:Memory {{id: $id}}) RETURN {_STORED}", {"id": memory_id})
        return _stored(rows[0]) if rows else None

    async def by_content_hash(self, content_hash: str) -> StoredMemory | None:
        rows = await self._client.ro_query(
            f"MATCH (m:Memory {{content_hash: $hash}}) RETURN {_STORED} LIMIT 1", {"hash": content_hash}
        )
        return _stored(rows[0]) if rows else None

    async def page(
        self, filters: SearchFilter, *, order: Literal["newest", "oldest"], after: PageKey | None, limit: int
    ) -> list[tuple[MemoryInfo, str, PageKey]]:
        """Up to `limit` memories after `after` in `order`, each with the start of its text and its page key.

        Reads windows of creation time next to each other in `order`, each twice as wide as the one
        before, until the page is full or a window open at its far end has been read (so a selective
        filter ends after a logarithmic number of windows, having read the store once). Windows are sized from
        the store's mean density, except that a first newest-first page's first one reaches back no further than
        the memories made visible last (`_recent_start`). The bounds of the store are only estimates, kept right
        by the open ends: a memory created before the oldest one known, or after now, still falls in the last window.
        A filter the index answers that fewer than `_FEW` memories pass is read whole instead, in one query."""
        count_rows = await self._client.ro_query("MATCH (m:Memory) RETURN count(m)")  # a label count: O(1)
        stored = int(count_rows[0][0]) if count_rows else 0
        if stored == 0 or limit <= 0:
            return []
        conditions = _conditions(filters)
        where = conditions.where
        params = {
            **conditions.params,
            "after_key": after.created_us if after else None,
            "after_id": after.memory_id if after else None,
        }
        passing = await self._pass_count(where, conditions.params) if conditions.indexed else None
        if passing is not None and passing < _FEW:
            return _page_rows(
                await self._client.ro_query(_page_query(order, where, windowed=False), {**params, "limit": limit})
            )
        now_us = int(time.time() * 1_000_000)
        # Newest first, a bound made too new by an import since only widens the last window (open at its far end).
        oldest_us = int(await self._oldest_bound(now_us / 1_000_000, check=order == "oldest") * 1_000_000)
        # The span holding `limit` memories at the store's mean density, doubled: most first windows fill.
        width = max(1, 2 * limit * max(1, now_us - oldest_us) // stored)
        if passing is not None:  # at least `_FEW` pass: windows sized for them (at most ~2 x `_FEW` rows to sort)
            width = max(width, width * stored // max(1, passing))
        if order == "newest" and after is None and passing is not None:
            first_lo = int(await self._newest_bound(now_us / 1_000_000) * 1_000_000) - width
        elif order == "newest" and after is None:
            first_lo, newest_made = await self._recent_start(limit)
            if newest_made - first_lo > width:  # spread out (an import): no further back than the mean density says
                first_lo = max(first_lo, int(await self._newest_bound(now_us / 1_000_000) * 1_000_000) - width)
        query = _page_query(order, where)
        found: list[list[Any]] = []
        if order == "newest":
            hi = after.created_us + 1 if after else _OPEN_US
            lo = after.created_us - width if after else first_lo
            while True:
                lo = -_OPEN_US if lo <= oldest_us else lo
                found += await self._window(query, params, lo, hi, limit - len(found))
                if len(found) >= limit or lo == -_OPEN_US:
                    break
                hi, width = lo, width * 2
                lo = hi - width
        else:
            lo = after.created_us if after else -_OPEN_US
            hi = (after.created_us if after else oldest_us) + width
            while True:
                hi = _OPEN_US if hi > now_us else hi
                found += await self._window(query, params, lo, hi, limit - len(found))
                if len(found) >= limit or hi == _OPEN_US:
                    break
                lo, width = hi, width * 2
                hi = lo + width
        return _page_rows(found)

    async def _pass_count(self, where: str, params: dict[str, Any]) -> int:
        """How many memories pass `where`, counted up to `_FEW` (from the index: as many rows as it counts)."""
        rows = await self._client.ro_query(
            f"MATCH (m:Memory) WHERE {where} WITH m LIMIT {_FEW} RETURN count(m)", params
        )
        return int(rows[0][0]) if rows else 0

    async def _window(self, query: str, params: dict[str, Any], lo: int, hi: int, limit: int) -> list[list[Any]]:
        """Up to `limit` rows of a page (`query`, from `_page_query`) with keys in [lo, hi)."""
        return await self._client.ro_query(
            query,
            {
                **params,
                "lo": lo,
                "hi": hi,
                "lo_s": -_OPEN_S if lo == -_OPEN_US else lo / 1_000_000 - _SLACK_S,
                "hi_s": _OPEN_S if hi == _OPEN_US else hi / 1_000_000 + _SLACK_S,
                "limit": limit,
            },
        )

    async def _oldest_bound(self, now_s: float, *, check: bool = True) -> float:
        """A time no memory was created before, within a millionth of the store's age of the oldest memory.

        Found by stepping back from now (or from the bound found before, when a memory has since been
        imported from before it), doubling the step, then halving the last step, with a probe of the index
        each (~40 in all, once); kept, and checked by one probe per call that asks (`check`). A bound made too
        old by deletes only costs a page windows across the gap."""
        if self._oldest_s is not None and (not check or not await self._any_before(self._oldest_s)):
            return self._oldest_s
        start = min(now_s, self._oldest_s if self._oldest_s is not None else now_s)
        step = _FIRST_STEP_S
        while await self._any_before(start - step):
            step *= 2
        # Nothing before `lo`, something before `hi`: halve the gap, else the first window of an oldest-first
        # page would start up to the store's age early and double across the empty span into the memories.
        lo, _hi = await _narrow(
            self._any_before,
            start - step,
            start - step / 2,
            at_lo=False,
            steps=_BISECTIONS if step > _FIRST_STEP_S else 0,
        )
        self._oldest_s = lo
        return lo

    async def _any_before(self, t: float) -> bool:
        return bool(await self._client.ro_query(_ANY_BEFORE, {"t": t}))

    async def _recent_start(self, limit: int) -> tuple[int, int]:
        """A start for a newest-first page's first window (µs) that holds about `limit` memories when the store's
        newest stretch is a burst: the `limit`-th newest creation time among the memories made visible last; and
        the newest of them. A window sized by the store's mean density held 1,000 memories of a bulk write at 1M,
        all read to be sorted (9.3 ms, decision 0032). Where memories were made visible in another order than
        created (an import keeps creation times) the two are far apart and the start too early: `page` then takes
        the later of this and the mean-density start. Only the first window depends on it, so pages are exact
        either way.

        Reads the `seq` index back from the latest number, four times further each round, until `limit`
        memories are found (deletes and updates leave gaps) or the store is read whole (fewer memories)."""
        span = 2 * limit
        while True:
            rows = await self._client.ro_query(_MADE_LAST, {"span": span})
            times = [float(row[0]) for row in rows if row[0] is not None]
            if len(times) >= limit or not rows or rows[0][1]:
                break
            span *= 4
        if len(times) < limit:
            return -_OPEN_US, -_OPEN_US  # fewer than `limit` in the store: one window reads them all
        times.sort(reverse=True)
        # A returned double is within a µs of the stored one.
        return int(times[limit - 1] * 1_000_000) - 2, int(times[0] * 1_000_000) + 2

    async def _newest_bound(self, now_s: float) -> float:
        """A time no memory was created after, within a millionth of the gap from the newest memory to now.

        A newest-first page's first window starts there, open at its far end, instead of doubling back from now
        across the time the store sat idle (14.9 ms at 1M, decision 0031). A store written in the last minute
        starts from now. Otherwise found like `_oldest_bound`, stepping back from now, once, and kept while one
        probe finds nothing created since; a bound made too new by deletes only costs windows across the gap."""
        if self._newest_s is not None and not await self._any_since(self._newest_s):
            return self._newest_s
        self._newest_s, step = None, _FIRST_STEP_S
        while not await self._any_since(now_s - step):
            if step > now_s + _OPEN_S:  # every memory went since the page counted them
                return now_s
            step *= 2
        if step == _FIRST_STEP_S:
            return now_s
        _lo, hi = await _narrow(self._any_since, now_s - step, now_s - step / 2, at_lo=True, steps=_BISECTIONS)
        self._newest_s = hi
        return hi

    async def _any_since(self, t: float) -> bool:
        return bool(await self._client.ro_query(_ANY_SINCE, {"t": t}))

    async def matching_ids(self, filters: SearchFilter) -> list[str]:
        """Ids of the memories that pass `filters`, oldest first."""
        conditions = _conditions(filters)
        query = f"MATCH (m:Memory) WHERE {conditions.where} RETURN m.id ORDER BY m.created_at, m.id"
        rows = await self._client.ro_query(query, conditions.params)
        return [row[0] for row in rows]

    async def speakers(self, limit: int) -> list[str]:
        """Up to `limit` distinct speakers of the stored turns, in order (what a speaker filter can match)."""
        rows = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.speaker IS NOT NULL RETURN DISTINCT m.speaker AS s ORDER BY s LIMIT $limit",
            {"limit": limit},
        )
        return [row[0] for row in rows]

    async def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that name a stored memory."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) RETURN m.id", {"ids": list(ids)}
        )
        return {row[0] for row in rows}

    async def created_per_day(self) -> list[tuple[str, int]]:
        """(UTC day as YYYY-MM-DD, memories added that day) for every day with any, oldest first.

        One pass over the memories' creation times, grouped here: Cypher has no date formatting."""
        rows = await self._client.ro_query(
            "MATCH (m:Memory) WITH toInteger(floor(m.created_at / 86400)) AS day RETURN day, count(*) ORDER BY day"
        )
        return [(_day(int(row[0])), int(row[1])) for row in rows if row[0] is not None]

    async def chunks(self, memory_id: str) -> list[StoredChunk]:
        """A memory's chunks with their vectors, in order."""
        return await self.chunks_of([memory_id])

    # -- export pages ---------------------------------------------------------------------------

    async def latest_sequence(self) -> int:
        rows = await self._client.ro_query("MATCH (q:Sequence {id: 'chunks'}) RETURN q.value")
        return int(rows[0][0]) if rows else 0

    async def memories_between(self, after: int, upto: int) -> list[StoredMemory]:
        """Memories with `after < seq <= upto`, in `seq` order (the order they became visible)."""
        rows = await self._client.ro_query(
            f"MATCH (m:Memory) WHERE m.seq > $after AND m.seq <= $upto RETURN {_STORED} ORDER BY m.seq",
            {"after": after, "upto": upto},
        )
        return [_stored(row) for row in rows]

    async def chunks_of(self, memory_ids: Sequence[str]) -> list[StoredChunk]:
        """Every chunk of `memory_ids` (with its vector), by memory id then idx."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid})-[:HAS_CHUNK]->(c:Chunk) "
            f"RETURN {_CHUNK} ORDER BY m.id, c.idx",
            {"ids": list(memory_ids)},
        )
        return [_stored_chunk(row) for row in rows]

    async def chunk_range(self, memory_id: str, from_index: int, to_index: int) -> list[StoredChunk]:
        """The chunks of one memory with `from_index <= idx < to_index`, in idx order.

        A query of its own: an optional bound (`$hi IS NULL OR ...`) made FalkorDB 5x slower here.
        """
        rows = await self._client.ro_query(
            "MATCH (m:Memory {id: $id})-[:HAS_CHUNK]->(c:Chunk) WHERE c.idx >= $lo AND c.idx < $hi "
            f"RETURN {_CHUNK} ORDER BY c.idx",
            {"id": memory_id, "lo": from_index, "hi": to_index},
        )
        return [_stored_chunk(row) for row in rows]

    async def linked_chunk_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that name a chunk of a stored memory (unlinked leftovers of a crash do not count)."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS cid MATCH (c:Chunk {id: cid})<-[:HAS_CHUNK]-(:Memory) RETURN DISTINCT c.id",
            {"ids": list(ids)},
        )
        return {row[0] for row in rows}


async def _narrow(
    probe: Callable[[float], Awaitable[bool]], lo: float, hi: float, *, at_lo: bool, steps: int
) -> tuple[float, float]:
    """[lo, hi) halved `steps` times, keeping the half across which `probe` (monotone in time, `at_lo` at `lo`)
    changes its answer."""
    for _ in range(steps):
        middle = (lo + hi) / 2
        lo, hi = (middle, hi) if await probe(middle) == at_lo else (lo, middle)
    return lo, hi


def _page_rows(rows: list[list[Any]]) -> list[tuple[MemoryInfo, str, PageKey]]:
    w = MemoryInfo.WIDTH
    return [(MemoryInfo.from_row(row), text_head(row[w] or ""), PageKey(int(row[w + 1]), row[0])) for row in rows]


def _stored(row: list[Any]) -> StoredMemory:
    w = MemoryInfo.WIDTH
    return StoredMemory(
        info=MemoryInfo.from_row(row),
        text=row[w],
        metadata_json=row[w + 1] or "{}",
        content_hash=row[w + 2],
        seq=int(row[w + 3] or 0),
        file_hash=row[w + 4],
        inferred_json=row[w + 5],
    )


def _stored_chunk(row: list[Any]) -> StoredChunk:
    return StoredChunk(
        memory_id=row[0],
        id=row[1],
        index=int(row[2]),
        text=row[3],
        embedding=list(row[4] or []),
        place=ChunkPlace.from_row(row, 5),
        context=row[5 + ChunkPlace.WIDTH],
    )


def _day(epoch_day: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=epoch_day)).strftime("%Y-%m-%d")
