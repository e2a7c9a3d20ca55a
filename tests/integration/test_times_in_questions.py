"""A question's time read against the time each stored turn speaks of, on the real engine (search/temporal.py)."""

from __future__ import annotations

import pytest

from zapomni_core import ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest, MemoryMetadata, SearchRequest
from zapomni_core.search import RetrievalQuery, SearchOptions, SearchPipeline
from zapomni_db import SearchFilter

pytestmark = pytest.mark.anyio


async def turn(core: ZapomniCore, text: str, date: str, thread: str) -> str:
    metadata = MemoryMetadata(speaker="Caroline", date=date, thread=thread)
    return (await core.memories.add(AddMemoryRequest(text=text, metadata=metadata))).memory_id


async def found(core: ZapomniCore, query: str) -> list[str]:
    return [hit.memory_id for hit in (await core.memories.search(SearchRequest(query=query, limit=5))).results]


async def found_without_times(core: ZapomniCore, query: str) -> list[str]:
    """The same search through a pipeline on the same legs with the time weights at 0."""
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None
    plain = SearchPipeline(workspace.search.retrievers, vector_weight=0.7, days_weight=0.0, when_weight=0.0)
    query_vector = await core.embedder.embed_query(query)
    ranked = await plain.run(RetrievalQuery(query, query_vector, SearchFilter()), SearchOptions(limit=5))
    return [r.candidate.memory_id for r in ranked]


async def test_a_question_asking_when_finds_the_turn_that_says_when(core: ZapomniCore) -> None:
    untimed = await turn(core, "I love going to my pottery class with my sister.", "2023-07-20T10:00:00", "s2")
    timed = await turn(core, "Yesterday I finally signed up for a class on clay.", "2023-05-08T13:56:00", "s1")
    await turn(core, "My sister and I painted the fence together.", "2023-07-20T10:05:00", "s2")
    question = "When did Caroline go to her pottery class?"
    plain = await found_without_times(core, question)
    assert plain.index(untimed) < plain.index(timed), plain  # the words alone favour the untimed turn
    assert (await found(core, question))[:2] == [timed, untimed]


async def test_a_question_naming_a_month_finds_the_turn_about_that_month(core: ZapomniCore) -> None:
    # Said on 2 June 2023: "last month" is May 2023, "yesterday" is 1 June.
    may = await turn(core, "Last month I ran a charity race for mental health.", "2023-06-02T09:00:00", "s1")
    june = await turn(core, "I ran a charity race for mental health yesterday, so proud!", "2023-06-02T09:01:00", "s1")
    question = "Which race did Caroline run in May 2023 for mental health?"
    plain = await found_without_times(core, question)
    assert plain.index(june) < plain.index(may), plain
    assert (await found(core, question))[0] == may
    # A question naming no time keeps the order the words give.
    assert await found(core, "Caroline charity race for mental health, so proud") == await found_without_times(
        core, "Caroline charity race for mental health, so proud"
    )
