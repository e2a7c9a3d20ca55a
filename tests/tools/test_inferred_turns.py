"""A chat stored as `Name: text` with no speaker or thread is read as a conversation, per client and with a time gap."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import ClientSession

from tests.helpers import local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

TURNS = [  # said within two minutes
    ("Melanie: How was your weekend?", "2023-05-08T13:56"),
    ("Caroline: Busy! I finally went to the pottery workshop downtown.", "2023-05-08T13:56"),
    ("Melanie: Oh nice, what did you make there?", "2023-05-08T13:57"),
    ("Caroline: A small blue bowl for my kitchen.", "2023-05-08T13:57"),
]


async def add(session: ClientSession, text: str, date: str | None = None) -> str:
    arguments: dict[str, Any] = {"text": text} | ({"metadata": {"date": date}} if date else {})
    return str((await call(session, "add_memory", arguments))["memory_id"])


async def inferred(session: ClientSession, memory_id: str) -> dict[str, str]:
    return dict((await call(session, "get_memory", {"memory_id": memory_id}))["inferred"])


async def keyword_ids(session: ClientSession, query: str) -> list[str]:
    found = await call(session, "search_memory", {"query": query, "mode": "keyword", "include_unrelated": True})
    return [hit["memory_id"] for hit in found["results"]]


async def test_turns_without_speaker_or_thread_get_them_inferred_per_session_and_gap(settings: Settings) -> None:
    async with local_session(settings) as first, local_session(settings) as second:
        ids = [await add(first, text, date) for text, date in TURNS]

        # What the agent sent is stored as sent; what was inferred is shown apart.
        got = await call(first, "get_memory", {"memory_id": ids[3]})
        assert (got["text"], got["metadata"], got["date"]) == (TURNS[3][0], {}, "2023-05-08T13:57:00+00:00")
        assert got["inferred"]["speaker"] == "Caroline"
        assert "inferred: speaker Caroline, thread " in text_of(
            await first.call_tool("get_memory", {"memory_id": ids[3]})
        )
        threads = {(await inferred(first, i))["thread"] for i in ids}
        assert len(threads) == 1  # one session, within the gap: one conversation

        # Each turn is read with the turns before it: the reply is found by the question's words.
        found = await call(first, "search_memory", {"query": "What did Caroline make at the pottery workshop?"})
        assert ids[3] in [hit["memory_id"] for hit in found["results"][:3]]
        assert {ids[1], ids[2], ids[3]} <= set(await keyword_ids(first, "pottery workshop"))

        # Four hours later the same session starts another conversation: the bowl is not its context.
        later = await add(first, "Caroline: The glaze came out a deep cobalt.", "2023-05-08T18:00")
        assert (await inferred(first, later))["thread"] not in threads
        assert later not in await keyword_ids(first, "blue bowl kitchen")

        # Another client, speaking between two of the first session's turns, is not in its conversation.
        other = await add(second, "Melanie: Which class did you take?", "2023-05-08T13:56:30")
        assert (await inferred(second, other))["thread"] not in threads
        assert other not in await keyword_ids(first, "pottery workshop")

        # A note is not a turn: no speaker, no thread, whatever its timing.
        note = await add(first, "Note: the boiler service is due in June.", "2023-05-08T18:01")
        assert await inferred(first, note) == {}
        assert (await call(first, "get_memory", {"memory_id": note}))["metadata"] == {}

        # Deleting a turn takes its words out of the turns after it: nothing inferred keeps them.
        await call(first, "delete_memory", {"memory_ids": [ids[1]]})
        for session in (first, second):
            assert not {ids[1], ids[2], ids[3]} & set(await keyword_ids(session, "pottery workshop"))
            assert (await session.call_tool("get_memory", {"memory_id": ids[1]})).is_error


async def test_a_thread_or_speaker_the_agent_gives_is_not_overridden(settings: Settings) -> None:
    async with local_session(settings) as session:
        given = await call(
            session,
            "add_memory",
            {"text": "Caroline: Hello there.", "metadata": {"speaker": "Caro", "thread": "chat 1"}},
        )
        assert await inferred(session, given["memory_id"]) == {}
        got = await call(session, "get_memory", {"memory_id": given["memory_id"]})
        assert got["metadata"] == {"speaker": "Caro", "thread": "chat 1"}
        spoken = await call(session, "add_memory", {"text": "I am fine, thanks.", "metadata": {"speaker": "Mel"}})
        assert set(await inferred(session, spoken["memory_id"])) == {"thread"}  # a turn, but not a `Name:` one


async def test_the_speaker_and_kind_filters_reach_list_search_and_delete(settings: Settings) -> None:
    async with local_session(settings) as session:
        sent = str(
            (
                await call(
                    session,
                    "add_memory",
                    {"text": "I adopted a puppy named Biscuit.", "metadata": {"speaker": "Caroline"}},
                )
            )["memory_id"]
        )
        told = await add(session, "Caroline: We hiked up Mount Tam with Biscuit.")
        melanie = await add(session, "Melanie: Caroline, Biscuit sounds adorable!")
        note = await add(session, "Lunch with Caroline and Biscuit on Friday.")
        caroline = {"speaker": "Caroline"}

        page = await call(session, "list_memories", {"filters": caroline})
        assert {m["memory_id"] for m in page["memories"]} == {sent, told}
        assert {(m["speaker"], m["kind"]) for m in page["memories"]} == {("Caroline", "turn")}
        found = await call(
            session, "search_memory", {"query": "Biscuit", "filters": caroline, "include_unrelated": True}
        )
        assert {hit["memory_id"] for hit in found["results"]} == {sent, told}
        turns = await call(session, "list_memories", {"filters": {"kind": "turn"}})
        assert {m["memory_id"] for m in turns["memories"]} == {sent, told, melanie}
        notes = await call(session, "list_memories", {"filters": {"kind": "note"}})
        assert [m["memory_id"] for m in notes["memories"]] == [note]

        for bad, field in (({"speaker": ""}, "filters.speaker"), ({"kind": "turns"}, "filters.kind")):
            refused = await session.call_tool("list_memories", {"filters": bad})
            assert refused.is_error and field in text_of(refused)

        preview = await call(session, "delete_memory", {"filters": caroline, "dry_run": True})
        assert set(preview["memory_ids"]) == {sent, told}
        deleted = await call(session, "delete_memory", {"filters": caroline})
        assert set(deleted["memory_ids"]) == {sent, told}
        left = await call(session, "list_memories", {})
        assert {m["memory_id"] for m in left["memories"]} == {melanie, note}
        assert (await call(session, "list_memories", {"filters": caroline}))["memories"] == []
