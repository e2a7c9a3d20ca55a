"""Pages of memories read by windows of creation time (decision 0026): the same pages as ordering every memory."""

from __future__ import annotations

import json
import random
import time
import uuid
from typing import Literal

import pytest

from zapomni_core import ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_db import ChunkRow, MemoryRecord, memory_reads
from zapomni_db._cypher import FILTER
from zapomni_db.memory_reads import MemoryReads, _conditions, _page_query
from zapomni_db.records.memories import PageKey, SearchFilter

pytestmark = pytest.mark.anyio

Order = Literal["newest", "oldest"]
DAY = 86400.0
# What a page was before windows: every matching memory ordered by (key, id). The oracle.
_EVERY = (
    f"MATCH (m:Memory) WHERE {FILTER} WITH m, toInteger(m.created_at * 1000000) AS key "
    "RETURN m.id, key ORDER BY key {d}, m.id {d}"
)


def _memory(
    created_at: float, dimension: int, rng: random.Random, **fields: object
) -> tuple[MemoryRecord, list[ChunkRow]]:
    text = f"memory {uuid.uuid4()}"
    record = MemoryRecord(
        id=str(uuid.uuid4()),
        text=text,
        created_at=created_at,
        content_hash=text,
        date_ts=created_at,
        **fields,  # type: ignore[arg-type]  # the fields are the record's own, checked at run time
    )
    vector = [rng.uniform(-1, 1) for _ in range(dimension)]
    return record, [ChunkRow(str(uuid.uuid4()), 0, text, vector)]


async def _all_pages(reads: MemoryReads, filters: SearchFilter, order: Order, limit: int) -> list[tuple[str, int]]:
    seen: list[tuple[str, int]] = []
    after: PageKey | None = None
    while True:
        rows = await reads.page(filters, order=order, after=after, limit=limit)
        seen += [(info.id, key.created_us) for info, _text, key in rows]
        if len(rows) < limit:
            # The page after the last memory is empty, with any limit.
            if rows:
                assert await reads.page(filters, order=order, after=rows[-1][2], limit=limit) == []
            return seen
        after = rows[-1][2]


