"""Conversation turns stored one per memory, with speaker, date and thread, on the real engine."""

from __future__ import annotations

import numpy as np
import pytest

from zapomni_core import RequestContext, ZapomniCore
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    DeleteMemoryRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    MemoryMetadata,
    SearchFilters,
    SearchRequest,
    UpdateMemoryRequest,
)

pytestmark = pytest.mark.anyio

DATE = "2023-05-08T13:56:00"
CHAT = [
    ("Melanie", "How was your weekend?"),
    ("Caroline", "Busy! I finally went to the pottery workshop downtown."),
    ("Melanie", "Oh nice, what did you make there?"),
    ("Caroline", "A small blue bowl for my kitchen."),
    ("Melanie", "Lovely. I spent mine repainting the fence."),
]


async def add_chat(core: ZapomniCore, thread: str = "chat-1") -> list[str]:
    ids = []
    for speaker, text in CHAT:
        metadata = MemoryMetadata(speaker=speaker, date=DATE, thread=thread)
        ids.append((await core.memories.add(AddMemoryRequest(text=text, metadata=metadata))).memory_id)
    return ids


async def keyword_hits(core: ZapomniCore, query: str) -> list[str]:
    found = await core.memories.search(SearchRequest(query=query, mode="keyword", limit=10))
    return [hit.memory_id for hit in found.results]


