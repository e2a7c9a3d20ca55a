"""Update, delete, dedup, pagination and workspaces on the real engine (embedded FalkorDB, ONNX model)."""

from __future__ import annotations

import asyncio
import io
import random
from pathlib import Path

import pytest

from tests.helpers import open_core
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    DeleteMemoryRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    MemoryMetadata,
    SearchRequest,
    UpdateMemoryRequest,
)

pytestmark = pytest.mark.anyio

SECTIONS = [
    " ".join(f"Section {s} line {n} describes part {s} of the deployment runbook in detail." for n in range(18))
    for s in range(5)
]


def lookups(core: ZapomniCore) -> int:
    """Document and query embeddings asked of the embedder (cache hits included): every call counts."""
    return core.embedder.hits + core.embedder.misses


async def test_an_update_re_embeds_only_what_changed(core: ZapomniCore) -> None:
    text = "\n\n".join(SECTIONS)
    added = await core.memories.add(AddMemoryRequest(text=text))
    assert added.chunks_created >= 4

    before = lookups(core)
    meta = await core.memories.update(
        UpdateMemoryRequest(memory_id=added.memory_id, metadata=MemoryMetadata(tags=["ops"]))
    )
    assert lookups(core) == before and meta.chunks_embedded == 0 and meta.metadata_changed

    edited = text.replace("part 4 of the deployment runbook", "part 4 of the rollback plan")
    before = lookups(core)
    result = await core.memories.update(UpdateMemoryRequest(memory_id=added.memory_id, text=edited))
    assert result.text_changed and not result.metadata_changed  # the tags given before are kept
    assert 1 <= result.chunks_embedded < added.chunks_created
    assert lookups(core) - before == result.chunks_embedded
    assert result.chunks_kept + result.chunks_embedded == result.chunk_count

    stored = await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))
    assert stored.text == edited and stored.tags == ["ops"] and stored.chunk_count == result.chunk_count
    hits = await core.memories.search(SearchRequest(query="rollback plan", mode="keyword", all_chunks=True))
    assert {h.memory_id for h in hits.results} == {added.memory_id}
    assert all("rollback" in h.text for h in hits.results)
    old = await core.memories.search(SearchRequest(query="part 4 deployment runbook", mode="keyword", all_chunks=True))
    assert not any("Section 4" in h.text and "runbook" in h.text.split("Section 4")[1][:80] for h in old.results)


async def test_readers_see_the_old_memory_or_the_new_never_a_mix(core: ZapomniCore) -> None:
    versions = ["\n\n".join(SECTIONS), "\n\n".join(s.replace("deployment", "recovery") for s in SECTIONS)]
    memory_id = (await core.memories.add(AddMemoryRequest(text=versions[0]))).memory_id
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None
    splits = [workspace_pieces(core, v) for v in versions]
    seen: list[tuple[str, ...]] = []
    stop = asyncio.Event()

    async def read() -> None:
        while not stop.is_set():
            chunks = await workspace.stores.reads.chunks(memory_id)
            seen.append(tuple(c.text for c in chunks))

    reader = asyncio.create_task(read())
    for i in range(1, 7):
        await core.memories.update(UpdateMemoryRequest(memory_id=memory_id, text=versions[i % 2]))
    stop.set()
    await reader
    assert len(seen) > 5
    assert set(seen) <= {tuple(splits[0]), tuple(splits[1])}


def workspace_pieces(core: ZapomniCore, text: str) -> list[str]:
    return core.memories._writer.split(text).pieces  # the chunking the engine applies


async def test_the_same_text_added_concurrently_is_stored_once(core: ZapomniCore) -> None:
    results = await asyncio.gather(
        *(core.memories.add(AddMemoryRequest(text="Shared fact: the VPN rotates keys weekly.")) for _ in range(6))
    )
    assert len({r.memory_id for r in results}) == 1
    assert sum(not r.deduplicated for r in results) == 1
    assert (await core.workspaces.stats()).total_memories == 1