@pytest.mark.parametrize("few", [memory_reads._FEW, 2], ids=["few-read-whole", "windows-for-the-filter"])
async def test_windowed_pages_equal_ordering_every_memory(
    core: ZapomniCore, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With _FEW at 2, the filters the index answers are read by windows too (sized for them), as when many pass.
    monkeypatch.setattr(memory_reads, "_FEW", few)
    await core.memories.add(AddMemoryRequest(text="A note added now."))
    stores = core.workspaces.registry.stores("default")
    rng, dimension = random.Random(3), (await core.workspaces.stats()).embedding_dimension
    now, base = time.time(), 1.6e9 + 0.1234567
    made = [
        # Equal creation times with different ids, and times less than a microsecond apart (equal keys).
        *(_memory(base, dimension, rng) for _ in range(5)),
        *(_memory(base + 1e-7 * i, dimension, rng) for i in range(1, 4)),
        # Dense days, long gaps, one far in the past and one in the future (an import from a clock ahead).
        *(_memory(base + rng.random() * 2 * DAY, dimension, rng) for _ in range(30)),
        _memory(base - 400 * DAY, dimension, rng),
        _memory(base + 200 * DAY, dimension, rng),
        _memory(now + 30 * DAY, dimension, rng),
        # A selective filter: three turns of one speaker, at the store's two ends and in a gap.
        _memory(base - 399 * DAY, dimension, rng, speaker="ann"),
        _memory(base + 100 * DAY, dimension, rng, speaker="ann"),
        _memory(now + 29 * DAY, dimension, rng, speaker="ann"),
        _memory(base + DAY, dimension, rng, tags=["rare"]),
        _memory(base - 10 * DAY, dimension, rng, tags=["other", "x"]),
        # A thread's turns, one with a speaker, and a document: each filter the index answers, and the kinds.
        _memory(base + 3 * DAY, dimension, rng, thread="t1", speaker="bob"),
        _memory(base + 50 * DAY, dimension, rng, thread="t1"),
        _memory(base + 2 * DAY, dimension, rng, source="docs/a.md", kind="document"),
    ]
    await stores.writes.insert_many(made)
    filters = [
        SearchFilter(),
        SearchFilter(speaker="ann"),
        SearchFilter(tags=["rare"]),
        SearchFilter(tags=["rare", "x"]),
        SearchFilter(speaker="nobody"),
        SearchFilter(thread="t1"),
        SearchFilter(thread="t1", speaker="bob"),
        SearchFilter(source="docs/a.md"),
        SearchFilter(kind="document"),
        SearchFilter(kind="turn"),
        SearchFilter(kind="note"),
        SearchFilter(date_from_ts=base, date_to_ts=base + 3 * DAY),
        SearchFilter(speaker="ann", tags=["rare"]),
        SearchFilter(current_only=True, thread="t1"),
    ]
    for order, direction in (("newest", "DESC"), ("oldest", "ASC")):
        for search in filters:
            expected = [(row[0], int(row[1])) for row in await stores.client.ro_query(
                _EVERY.format(d=direction), search.as_params()
            )]  # fmt: skip
            for limit in (1, 3, 7, 100):
                # the search filter is built from the case's plain values:
                assert await _all_pages(stores.reads, search, order, limit) == expected, (order, search, limit)  # type: ignore[arg-type]
    assert len(await _all_pages(stores.reads, SearchFilter(), "oldest", 7)) == len(made) + 1


async def test_a_memory_imported_from_before_the_oldest_known_is_listed(core: ZapomniCore) -> None:
    await core.memories.add(AddMemoryRequest(text="A note added now."))
    stores = core.workspaces.registry.stores("default")
    dimension = (await core.workspaces.stats()).embedding_dimension
    first = await stores.reads.page(SearchFilter(), order="oldest", after=None, limit=5)  # the store's bound is kept
    assert len(first) == 1
    old, _ = older = _memory(time.time() - 3000 * DAY, dimension, random.Random(5))
    await stores.writes.insert_many([older])
    oldest = await stores.reads.page(SearchFilter(), order="oldest", after=None, limit=1)
    newest = await stores.reads.page(SearchFilter(), order="newest", after=first[0][2], limit=5)
    assert [info.id for info, _, _ in oldest] == [old.id]
    assert [info.id for info, _, _ in newest] == [old.id]


async def test_newest_pages_of_a_store_idle_for_days_and_written_again(core: ZapomniCore) -> None:
    stores = core.workspaces.registry.stores("default")
    rng, dimension = random.Random(7), (await core.workspaces.stats()).embedding_dimension
    idle = [_memory(time.time() - 9 * DAY + i, dimension, rng) for i in range(12)]
    await stores.writes.insert_many(idle)
    newest_first = [m.id for m, _ in reversed(idle)]
    for limit in (1, 5, 100):
        assert [info.id for info, _, _ in await stores.reads.page(SearchFilter(), order="newest", after=None,
                                                                  limit=limit)] == newest_first[:limit]  # fmt: skip
    later = _memory(time.time() - 2 * DAY, dimension, rng)
    await stores.writes.insert_many([later])
    page = await stores.reads.page(SearchFilter(), order="newest", after=None, limit=3)
    assert [info.id for info, _, _ in page] == [later[0].id, *newest_first[:2]]
    assert await _all_pages(stores.reads, SearchFilter(), "newest", 4) == [
        (row[0], int(row[1])) for row in await stores.client.ro_query(_EVERY.format(d="DESC"), {
            **SearchFilter().as_params()})
    ]  # fmt: skip


async def test_newest_pages_after_a_bulk_write_deletes_and_an_import_of_old_memories(core: ZapomniCore) -> None:
    # A newest-first page starts at the memories made visible last (`seq`). Here those are a burst a few
    # microseconds apart, then deletes (gaps in `seq`), then an import whose memories keep old creation times:
    # the pages must still be exactly the store in (key, id) order.
    stores = core.workspaces.registry.stores("default")
    rng, dimension = random.Random(11), (await core.workspaces.stats()).embedding_dimension
    now = time.time()
    await stores.writes.insert_many([_memory(now - 30 * DAY + i * DAY, dimension, rng) for i in range(25)])
    burst = [_memory(now - 60 + i * 0.000003, dimension, rng) for i in range(300)]
    for start in range(0, len(burst), 100):
        await stores.writes.insert_many(burst[start : start + 100])
    await stores.writes.delete([m.id for m, _ in burst[-40:]])  # the newest 40, and the seq numbers they had
    imported = [_memory(now - 400 * DAY + i, dimension, rng) for i in range(30)]
    await stores.writes.insert_many(imported)  # visible last, created long ago

    truth = [(row[0], int(row[1])) for row in await stores.client.ro_query(_EVERY.format(d="DESC"), {
        **SearchFilter().as_params()})]  # fmt: skip
    assert [m.id for m, _ in burst[-41::-1][:20]] == [mid for mid, _ in truth[:20]]
    for limit in (1, 20, 64):
        page = await stores.reads.page(SearchFilter(), order="newest", after=None, limit=limit)
        assert [(info.id, key.created_us) for info, _, key in page] == truth[:limit]
    assert await _all_pages(stores.reads, SearchFilter(), "newest", 20) == truth
    only_old = SearchFilter(date_to_ts=now - 200 * DAY)  # a filter the first window holds none of
    assert [info.id for info, _, _ in await stores.reads.page(only_old, order="newest", after=None, limit=5)] == [
        m.id for m, _ in imported[::-1][:5]
    ]


async def test_a_filtered_page_reads_only_the_memories_that_pass_from_the_index(core: ZapomniCore) -> None:
    """At a million memories, a page whose filter matched nothing read every memory while a filter kept the planner
    from the index (272 ms): each filter the index holds is answered by it with the page's window, so FalkorDB's
    profile of the page shows the index handing over the memories that pass and no others."""
    stores = core.workspaces.registry.stores("default")
    rng, dimension, now = random.Random(5), (await core.workspaces.stats()).embedding_dimension, time.time()
    await stores.writes.insert_many(
        [_memory(now - i, dimension, rng) for i in range(40)]
        + [
            _memory(now - 50, dimension, rng, speaker="ann", thread="t1", tags=["rare"]),
            _memory(now - 51, dimension, rng, source="docs/a.md", kind="code", tags=["x"]),
        ]
    )
    window = {"lo_s": 0.0, "hi_s": 1e12, "lo": 0, "hi": 2**62, "after_key": None, "after_id": None, "limit": 20}
    cases = [
        (SearchFilter(speaker="ann"), 1),
        (SearchFilter(thread="t1"), 1),
        (SearchFilter(source="docs/a.md"), 1),
        (SearchFilter(tags=["rare", "x"]), 2),
        (SearchFilter(kind="code"), 1),
        (SearchFilter(speaker="nobody"), 0),
        (SearchFilter(date_from_ts=now - 50.5, date_to_ts=now - 49.5), 1),
        (SearchFilter(speaker="ann", tags=["rare"], kind="turn", current_only=True), 1),
    ]
    for search, passing in cases:
        conditions = _conditions(search)
        assert conditions.indexed, search
        # PROFILE takes no parameters of its own: they go in the query's CYPHER header, as JSON literals.
        header = "CYPHER " + " ".join(f"{k}={json.dumps(v)}" for k, v in (conditions.params | window).items())
        query = f"{header} {_page_query('newest', conditions.where)}"
        profile = await stores.client.command("GRAPH.PROFILE", stores.client.graph_name, query)
        steps = [step.decode() if isinstance(step, bytes) else str(step) for step in profile]
        scans = [step for step in steps if "Scan" in step]
        assert len(scans) == 1 and "Node By Index Scan" in scans[0], (search, steps)
        assert f"Records produced: {passing}," in scans[0], (search, scans[0])
        assert len(await stores.reads.page(search, order="newest", after=None, limit=20)) == passing, search
