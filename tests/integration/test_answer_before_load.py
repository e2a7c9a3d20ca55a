"""A search answered before the embedded database has loaded (decision 0045): the keyword index beside the data
keeps what a hit shows, and the last process to close the store proves it holds every change; a process that
opens the store withdraws the proof, and one that died does not keep it from being made again."""

from __future__ import annotations

import pytest

from tests.helpers import open_core, server_pids, wait_for
from zapomni_core import EarlySearch, Settings, ZapomniCore
from zapomni_core.memories.early_search import NOTE
from zapomni_core.memories.replies import SearchHit
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    DeleteMemoryRequest,
    GetMemoryRequest,
    MemoryMetadata,
    SearchFilters,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_core.search.keyword_index import KeywordIndexDirs

pytestmark = [pytest.mark.anyio, pytest.mark.own_database]  # the keyword index's files beside the embedded database

NOTES = [
    ("The proxy restarts every connection after error E1047 in the payment service.", ["infra"], "runbook.md"),
    ("Caroline's pottery workshop downtown opens on Saturdays at nine.", ["hobby"], None),
    ("The quarterly report blames the zebrafinch sensor for the missing readings.", [], None),
]


def dirs(settings: Settings) -> KeywordIndexDirs:
    return KeywordIndexDirs.beside(settings.data_dir)


def early(settings: Settings, query: str, **fields: object) -> list[SearchHit] | None:
    """The answer `zapomni serve` would give before the database has loaded; None: it would wait."""
    search = EarlySearch.for_settings(settings)
    assert search is not None
    answer = search.answer(SearchRequest.model_validate({"query": query, **fields}))
    if answer is None:
        return None
    assert (answer.legs, answer.note) == (["keyword"], NOTE)
    return answer.results


async def add_notes(core: ZapomniCore) -> list[str]:
    return [
        (
            await core.memories.add(AddMemoryRequest(text=text, metadata=MemoryMetadata(tags=tags, source=source)))
        ).memory_id
        for text, tags, source in NOTES
    ]


async def test_the_last_to_close_proves_the_index_and_the_next_to_open_withdraws_the_proof(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_notes(core)
        assert dirs(settings).proven(settings.graph_name) is None  # arriving withdrew any proof
    proven = dirs(settings).proven(settings.graph_name)
    assert proven is not None and proven >= len(NOTES)  # caught up at the close: nothing was searched before
    assert [hit.memory_id for hit in early(settings, "zebrafinch sensor") or []] == [ids[2]]
    async with open_core(settings) as (core, _):
        assert early(settings, "zebrafinch sensor") is None  # this process may write: the index is no proof now
        await core.memories.delete(DeleteMemoryRequest(memory_ids=[ids[2]]))
    assert early(settings, "zebrafinch sensor") == []  # the delete is in the proven index
    assert [hit.memory_id for hit in early(settings, "pottery workshop") or []] == [ids[1]]


async def test_a_process_still_present_keeps_the_first_to_close_from_proving(settings: Settings) -> None:
    async with open_core(settings) as (first, _):
        await add_notes(first)
        async with open_core(settings) as (second, _):
            await second.memories.add(AddMemoryRequest(text="The second process wrote about a heron."))
        assert dirs(settings).proven(settings.graph_name) is None  # the first may still write
    assert [hit.text for hit in early(settings, "heron") or []] == ["The second process wrote about a heron."]


async def test_an_entry_a_dead_process_left_does_not_count(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_notes(core)
        # What a killed process leaves: its entry, which nobody holds locked any more.
        dead = dirs(settings).root / ".present" / "999999-0123456789ab"
        dead.touch()
    assert dirs(settings).proven(settings.graph_name) is not None
    assert not dead.exists()


async def test_a_hit_shows_the_memory_as_stored_after_a_change_of_its_fields(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_notes(core)
        await core.memories.update(
            UpdateMemoryRequest(memory_id=ids[0], metadata=MemoryMetadata(tags=["incident"], source="pager.md"))
        )
        stored = await core.memories.get(GetMemoryRequest(memory_id=ids[0]))
        assert (stored.tags, stored.source) == (["incident"], "pager.md")
    (hit,) = early(settings, "error E1047 proxy") or []
    assert (hit.memory_id, hit.text, hit.tags, hit.source) == (ids[0], NOTES[0][0], ["incident"], "pager.md")
    assert (hit.created_at, hit.updated_at, hit.kind) == (stored.created_at, stored.updated_at, stored.kind)
    assert hit.similarity_score is None and hit.matched_by == ["keyword"]


async def test_turns_of_a_thread_show_their_speaker_and_thread(settings: Settings) -> None:
    turns = [("Ana", "Shall we plan the kayak trip for June?"), ("Ben", "Yes, the fjord route, with two tents.")]
    async with open_core(settings) as (core, _):
        for speaker, text in turns:
            metadata = MemoryMetadata.model_validate({"speaker": speaker, "thread": "trip", "date": "2024-05-01"})
            await core.memories.add(AddMemoryRequest(text=text, metadata=metadata))
    hits = early(settings, "fjord tents") or []
    assert [(hit.speaker, hit.thread, hit.kind, hit.text) for hit in hits] == [("Ben", "trip", "turn", turns[1][1])]


async def test_what_the_index_alone_cannot_answer_waits(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_notes(core)
    assert early(settings, "pottery workshop") is not None
    assert early(settings, "pottery workshop", mode="vector") is None  # no vectors without the database
    assert early(settings, "pottery workshop", min_score=0.5) is None  # no similarity either
    assert early(settings, "pottery workshop", filters=SearchFilters(tags=["hobby"]).model_dump()) is None
    assert early(settings, "pottery workshop", graph_context=True) is None
    assert early(settings, "pottery workshop", workspace="elsewhere") is None  # no proof for that one
    assert early(settings, "pottery workshop", mode="keyword", limit=1) is not None


async def test_a_search_waits_for_the_engine_once_the_database_answers(settings: Settings) -> None:
    search = EarlySearch.for_settings(settings)
    assert search is not None
    async with open_core(settings):
        assert not await search.database_loading()  # it answers: the engine is moments away, with both legs
    assert wait_for(lambda: not server_pids(settings.data_dir), 60)
    assert await search.database_loading()  # stopped: the next server starts it and waits for its load
