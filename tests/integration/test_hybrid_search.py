"""Hybrid search on a real store: each leg finds what the other misses, and fusion finds both."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import all_chunk_ids, graph_client, open_core, similarity, until
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.search.keyword import KeywordRetriever
from zapomni_core.search.types import RetrievalQuery, SearchMode
from zapomni_db import SearchFilter

pytestmark = pytest.mark.anyio

# Near-identical texts that differ only in an identifier: embeddings blur these together.
ERROR_CODES = [f"Deployment failed with error code E10{i} in the payment service." for i in range(40, 60)]
CVES = [f"We patched CVE-2024-30{i} in the xz package on all build hosts." for i in range(10, 30)]
TICKETS = [f"Ticket OPS-{i} tracks the flaky integration test in the billing pipeline." for i in range(4100, 4120)]
PARAPHRASED = {
    "The car would not start this morning because the battery was flat.": "automobile engine refused to crank",
    "Our quarterly revenue grew four percent compared with last year.": "company income increased",
    "Use kubectl rollout undo to revert a bad deployment.": "how can I roll back a release?",
}
PINNED = "The pod was OOMKilled after the memory limit was reached."  # found by both legs


async def rank_of(core: ZapomniCore, query: str, memory_id: str, mode: SearchMode) -> int | None:
    results = (await core.memories.search(SearchRequest(query=query, limit=10, mode=mode))).results
    return next((i for i, hit in enumerate(results, start=1) if hit.memory_id == memory_id), None)


@dataclass(frozen=True)
class Store:
    core: ZapomniCore
    ids: dict[str, str]  # memory id by text


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so the module's store below lives in one event loop


@pytest.fixture(scope="module")
async def store() -> AsyncIterator[Store]:
    """The 64 memories, added once for the tests that only search them (the others get their own core)."""
    data_dir = Path(tempfile.mkdtemp(prefix="zt-", dir="/tmp"))
    try:
        async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")) as (core, _info):
            ids = {}
            for text in [*ERROR_CODES, *CVES, *TICKETS, *PARAPHRASED, PINNED]:
                ids[text] = (await core.memories.add(AddMemoryRequest(text=text))).memory_id
            yield Store(core, ids)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def test_exact_identifiers_need_the_keyword_leg(store: Store) -> None:
    core = store.core
    cases = {"E1053": ERROR_CODES[13], "CVE-2024-3017": CVES[7], "OPS-4111": TICKETS[11], "error E1047": ERROR_CODES[7]}
    vector_hits = 0
    for query, text in cases.items():
        assert await rank_of(core, query, store.ids[text], "keyword") == 1, query
        assert await rank_of(core, query, store.ids[text], "hybrid") == 1, query
        vector_hits += await rank_of(core, query, store.ids[text], "vector") == 1
    assert vector_hits < len(cases), "vector search alone should not pin every identifier"


async def test_paraphrases_need_the_vector_leg(store: Store) -> None:
    for text, query in PARAPHRASED.items():
        assert await rank_of(store.core, query, store.ids[text], "keyword") is None, query
        assert await rank_of(store.core, query, store.ids[text], "vector") == 1, query
        assert await rank_of(store.core, query, store.ids[text], "hybrid") == 1, query


async def test_results_say_which_legs_found_them(store: Store) -> None:
    core = store.core
    results = (await core.memories.search(SearchRequest(query="pod OOMKilled memory limit", limit=5))).results
    top = results[0]
    assert top.memory_id == store.ids[PINNED]
    assert top.matched_by == ["keyword", "vector"]
    assert top.rank_score > 1 / 61  # more than a first place in one leg alone can earn
    assert [r.rank_score for r in results] == sorted((r.rank_score for r in results), reverse=True)
    vector_only = (await core.memories.search(SearchRequest(query="payment service", mode="vector", limit=3))).results
    assert all(r.matched_by == ["vector"] for r in vector_only)


async def test_filters_apply_in_both_legs(core: ZapomniCore) -> None:
    await core.memories.add(
        AddMemoryRequest.model_validate({"text": "Runbook for E2001 on prod.", "metadata": {"tags": ["prod"]}})
    )
    staging = await core.memories.add(
        AddMemoryRequest.model_validate({"text": "Runbook for E2001 on staging.", "metadata": {"tags": ["staging"]}})
    )
    for mode in ("keyword", "vector", "hybrid"):
        request = SearchRequest.model_validate(
            {"query": "E2001 runbook", "mode": mode, "filters": {"tags": ["staging"]}}
        )
        assert [r.memory_id for r in (await core.memories.search(request)).results] == [staging.memory_id], mode


async def test_min_score_and_best_chunk_per_memory(core: ZapomniCore) -> None:
    long_memory = "\n\n".join(
        f"Section {i}: the deployment checklist item {i} says to verify the canary before promoting." for i in range(60)
    )
    added = await core.memories.add(AddMemoryRequest(text=long_memory))
    other = await core.memories.add(AddMemoryRequest(text="Verify the canary before promoting a deployment."))
    assert added.chunks_created > 3
    grouped = (await core.memories.search(SearchRequest(query="verify the canary", limit=10))).results
    assert sorted(r.memory_id for r in grouped) == sorted([added.memory_id, other.memory_id])
    every = (await core.memories.search(SearchRequest(query="verify the canary", limit=10, all_chunks=True))).results
    assert sum(r.memory_id == added.memory_id for r in every) == added.chunks_created
    strict = (await core.memories.search(SearchRequest(query="verify the canary", limit=10, min_score=0.99))).results
    assert strict == []
    some = (await core.memories.search(SearchRequest(query="verify the canary", limit=10, min_score=0.5))).results
    assert some and all(similarity(r) >= 0.5 for r in some)


@pytest.mark.own_database
async def test_both_legs_see_the_same_chunks_after_adds_and_a_restart(settings: Settings, data_dir: Path) -> None:
    async with open_core(settings) as (core, _info):
        for i in range(30):
            await core.memories.add(AddMemoryRequest(text=f"Shared marker zebra{i % 3} in note number {i}."))
        before = await all_chunk_ids(data_dir)
    async with open_core(settings) as (core, _info):
        assert await all_chunk_ids(data_dir) == before
        for mode in ("vector", "keyword"):
            request = SearchRequest(query="zebra0 zebra1 zebra2 shared marker", limit=100, mode=mode, all_chunks=True)
            found = {r.chunk_id for r in (await core.memories.search(request)).results}
            assert found == before, mode


@pytest.mark.own_database
async def test_a_rebuilt_keyword_index_counts_the_stored_text_and_its_context(
    settings: Settings, data_dir: Path
) -> None:
    async with open_core(settings) as (core, _info):
        turn = await core.memories.add(
            AddMemoryRequest.model_validate(
                {"text": "I adopted a puppy last week.", "metadata": {"speaker": "Caroline", "thread": "chat"}}
            )
        )
        await core.memories.add(AddMemoryRequest(text="Melanie painted a lake at sunrise."))
        async with graph_client(data_dir) as client:
            stored = await client.ro_query("MATCH (c:Chunk) RETURN c.terms, c.term_counts, c.term_length")
        assert stored == [[None, None, None]] * 2, "the store keeps texts, not term counts (decision 0031)"
    shutil.rmtree(data_dir / "keyword-index")  # the next server builds its index from the store
    async with open_core(settings) as (core, _info):
        found = await core.memories.search(SearchRequest(query="Caroline", mode="keyword", limit=5))
        assert [hit.memory_id for hit in found.results] == [turn.memory_id], "the speaker is read with the text"


async def test_unrelated_memories_do_not_pad_the_results(core: ZapomniCore) -> None:
    """Issue 9: "database" within one tag used to return an allergy note at similarity 0.000."""

    async def add(text: str, tag: str) -> str:
        request = AddMemoryRequest.model_validate({"text": text, "metadata": {"tags": [tag]}})
        return (await core.memories.add(request)).memory_id

    postgres = await add("We keep user sessions in PostgreSQL with a read replica.", "work")
    allergy = await add("Alice is allergic to peanuts and shellfish.", "work")
    insurance = await add("Remember to renew the car insurance before March.", "work")
    await add("The database backup runs every night at two.", "home")
    for mode in ("hybrid", "vector"):
        request = {"query": "database", "mode": mode, "filters": {"tags": ["work"]}}
        found = (await core.memories.search(SearchRequest.model_validate(request))).results
        assert [r.memory_id for r in found] == [postgres], mode
        padded = (
            await core.memories.search(SearchRequest.model_validate({**request, "include_unrelated": True}))
        ).results
        assert padded[0].memory_id == postgres, mode
        assert {r.memory_id for r in padded[1:]} == {allergy, insurance}, mode
    keyword = SearchRequest.model_validate({"query": "database", "mode": "keyword", "filters": {"tags": ["work"]}})
    assert (await core.memories.search(keyword)).results == []


async def test_a_query_that_allows_it_answers_from_a_keyword_index_a_moment_behind(core: ZapomniCore) -> None:
    # Update detection asks the keyword leg after every add: a catch-up (a commit) each time halved a stream's adds.
    async def add(text: str) -> str:
        return (await core.memories.add(AddMemoryRequest(workspace="lag", text=text))).memory_id

    async def keyword_ids(query: str) -> list[str]:
        found = await core.memories.search(SearchRequest(workspace="lag", query=query, mode="keyword"))
        return [hit.memory_id for hit in found.results]

    await add("The proxy restarts every connection after error E1047 in the payment service.")
    assert await keyword_ids("payment proxy error")  # caught up now
    pottery = await add("Caroline's pottery workshop downtown opens on Saturdays at nine.")
    workspace = await core.workspaces.registry.get("lag", create=False)
    assert workspace is not None
    [keyword] = [leg for leg in workspace.search.retrievers if isinstance(leg, KeywordRetriever)]

    def asked(stale_ok_s: float, text: str = "pottery workshop") -> RetrievalQuery:
        return RetrievalQuery(text, [0.05] * 384, SearchFilter(), stale_ok_s=stale_ok_s)

    assert await keyword.retrieve(asked(600.0), 5) == []  # the index caught up a moment ago: not again
    assert [c.memory_id for c in await keyword.retrieve(asked(0.0), 5)] == [pottery]
    assert await keyword_ids("pottery workshop") == [pottery]  # a user's search sees every write
    # Further behind than it allows, such a query still answers at once, and the index catches up meanwhile.
    before = keyword.caught_up_to
    ferry = await add("The harbour ferry timetable changes on Sundays.")
    assert await keyword.retrieve(asked(1e-9, "harbour ferry"), 5) == []
    await until(lambda: keyword.caught_up_to > before, timeout_s=30, what="the catch-up that query started")
    assert [c.memory_id for c in await keyword.retrieve(asked(600.0, "harbour ferry"), 5)] == [ferry]
