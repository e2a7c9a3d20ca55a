"""The keyword index saved beside the embedded database: read back when it is this store's past, never
holding a deleted memory's words, ignored (and rebuilt) when it cannot be trusted."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.helpers import open_core, saved_keyword_files, until
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest, DeleteMemoryRequest, SearchRequest
from zapomni_core.workspaces.requests import DeleteWorkspaceRequest
from zapomni_db.maintenance import keyword_stamp_key

pytestmark = [pytest.mark.anyio, pytest.mark.own_database]  # the keyword index files beside the embedded database

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


async def test_the_next_server_reads_the_saved_index_and_ranks_the_same(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS)
        before = [await keyword_ids(core, q) for q in QUERIES]
    assert len(saved_keyword_files(settings)) == 1  # written on close
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            after = [await keyword_ids(core, q) for q in QUERIES]
    loaded = events(logs, "keyword_index.loaded")
    assert loaded and loaded[0]["chunks"] == len(TEXTS)
    assert not events(logs, "keyword_index.file_ignored")
    assert not events(logs, "keyword_index.saved")  # a server that only read leaves the file as it found it
    assert after == before and all(before)


async def test_a_delete_leaves_no_word_of_the_memory_in_any_saved_file(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
    (saved,) = saved_keyword_files(settings)
    assert b"zebrafinch" in saved.read_bytes()
    async with open_core(settings) as (core, _):
        await core.memories.delete(DeleteMemoryRequest(memory_ids=[ids[3]]))
        # Gone as the delete returns, not at the next save.
        assert all(b"zebrafinch" not in path.read_bytes() for path in saved_keyword_files(settings))
        assert await keyword_ids(core, "zebrafinch") == []
    assert saved_keyword_files(settings)  # written again on close, without it
    assert all(b"zebrafinch" not in path.read_bytes() for path in saved_keyword_files(settings))
    async with open_core(settings) as (core, _):
        assert await keyword_ids(core, "zebrafinch") == []
        assert await keyword_ids(core, "pottery workshop") == [ids[1]]


async def test_an_update_removes_the_old_words_from_the_saved_file(settings: Settings) -> None:
    from zapomni_core.memories.requests import UpdateMemoryRequest

    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
    async with open_core(settings) as (core, _):
        await core.memories.update(UpdateMemoryRequest(memory_id=ids[3], text="The sensor was replaced in May."))
        assert all(b"zebrafinch" not in path.read_bytes() for path in saved_keyword_files(settings))
    async with open_core(settings) as (core, _):
        assert await keyword_ids(core, "zebrafinch") == []
        assert await keyword_ids(core, "sensor replaced") == [ids[3]]


async def test_a_server_catches_up_from_the_saved_index_with_what_another_wrote_since(settings: Settings) -> None:
    async with open_core(settings) as (writer, _):
        first = await add_all(writer, TEXTS[:2])
        assert await (await writer.workspaces.registry.require(None)).keyword_index.save()
        later = await add_all(writer, TEXTS[2:])
        with capture_logs() as logs:
            async with open_core(settings) as (reader, _):
                found = {q: await keyword_ids(reader, q) for q in QUERIES}
    loaded = events(logs, "keyword_index.loaded")
    assert loaded and loaded[0]["chunks"] == 2  # from the file, then the two written since from the store
    assert found["pottery workshop"] == [first[1]]
    assert found["zebrafinch sensor readings"] == [later[1]]


async def test_a_file_from_another_past_of_the_store_is_ignored(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
    async with open_core(settings) as (core, _):
        # As a restore of a backup taken before the save would leave it: the store's stamp is another.
        stores = core.workspaces.registry.stores(None)
        await stores.maintenance.stamp_keyword_index("restored-from-a-backup")
        await stores.writes.delete([ids[0]])  # and the memory is gone from the file's point of view...
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "payment proxy error") == []
            assert await keyword_ids(core, "pottery workshop") == [ids[1]]
    assert not events(logs, "keyword_index.loaded") or events(logs, "keyword_index.loaded")[0]["chunks"] == 3


async def test_a_forged_stamp_makes_the_server_rebuild(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS)
    (saved,) = saved_keyword_files(settings)
    kept = saved.read_bytes()
    async with open_core(settings) as (core, _):
        await core.workspaces.registry.stores(None).maintenance.stamp_keyword_index("another-store")
        saved.write_bytes(kept)  # the file of before, beside a store whose stamp is no longer its own
        ws = core.workspaces.registry
        ws._open.clear()  # open the workspace again in this process, as a new server would
        with capture_logs() as logs:
            assert await keyword_ids(core, "pottery workshop")
    ignored = events(logs, "keyword_index.file_ignored")
    assert ignored and "stamp" in str(ignored[0]["reason"])
    assert not events(logs, "keyword_index.loaded")


async def test_an_unreadable_file_is_rebuilt_from_the_store(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        ids = await add_all(core, TEXTS)
    (saved,) = saved_keyword_files(settings)
    saved.write_bytes(saved.read_bytes()[: len(saved.read_bytes()) // 2])
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "roll workers queue") == [ids[2]]
    assert events(logs, "keyword_index.file_unreadable")


async def test_a_file_in_the_first_format_is_read_and_the_next_save_writes_the_current_one(
    settings: Settings,
) -> None:
    # Format 1 (before decision 0032): ids as a JSON list, counts as float32, no id order. A store saved by the
    # previous version must not rebuild its index from every chunk on upgrade (minutes at a million chunks).
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS)
        before = [await keyword_ids(core, q) for q in QUERIES]
    (saved,) = saved_keyword_files(settings)
    with np.load(saved) as data:
        arrays = {name: data[name] for name in data.files if name != "id_order"}
    meta = json.loads(json.loads(arrays["meta"].tobytes())[0])
    ids = [chunk_id.decode() for chunk_id in arrays["chunk_ids"]]
    arrays["meta"] = np.frombuffer(json.dumps([json.dumps({**meta, "format": 1})]).encode(), dtype=np.uint8)
    arrays["chunk_ids"] = np.frombuffer(json.dumps(ids).encode(), dtype=np.uint8)
    arrays["counts"] = arrays["counts"].astype(np.float32)
    with saved.open("wb") as out:
        np.savez(out, **arrays)
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert [await keyword_ids(core, q) for q in QUERIES] == before
            await core.memories.add(AddMemoryRequest(text="A new note about the kiln."))  # so it saves again
    loaded = events(logs, "keyword_index.loaded")
    assert loaded and loaded[0]["chunks"] == len(TEXTS) and not events(logs, "keyword_index.file_ignored")
    with np.load(saved_keyword_files(settings)[0]) as data:
        assert json.loads(json.loads(data["meta"].tobytes())[0])["format"] == 2 and "id_order" in data.files


async def test_deleting_the_workspace_removes_its_saved_index(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await core.memories.add(AddMemoryRequest(text=TEXTS[3], workspace="scratch"))
        await core.memories.add(AddMemoryRequest(text=TEXTS[0]))
    assert len(saved_keyword_files(settings)) == 2
    async with open_core(settings) as (core, _):
        client = core.workspaces.registry.stores(None).client
        assert await client.command("EXISTS", keyword_stamp_key("zapomni:scratch")) == 1
        await core.workspaces.delete(DeleteWorkspaceRequest(name="scratch", confirm="scratch"))
        assert len(saved_keyword_files(settings)) == 1
        assert all(b"zebrafinch" not in path.read_bytes() for path in saved_keyword_files(settings))
        assert await client.command("EXISTS", keyword_stamp_key("zapomni:scratch")) == 0  # no key names it


async def test_a_save_that_fails_leaves_the_previous_file_usable(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS)
    (saved,) = saved_keyword_files(settings)
    # What the save on close writes first cannot be created (a directory holds its name): it fails, as a save
    # cut short by a kill or a full disk would, after the note below was added.
    blocker = saved.with_name(f".{saved.name}.{os.getpid()}.tmp")
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            kiln = await add_all(core, ["The kiln firing schedule moved to Thursdays."])
            blocker.mkdir()
    assert events(logs, "keyword_index.save_failed")
    blocker.rmdir()
    with capture_logs() as logs:
        async with open_core(settings) as (core, _):
            assert await keyword_ids(core, "kiln firing schedule") == kiln
    loaded = events(logs, "keyword_index.loaded")
    assert loaded and loaded[0]["chunks"] == len(TEXTS), "the previous file was not used: the store was re-stamped"


async def test_a_save_removes_what_a_killed_save_left_half_written(settings: Settings) -> None:
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS[:1])
    (saved,) = saved_keyword_files(settings)
    abandoned = saved.with_name(f".{saved.name}.99999999.tmp")  # past any pid_max: its writer is gone
    mine = saved.with_name(f".{saved.name}.{os.getppid()}.tmp")  # a live process's: it may still be writing
    abandoned.write_bytes(b"half of an index")
    mine.write_bytes(b"being written")
    async with open_core(settings) as (core, _):
        await add_all(core, TEXTS[1:2])
    assert not abandoned.exists() and mine.read_bytes() == b"being written"
    mine.unlink()


async def test_a_running_server_saves_its_index_once_it_is_far_enough_ahead_of_the_file(settings: Settings) -> None:
    ahead = settings.model_copy(update={"keyword_save_after": 3})
    async with open_core(ahead) as (core, _):
        with capture_logs() as logs:
            ids = await add_all(core, TEXTS)
            assert await keyword_ids(core, "pottery workshop") == [ids[1]]  # a catch-up: 4 chunks, no file yet
            await until(lambda: bool(saved_keyword_files(ahead)), timeout_s=30, what="a background save")
            (saved,) = saved_keyword_files(ahead)
            assert b"zebrafinch" in saved.read_bytes()
            written = saved.stat().st_mtime_ns
            # One chunk more is not enough, and the next save waits SAVE_INTERVAL_S anyway.
            await add_all(core, ["A note about the kiln."])
            assert await keyword_ids(core, "kiln") and saved.stat().st_mtime_ns == written
        assert len(events(logs, "keyword_index.saved")) == 1
    with capture_logs() as logs:
        async with open_core(ahead) as (core, _):
            assert await keyword_ids(core, "kiln")
    assert events(logs, "keyword_index.loaded")[0]["chunks"] == len(TEXTS) + 1  # the save on close had the fifth