async def test_pages_neither_skip_nor_repeat_while_others_add_and_delete(core: ZapomniCore) -> None:
    original = [(await core.memories.add(AddMemoryRequest(text=f"Original note {i}."))).memory_id for i in range(40)]
    rng = random.Random(7)
    deleted: set[str] = set()
    for order in ("newest", "oldest"):
        seen: list[str] = []
        cursor = None
        round_ = 0
        while True:
            page = await core.memories.page(ListMemoriesRequest(limit=7, cursor=cursor, order=order))
            seen += [m.memory_id for m in page.memories]
            round_ += 1
            # Between pages: others add memories and delete some not listed yet.
            await core.memories.add(AddMemoryRequest(text=f"Concurrent note {order} {round_}."))
            unseen = [m for m in original if m not in seen and m not in deleted]
            if unseen:
                victim = rng.choice(unseen)
                await core.memories.delete(DeleteMemoryRequest(memory_ids=[victim]))
                deleted.add(victim)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(set(seen)), "a memory was listed twice"
        survivors = [m for m in original if m not in deleted]
        missing = [m for m in survivors if m not in seen]
        assert not missing, "a memory that existed throughout was skipped"


async def test_export_and_import_cover_every_workspace(core: ZapomniCore, tmp_path: Path) -> None:
    await core.memories.add(AddMemoryRequest(text="Default workspace fact.", metadata=MemoryMetadata(tags=["a"])))
    falcon = await core.memories.add(AddMemoryRequest(text="Falcon fact.", workspace="falcon"))
    out = io.StringIO()
    report = await core.transfer.export_to(out)
    assert report.memories == 2
    target = Settings.from_variables(ZAPOMNI_DATA_DIR=tmp_path / "copy", LOG_LEVEL="WARNING")
    async with open_core(target) as (copy, _info):
        imported = await copy.transfer.import_from(io.BytesIO(out.getvalue().encode()))
        assert imported.imported == 2
        spaces = {w.name: w.memories for w in (await copy.workspaces.list()).workspaces}
        assert spaces == {"default": 1, "falcon": 1}
        got = await copy.memories.get(GetMemoryRequest(memory_id=falcon.memory_id, workspace="falcon"))
        assert got.text == "Falcon fact."
        again = await copy.transfer.import_from(io.BytesIO(out.getvalue().encode()))
        assert (again.imported, again.skipped) == (0, 2)


def hostile_text(rng: random.Random) -> str:
    """Up to 200 characters from every plane, with backslashes, quotes and characters that NFC lengthens."""
    planes = [(0x20, 0x7E), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF)]
    specials = ["\\", '"', "'", "\n", "\ufb4d", "\u0b5c", "\u2126"]
    pieces = [
        rng.choice(specials) if rng.random() < 0.15 else chr(rng.randint(*rng.choice(planes)))
        for _ in range(rng.randint(1, 200))
    ]
    return "".join(pieces)


def shown(text: str) -> str:
    """What a list page shows of a text: its first 200 characters, whitespace collapsed."""
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else flat[:199] + "\u2026"


async def test_a_page_shows_the_start_of_any_text(core: ZapomniCore) -> None:
    # FalkorDB 4.16's `left` and `substring` measure a text in its NFC form but cut its bytes: on
    # texts like these they returned too little, half a character (a page that failed to decode),
    # or crashed the database. Pages read a head cut in Python (zapomni_db.memory_reads.text_head).
    rng = random.Random(3)
    texts = {hostile_text(rng) for _ in range(400)}
    for text in texts:
        await core.memories.add(AddMemoryRequest(text=text))
    previews: list[str] = []
    cursor = None
    while True:
        page = await core.memories.page(ListMemoriesRequest(limit=100, cursor=cursor))
        previews += [m.preview for m in page.memories]
        if not (cursor := page.next_cursor):
            break
    assert sorted(previews) == sorted(shown(text) for text in texts)
