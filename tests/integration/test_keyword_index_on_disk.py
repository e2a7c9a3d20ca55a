"""The keyword index beside the embedded database (tantivy, decision 0044): opened by the next server as it was
left, caught up from the change log, never finding a deleted memory, and made again from the store when it
cannot be trusted. A delete or an update never makes the next server rebuild it."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.helpers import keyword_index_dirs, open_core, until
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    DeleteMemoryRequest,
    MemoryMetadata,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_core.search import keyword_index
from zapomni_core.search.keyword_index import KeywordIndex
from zapomni_core.workspaces.requests import DeleteWorkspaceRequest
from zapomni_db.maintenance import keyword_stamp_key

pytestmark = [pytest.mark.anyio, pytest.mark.own_database]  # the keyword index's files beside the embedded database

TEXTS = [
    "The proxy restarts every connection after error E1047 in the payment service.",
    "Caroline's pottery workshop downtown opens on Saturdays at nine.",
    "Deployment runbook: drain the queue, then roll the workers one by one.",
    "The quarterly report blames the zebrafinch sensor for the missing readings.",
]
QUERIES = ["payment proxy error", "pottery workshop", "roll workers queue", "zebrafinch sensor readings"]


async def keyword_ids(core: ZapomniCore, query: str) -> list[str]:
    found = await core.memories.search(SearchRequest(query=query, mode="keyword", limit=10))
    return [hit.memory_id for hit in found.results]


async def add_all(core: ZapomniCore, texts: list[str]) -> list[str]:
    return [(await core.memories.add(AddMemoryRequest(text=text))).memory_id for text in texts]


def events(logs: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def record(settings: Settings) -> tuple[Path, dict[str, Any]]:
    (directory,) = keyword_index_dirs(settings)
    return directory, json.loads((directory / "zapomni.json").read_text())


async def test_the_next_server_opens_the_index_as_it_was_left_and_ranks_the_same(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS)
        before = [await keyword_ids(core, q) for q in QUERIES]
    assert record(settings)[1]["seq"] == len(TEXTS)  # committed by the searches' catch-up, recorded after
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            after = [await keyword_ids(core, q) for q in QUERIES]
    opened = events(logs, "keyword_index.opened")
    assert opened and opened[0]["chunks"] == len(TEXTS)
    assert not events(logs, "keyword_index.rebuild")
    assert after == before and all(before)


async def test_a_delete_and_an_update_are_never_found_and_never_make_the_next_server_rebuild(
    settings: Settings,
) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
        assert await keyword_ids(core, "zebrafinch") == [ids[3]]
        await core.memories.delete(DeleteMemoryRequest(memory_ids=[ids[3]]))
        await core.memories.update(UpdateMemoryRequest(memory_id=ids[1], text="The kiln moved to the harbour shed."))
        assert await keyword_ids(core, "zebrafinch") == []
        assert await keyword_ids(core, "pottery workshop") == []
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "zebrafinch") == []
            assert await keyword_ids(core, "pottery workshop") == []
            assert await keyword_ids(core, "kiln harbour") == [ids[1]]
            assert len((await core.workspaces.registry.require(None)).keyword_index) == len(TEXTS) - 1
    assert not events(logs, "keyword_index.rebuild")
    assert events(logs, "keyword_index.opened")[0]["chunks"] == len(TEXTS) - 1


async def test_a_server_catches_up_with_what_was_written_after_the_last_commit(settings: Settings) -> None:
    async with open_core(settings) as (writer, _):
        first = await add_all(writer, TEXTS[:2])
        assert await keyword_ids(writer, "pottery workshop") == [first[1]]  # a catch-up commits the first two
        later = await add_all(writer, TEXTS[2:])  # stored, not yet in the index: nothing searched since
        with capture_logs() as logs:  # while the writer is open (the last to close would catch the index up)
            async with open_core(settings) as (reader, _):
                found = {q: await keyword_ids(reader, q) for q in QUERIES}
    assert events(logs, "keyword_index.opened")[0]["chunks"] == 2
    assert found["pottery workshop"] == [first[1]]
    assert found["zebrafinch sensor readings"] == [later[1]]


async def test_changes_applied_again_after_a_crash_before_the_record_are_not_doubled(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
        before = [await keyword_ids(core, q) for q in QUERIES]
    # As a server killed between its commit and the record after it leaves them: the index ahead of its record.
    directory, kept = record(settings)
    (directory / "zapomni.json").write_text(json.dumps({**kept, "seq": 1}))
    async with open_core(settings) as (core, _):
        assert [await keyword_ids(core, q) for q in QUERIES] == before
        assert len((await core.workspaces.registry.require(None)).keyword_index) == len(ids)
    assert record(settings)[1]["seq"] == len(TEXTS)


async def test_an_index_from_another_past_of_the_store_is_made_again(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
        assert await keyword_ids(core, "payment proxy error") == [ids[0]]
    async with open_core(settings) as (core, _):
        # As a restore of a backup taken before the index was made would leave it: the store's stamp is another.
        await core.workspaces.registry.stores(None).maintenance.stamp_keyword_index("restored-from-a-backup")
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "pottery workshop") == [ids[1]]
    rebuilt = events(logs, "keyword_index.rebuild")
    assert rebuilt and "stamp" in str(rebuilt[0]["reason"])
    assert record(settings)[1]["stamp"] != "restored-from-a-backup"  # a new pair, the store stamped with it
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "roll workers queue") == [ids[2]]
    assert not events(logs, "keyword_index.rebuild")


async def test_damaged_index_files_are_made_again_from_the_store(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
        assert await keyword_ids(core, "roll workers queue") == [ids[2]]
    directory, _ = record(settings)
    (directory / "meta.json").write_text("{ half of tantivy's list of segm")
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "roll workers queue") == [ids[2]]
    rebuilt = events(logs, "keyword_index.rebuild")
    assert rebuilt and "tantivy cannot open it" in str(rebuilt[0]["reason"])


async def test_deleting_the_workspace_removes_its_index(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await core.memories.add(AddMemoryRequest(text=TEXTS[3], workspace="scratch"))
        await core.memories.add(AddMemoryRequest(text=TEXTS[0]))
    assert len(keyword_index_dirs(settings)) == 2
    async with open_core(settings) as (core, _):
        client = core.workspaces.registry.stores(None).client
        assert await client.command("EXISTS", keyword_stamp_key("zapomni:scratch")) == 1
        await core.workspaces.delete(DeleteWorkspaceRequest(name="scratch", confirm="scratch"))
        assert len(keyword_index_dirs(settings)) == 1
        assert await client.command("EXISTS", keyword_stamp_key("zapomni:scratch")) == 0  # no key names it


async def test_two_servers_on_one_data_directory_each_find_what_the_other_wrote(settings: Settings) -> None:
    async with open_core(settings) as (one, _), open_core(settings) as (other, _):
        mine = await add_all(one, TEXTS[:1])
        theirs = await add_all(other, TEXTS[1:2])
        assert await keyword_ids(one, "pottery workshop") == theirs
        assert await keyword_ids(other, "payment proxy error") == mine
        await one.memories.delete(DeleteMemoryRequest(memory_ids=theirs))
        assert await keyword_ids(other, "pottery workshop") == []


async def test_while_the_index_is_made_again_searches_answer_from_the_vector_leg_and_say_so_and_adds_still_link(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
    shutil.rmtree(keyword_index_dirs(settings)[0])  # as a lost or damaged index leaves the next server
    monkeypatch.setattr(keyword_index, "INLINE_CATCH_UP", 0)  # as far behind as a large store would be
    release = asyncio.Event()
    apply = KeywordIndex._apply

    async def held(self: KeywordIndex, *args: Any) -> int:
        await release.wait()
        return await apply(self, *args)

    monkeypatch.setattr(KeywordIndex, "_apply", held)
    async with open_core(settings) as (core, _):  # opened without waiting for the index
        index = (await core.workspaces.registry.require(None)).keyword_index
        assert index.building
        found = await core.memories.search(SearchRequest(query="zebrafinch sensor readings", limit=3))
        assert found.results[0].memory_id == ids[3] and found.legs == ["vector"]
        assert found.note is not None and "keyword leg did not answer" in found.note and "being made" in found.note
        keyword = await core.memories.search(SearchRequest(query="zebrafinch", mode="keyword"))
        assert keyword.results == [] and keyword.legs == [] and keyword.note
        # A chat turn's update detection asks the keyword leg too: without it, the add stands and still links.
        said = [
            ("I work at Allegro as a backend engineer.", "2026-01-05"),
            ("I left Allegro, I work at Revolut now.", "2026-03-01"),
        ]
        older, newer = [
            await core.memories.add(AddMemoryRequest(text=text, metadata=MemoryMetadata(speaker="Ola", date=day)))
            for text, day in said
        ]
        assert [replaced.memory_id for replaced in newer.supersedes] == [older.memory_id]
        release.set()
        await until(lambda: not index.building, timeout_s=30, what="the index made again")
        found = await core.memories.search(SearchRequest(query="zebrafinch sensor readings", limit=3))
        assert found.legs == ["vector", "keyword"] and found.note is None
        assert found.results[0].memory_id == ids[3] and "keyword" in found.results[0].matched_by


async def test_the_file_the_index_was_saved_in_before_tantivy_is_removed(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS[:1])
    directory, _ = record(settings)
    shutil.rmtree(directory)  # a store as the previous version left it: its index saved as one file
    saved = directory.with_suffix(".npz")
    saved.write_bytes(b"the hand-written index's arrays")
    async with open_core(settings) as (core, _):
        assert await keyword_ids(core, "payment proxy error") == ids
    assert not saved.exists() and record(settings)[1]["seq"] == 1
