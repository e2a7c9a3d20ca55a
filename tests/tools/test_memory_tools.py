"""Users own their memories: list, get, update, delete, idempotent add, workspaces, resources — over MCP."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import ClientSession

from tests.helpers import annotations_of, local_session, resource_text, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

MODES = ("hybrid", "vector", "keyword")
PEANUTS = "Alice is allergic to peanuts; she carries an EpiPen everywhere."


async def search_ids(session: ClientSession, query: str, **arguments: Any) -> set[str]:
    """Memory ids any search mode returns for `query`, unrelated results included."""
    found: set[str] = set()
    for mode in MODES:
        result = await call(
            session, "search_memory", {"query": query, "mode": mode, "include_unrelated": True, **arguments}
        )
        found |= {hit["memory_id"] for hit in result["results"]}
    return found


async def add(session: ClientSession, text: str, **arguments: Any) -> dict[str, Any]:
    return await call(session, "add_memory", {"text": text, **arguments})


async def test_get_list_update_and_idempotent_add(settings: Settings) -> None:
    async with local_session(settings) as session:
        first = await add(session, PEANUTS, metadata={"tags": ["health"]})
        again = await add(session, "  Alice is allergic to peanuts;\n she carries an EpiPen everywhere. ",
                          metadata={"tags": ["alice"], "source": "chat"})  # fmt: skip
        assert again["memory_id"] == first["memory_id"] and again["deduplicated"] is True
        assert first["deduplicated"] is False

        got = await call(session, "get_memory", {"memory_id": first["memory_id"]})
        assert got["text"] == PEANUTS  # the first text is kept as written
        assert got["tags"] == ["health", "alice"] and got["source"] == "chat"  # merged, nothing overwritten
        assert got["chunk_count"] == 1 and got["updated_at"] >= got["created_at"]

        others = [(await add(session, f"Release {n} shipped on a Tuesday."))["memory_id"] for n in range(4)]
        page = await call(session, "list_memories", {"limit": 2})
        assert [m["memory_id"] for m in page["memories"]] == others[::-1][:2]  # newest first
        assert page["memories"][0]["preview"] == "Release 3 shipped on a Tuesday."
        rest = await call(session, "list_memories", {"limit": 100, "cursor": page["next_cursor"]})
        assert [m["memory_id"] for m in rest["memories"]] == [*others[::-1][2:], first["memory_id"]]
        assert rest["next_cursor"] is None
        oldest = await call(session, "list_memories", {"limit": 1, "order": "oldest"})
        assert oldest["memories"][0]["memory_id"] == first["memory_id"]
        bad = await session.call_tool("list_memories", {"cursor": page["next_cursor"], "order": "oldest"})
        assert bad.is_error and "cursor" in text_of(bad)

        meta = await call(session, "update_memory", {"memory_id": others[0], "metadata": {"tags": ["release"]}})
        assert (meta["metadata_changed"], meta["text_changed"], meta["chunks_embedded"]) == (True, False, 0)
        text = await call(session, "update_memory", {"memory_id": others[0], "text": "Release 0 slipped to Friday."})
        assert (text["text_changed"], text["chunks_embedded"], text["chunk_count"]) == (True, 1, 1)
        assert (await call(session, "get_memory", {"memory_id": others[0]}))["tags"] == ["release"]
        hits = await call(session, "search_memory", {"query": "slipped Friday", "mode": "keyword"})
        assert [h["memory_id"] for h in hits["results"]] == [others[0]]
        assert hits["legs"] == ["keyword"] and hits["note"] is None  # which legs answered, and none missing
        assert "Tuesday" not in str(await search_ids(session, "Release 0 Tuesday", filters={"tags": ["release"]}))

        clash = await session.call_tool("update_memory", {"memory_id": others[1], "text": PEANUTS})
        assert clash.is_error and first["memory_id"] in text_of(clash)
        missing = await session.call_tool("get_memory", {"memory_id": "0f8e3a52-6c1d-4b7a-9e2f-5d4c3b2a1908"})
        assert missing.is_error and "no memory" in text_of(missing)


async def test_a_deleted_memory_leaves_no_trace_in_any_server(settings: Settings) -> None:
    async with local_session(settings) as first, local_session(settings) as second:
        doomed = (await add(first, PEANUTS, metadata={"tags": ["health"], "source": "chat"}))["memory_id"]
        kept = (await add(first, "Bob prefers tea over coffee in the morning.", metadata={"tags": ["health"]}))[
            "memory_id"
        ]
        # The second server has indexed the memory (its keyword index caught up) before the delete.
        assert doomed in await search_ids(second, "peanuts EpiPen allergic")

        dry = await call(first, "delete_memory", {"filters": {"source": "chat"}, "dry_run": True})
        assert (dry["deleted_count"], dry["memory_ids"], dry["dry_run"]) == (1, [doomed], True)
        assert doomed in await search_ids(first, "peanuts")  # a dry run changes nothing

        gone = await call(first, "delete_memory", {"memory_ids": [doomed]})
        assert (gone["deleted_count"], gone["memory_ids"]) == (1, [doomed])

        for server in (first, second):
            for filters in (None, {"tags": ["health"]}, {"source": "chat"}):
                extra = {"filters": filters} if filters else {}
                assert doomed not in await search_ids(server, "peanuts EpiPen allergic", **extra)
            listed = await call(server, "list_memories", {"limit": 100})
            assert [m["memory_id"] for m in listed["memories"]] == [kept]
            assert (await server.call_tool("get_memory", {"memory_id": doomed})).is_error
            stats = await call(server, "get_stats")
            assert (stats["total_memories"], stats["total_chunks"]) == (1, 1)
        again = await call(second, "delete_memory", {"memory_ids": [doomed]})
        assert (again["deleted_count"], again["not_found"]) == (0, [doomed])


async def test_delete_by_filter_refuses_an_empty_filter(settings: Settings) -> None:
    async with local_session(settings) as session:
        keep = (await add(session, "Keep this one.", metadata={"tags": ["keep"]}))["memory_id"]
        refused: list[dict[str, Any]] = [
            {"filters": {}},
            {},
            {"memory_ids": []},
            {"memory_ids": [keep], "filters": {"tags": ["x"]}},
        ]
        for arguments in refused:
            result = await session.call_tool("delete_memory", arguments)
            assert result.is_error, arguments
        text = text_of(await session.call_tool("delete_memory", {"filters": {}}))
        assert "- filters: give at least one of tags, source, date_from, date_to" in text
        assert (await call(session, "get_stats"))["total_memories"] == 1
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert annotations_of(tools["delete_memory"]).destructive_hint is True
        assert all(annotations_of(t).open_world_hint is False for t in tools.values())


async def test_a_conversation_stored_turn_by_turn_is_searched_as_a_conversation(settings: Settings) -> None:
    turns = [
        ("Melanie", "How was your weekend?"),
        ("Caroline", "Busy! I finally went to the pottery workshop downtown."),
        ("Melanie", "Oh nice, what did you make there?"),
        ("Caroline", "A small blue bowl for my kitchen."),
    ]
    async with local_session(settings) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        metadata = tools["add_memory"].input_schema["properties"]["metadata"]["anyOf"][0]
        assert {"speaker", "thread", "date"} <= set(metadata["properties"])
        assert "conversation" in metadata["properties"]["thread"]["description"]
        assert "one memory per turn" in (tools["add_memory"].description or "")
        ids = [
            (await add(session, text, metadata={"speaker": who, "date": "2023-05-08T13:56", "thread": "s1"}))[
                "memory_id"
            ]
            for who, text in turns
        ]
        found = await call(session, "search_memory", {"query": "What did Caroline make at the pottery workshop?"})
        assert ids[3] in [hit["memory_id"] for hit in found["results"][:3]]
        stored = await call(session, "get_memory", {"memory_id": ids[3]})
        assert stored["text"] == turns[3][1] and stored["metadata"] == {"speaker": "Caroline", "thread": "s1"}
        refused = await session.call_tool("add_memory", {"text": "Hi", "metadata": {"speaker": "", "thread": "s1"}})
        assert refused.is_error and "metadata.speaker" in text_of(refused)
        assert (await call(session, "get_stats"))["total_memories"] == len(turns)


async def test_workspaces_are_isolated_in_every_tool(settings: Settings) -> None:
    async with local_session(settings) as session:
        secret = (await add(session, "Project Falcon launches in May.", workspace="falcon"))["memory_id"]
        public = (await add(session, "The cafeteria closes at 3 pm.", metadata={"tags": ["office"]}))["memory_id"]
        twin = await add(session, "The cafeteria closes at 3 pm.", workspace="falcon")
        assert twin["deduplicated"] is False and twin["workspace"] == "falcon"  # dedup is per workspace

        assert await search_ids(session, "Falcon launch May") == {public}
        assert await search_ids(session, "Falcon launch May", workspace="falcon") == {secret, twin["memory_id"]}
        assert await search_ids(session, "cafeteria", workspace="nowhere") == set()
        assert (await session.call_tool("get_memory", {"memory_id": secret})).is_error
        assert (await call(session, "get_memory", {"memory_id": secret, "workspace": "falcon"}))[
            "workspace"
        ] == "falcon"
        listed = await call(session, "list_memories", {"workspace": "falcon"})
        assert {m["memory_id"] for m in listed["memories"]} == {secret, twin["memory_id"]}
        deleted = await call(session, "delete_memory", {"memory_ids": [secret]})  # default workspace: not there
        assert (deleted["deleted_count"], deleted["not_found"]) == (0, [secret])
        assert (await call(session, "get_stats", {"workspace": "falcon"}))["total_memories"] == 2
        assert (await call(session, "get_stats"))["total_memories"] == 1

        spaces = await call(session, "list_workspaces")
        assert spaces["default"] == "default"
        assert {(w["name"], w["memories"]) for w in spaces["workspaces"]} == {("default", 1), ("falcon", 2)}
        bad_name = await session.call_tool("add_memory", {"text": "x", "workspace": "Has Spaces"})
        assert bad_name.is_error and "workspace" in text_of(bad_name)

        refused = await session.call_tool("delete_workspace", {"name": "falcon", "confirm": "falco"})
        assert refused.is_error
        # The field and what it must be, not "- arguments:".
        assert "- confirm: must repeat the workspace name exactly ('falcon', got 'falco')" in text_of(refused)
        assert "- arguments:" not in text_of(refused)
        dropped = await call(session, "delete_workspace", {"name": "falcon", "confirm": "falcon"})
        assert (dropped["deleted_memories"], dropped["deleted_chunks"]) == (2, 2)
        assert [w["name"] for w in (await call(session, "list_workspaces"))["workspaces"]] == ["default"]
        assert await search_ids(session, "Falcon launch May", workspace="falcon") == set()
        assert await search_ids(session, "cafeteria") == {public}


async def test_memories_are_readable_resources(settings: Settings) -> None:
    async with local_session(settings) as session:
        one = (await add(session, PEANUTS))["memory_id"]
        two = (await add(session, "Falcon notes.", workspace="falcon"))["memory_id"]
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memory://{workspace}/{memory_id}"]
        listed = {str(r.uri) for r in (await session.list_resources()).resources}
        assert listed == {f"memory://default/{one}", f"memory://falcon/{two}"}
        read = await session.read_resource(f"memory://falcon/{two}")
        assert resource_text(read) == "Falcon notes."
        with pytest.raises(Exception, match="no memory"):
            await session.read_resource(f"memory://default/{two}")