async def test_a_reply_is_found_by_the_words_of_the_question_it_answers(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    bowl = ids[3]
    assert bowl in await keyword_hits(core, "pottery workshop")  # said two turns before the answer
    # The stored text and metadata stay what the agent gave.
    stored = await core.memories.get(GetMemoryRequest(memory_id=bowl))
    assert stored.text == CHAT[3][1]
    assert stored.metadata == {"speaker": "Caroline", "thread": "chat-1"} and stored.date is not None
    hit = (await core.memories.search(SearchRequest(query="blue bowl", limit=1))).results[0]
    assert hit.memory_id == bowl and hit.text == CHAT[3][1]


async def test_speaker_and_date_are_embedded_with_the_turn(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None
    [chunk] = await workspace.stores.reads.chunks(ids[3])
    assert chunk.text == CHAT[3][1] and chunk.context == "Caroline (8 May 2023)"
    [expected] = await core.embedder.embed_documents([f"Caroline (8 May 2023): {CHAT[3][1]}"])
    assert float(np.dot(chunk.embedding, expected)) > 0.999
    # A note with the same words but no thread is scored alone.
    plain = await core.memories.add(AddMemoryRequest(text="A small blue bowl for my kitchen, repeated."))
    assert plain.memory_id not in await keyword_hits(core, "pottery workshop")
    assert ids[3] in await keyword_hits(core, "pottery workshop")


async def test_deleting_a_turn_removes_its_words_from_the_turns_after_it(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    assert set(await keyword_hits(core, "pottery")) == set(ids[1:4])
    await core.memories.delete(DeleteMemoryRequest(memory_ids=[ids[1]]))
    assert await keyword_hits(core, "pottery") == []


async def test_editing_a_turn_changes_what_its_neighbours_are_found_by(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    await core.memories.update(UpdateMemoryRequest(memory_id=ids[1], text="Busy! I went to the climbing gym downtown."))
    assert await keyword_hits(core, "pottery") == []
    assert set(await keyword_hits(core, "climbing gym")) == set(ids[1:4])


async def test_moving_a_turn_to_another_thread_or_speaker_reindexes_it(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    moved = await core.memories.update(
        UpdateMemoryRequest(memory_id=ids[3], metadata=MemoryMetadata(speaker="Caroline", date=DATE, thread="chat-2"))
    )
    assert moved.metadata_changed and not moved.text_changed and moved.chunks_embedded == 0
    assert ids[3] not in await keyword_hits(core, "pottery workshop")  # its window is its new thread now
    renamed = await core.memories.update(
        UpdateMemoryRequest(memory_id=ids[3], metadata=MemoryMetadata(speaker="Caro", date=DATE, thread="chat-2"))
    )
    assert renamed.chunks_embedded == 1  # who said it is part of what was embedded
    assert ids[3] in await keyword_hits(core, "Caro")


async def test_a_turn_moved_to_another_thread_leaves_nothing_in_its_old_neighbours(core: ZapomniCore) -> None:
    ids = await add_chat(core)
    assert set(await keyword_hits(core, "pottery")) == set(ids[1:4])  # the next two turns hold its words
    only_the_thread = MemoryMetadata(speaker="Caroline", date=DATE, thread="chat-2")  # nothing is embedded again
    moved = await core.memories.update(UpdateMemoryRequest(memory_id=ids[1], metadata=only_the_thread))
    assert moved.metadata_changed and moved.chunks_embedded == 0
    assert await keyword_hits(core, "pottery") == [ids[1]]
    # Its old thread closes up: each turn after the gap is found by the two turns now before it.
    assert set(await keyword_hits(core, "weekend")) == {ids[0], ids[2], ids[3]}


async def test_bad_turn_metadata_is_refused_by_name(core: ZapomniCore) -> None:
    with pytest.raises(ValueError, match="speaker"):
        AddMemoryRequest.model_validate({"text": "hi", "metadata": {"speaker": ""}})
    with pytest.raises(ValueError, match="thread"):
        AddMemoryRequest.model_validate({"text": "hi", "metadata": {"thread": 7}})


async def test_a_thread_filters_the_list_and_the_search(core: ZapomniCore) -> None:
    first = await add_chat(core, "chat-1")
    other = MemoryMetadata(speaker="Tom", date=DATE, thread="chat-2")
    second = (await core.memories.add(AddMemoryRequest(text="My blue bowl broke.", metadata=other))).memory_id
    listed = await core.memories.page(ListMemoriesRequest(filters=SearchFilters(thread="chat-2"), limit=50))
    assert [memory.memory_id for memory in listed.memories] == [second]
    found = await core.memories.search(
        SearchRequest(query="blue bowl", filters=SearchFilters(thread="chat-1"), limit=10)
    )
    assert {hit.memory_id for hit in found.results} <= set(first) and found.results


# A turn sent with its speaker, one whose speaker is read from its `Name:` lead, another speaker's turn that
# names Caroline, a turn with a thread and no speaker, and notes (one naming her, one with a label lead).
SPEAKERS = [
    ("I adopted a puppy named Biscuit.", MemoryMetadata(speaker="Caroline", thread="chat-9")),
    ("Caroline: We hiked up Mount Tam yesterday.", None),
    ("Melanie: Caroline, that sounds wonderful!", None),
    ("Somebody laughed in the background.", MemoryMetadata(thread="chat-9")),
    ("Lunch with Caroline on Friday at noon.", None),
    ("Note: Caroline prefers tea to coffee.", None),
]


async def add_speakers(core: ZapomniCore) -> list[str]:
    """SPEAKERS, sent by one client (as an MCP session would): turns without a thread get an inferred one."""
    ctx = RequestContext(client="one-session")
    added = [await core.memories.add(AddMemoryRequest(text=text, metadata=meta), ctx) for text, meta in SPEAKERS]
    return [result.memory_id for result in added]


async def listed(core: ZapomniCore, **filters: object) -> set[str]:
    page = await core.memories.page(ListMemoriesRequest(filters=SearchFilters.model_validate(filters), limit=50))
    return {memory.memory_id for memory in page.memories}


async def test_a_speaker_sent_or_inferred_filters_the_list_the_search_and_a_delete(core: ZapomniCore) -> None:
    ids = await add_speakers(core)
    caroline = {ids[0], ids[1]}
    assert await listed(core, speaker="Caroline") == caroline
    assert await listed(core, speaker="Melanie") == {ids[2]}
    assert await listed(core, speaker="caroline") == set(), "a speaker matches exactly, as a source does"
    found = await core.memories.search(
        SearchRequest(query="Caroline", filters=SearchFilters(speaker="Caroline"), limit=10, include_unrelated=True)
    )
    assert {hit.memory_id for hit in found.results} == caroline
    preview = await core.memories.delete(DeleteMemoryRequest(filters=SearchFilters(speaker="Caroline"), dry_run=True))
    assert set(preview.memory_ids) == caroline
    page = await core.memories.page(ListMemoriesRequest(filters=SearchFilters(speaker="Caroline"), limit=50))
    assert {(m.speaker, m.kind) for m in page.memories} == {("Caroline", "turn")}
    with pytest.raises(ValueError, match="speaker"):
        ListMemoriesRequest.model_validate({"filters": {"speaker": ""}})


async def test_a_turn_is_a_memory_with_a_speaker_or_a_thread(core: ZapomniCore) -> None:
    ids = await add_speakers(core)
    assert await listed(core, kind="turn") == set(ids[:4])
    assert await listed(core, kind="note") == set(ids[4:]), "a note is not a turn"
    assert await listed(core, kind="turn", thread="chat-9") == {ids[0], ids[3]}
    detail = await core.memories.get(GetMemoryRequest(memory_id=ids[1]))
    assert (detail.kind, detail.speaker, detail.inferred["speaker"]) == ("turn", "Caroline", "Caroline")
    assert (await core.memories.get(GetMemoryRequest(memory_id=ids[4]))).kind == "note"


async def test_an_edit_moves_a_turn_to_another_speaker_or_makes_it_a_note(core: ZapomniCore) -> None:
    ids = await add_speakers(core)
    await core.memories.update(
        UpdateMemoryRequest(memory_id=ids[0], metadata=MemoryMetadata(speaker="Tom", thread="chat-9"))
    )
    assert await listed(core, speaker="Caroline") == {ids[1]}
    assert await listed(core, speaker="Tom") == {ids[0]}
    await core.memories.update(UpdateMemoryRequest(memory_id=ids[0], metadata=MemoryMetadata(tags=["plain"])))
    assert await listed(core, speaker="Tom") == set()
    assert ids[0] in await listed(core, kind="note")
    # A speaker read from the text is read again when the text changes; the inferred thread stays.
    before = await core.memories.get(GetMemoryRequest(memory_id=ids[1]))
    await core.memories.update(UpdateMemoryRequest(memory_id=ids[1], text="Tom: We hiked up Mount Tam yesterday."))
    after = await core.memories.get(GetMemoryRequest(memory_id=ids[1]))
    assert before.thread is not None and before.inferred == {"speaker": "Caroline", "thread": before.thread}
    assert (after.speaker, after.inferred) == ("Tom", {"speaker": "Tom", "thread": before.thread})
    assert await listed(core, speaker="Tom") == {ids[1]} and await listed(core, speaker="Caroline") == set()
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None
    [chunk] = await workspace.stores.reads.chunks(ids[1])
    assert chunk.context == "Tom", "read with its new speaker"
    # A note given a speaker becomes a turn; a duplicate add that brings one does too.
    await core.memories.add(AddMemoryRequest(text=SPEAKERS[4][0], metadata=MemoryMetadata(speaker="Melanie")))
    assert await listed(core, speaker="Melanie") == {ids[2], ids[4]}
    assert ids[4] in await listed(core, kind="turn")
