"""Backup and restore on a real embedded store of 600 memories: round trip, refusals, rollback, retention, CLI.

One store is built per module (the embedder makes that the slow part) and every test works on a copy
of its files, or of one backup of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.helpers import graph_client, open_core, writes_resumed
from tests.processes import child_env
from zapomni_core import Settings, ZapomniCore
from zapomni_core.graph.requests import GetRelatedRequest, GraphStatusRequest
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.search.keyword_index import KeywordIndexDirs
from zapomni_db import EmbeddedDatabase
from zapomni_db.backup import (
    MANIFEST_NAME,
    RDB_NAME,
    BackupInvalid,
    RestoreFailed,
    create_backup,
    prune_backups,
    restore,
    verify_backup,
)
from zapomni_db.embedded_layout import EmbeddedPaths
from zapomni_db.schema import current_version
from zapomni_db.server import direct_client
from zapomni_ops.backups import BackupFailed, check_live, make_backup, restore_backup, undo_restore

pytestmark = pytest.mark.own_database  # backups and restores act on the data directory's files

# Enough for a snapshot that takes a while and searches that rank many candidates; 2,000 took 67 s to build in a
# full run (the embedder), 600 about a third of that.
MEMORIES = 600
SUBJECTS = ["The red shipment", "A blue container", "Our green tractor", "The amber lamp", "A silver bicycle",
            "The wooden crate", "An iron anchor", "The paper lantern"]  # fmt: skip
VERBS = ["arrived at", "left", "was inspected at", "was repaired near", "was lost near"]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Lagos", "Quito", "Perth", "Tallinn", "Hanoi", "Denver", "Cairo"]
DAYS = ["on Monday", "on Tuesday", "midweek", "on Thursday", "on Friday", "at the weekend", "overnight"]
QUERIES = [
    "shipment arriving in Lisbon", "bicycle repaired in Kyoto", "anchor lost near Oslo", "lantern inspection in Cairo",
    "tractor leaving Denver on Friday", "record 432", "wooden crate in Hanoi", "container at Lagos on Monday",
    "amber lamp Perth overnight", "silver bicycle Tallinn weekend",
]  # fmt: skip


def memory_text(i: int) -> str:
    subject, verb = SUBJECTS[i % len(SUBJECTS)], VERBS[(i // 8) % len(VERBS)]
    place, day = PLACES[(i // 3) % len(PLACES)], DAYS[(i // 7) % len(DAYS)]
    return f"{subject} {verb} the {place} harbour {day} (record {i})."


@dataclass(frozen=True)
class Observed:
    """What must survive a backup and restore unchanged."""

    memories: int
    chunks: int
    schema_version: int
    embedder_claim: tuple[str, int]
    searches: list[list[tuple[str, str]]]  # per query: (memory id, chunk id) in rank order


@dataclass(frozen=True)
class Store:
    template: Path  # a data directory whose db/ every test copies
    observed: Observed  # read from the live store right after it was built


async def observe(core: ZapomniCore, data_dir: Path) -> Observed:
    searches = []
    for query in QUERIES:
        for mode in ("hybrid", "vector"):
            result = await core.memories.search(SearchRequest(query=query, limit=10, mode=mode))
            searches.append([(hit.memory_id, hit.chunk_id) for hit in result.results])
    stats = await core.workspaces.stats()
    async with graph_client(data_dir) as client:
        version = await current_version(client)
        claim = await client.ro_query("MATCH (e:EmbedderInfo {id: 'embedder'}) RETURN e.model, e.dimension")
    return Observed(stats.total_memories, stats.total_chunks, version, (claim[0][0], int(claim[0][1])), searches)


async def build_store(data_dir: Path) -> Observed:
    # everysec: the build only needs the data, not an fsync per memory. No knowledge graph: a backup copies the
    # database's files whatever they hold, and graph jobs left half done would resume in every test's copy.
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_APPENDFSYNC="everysec", ZAPOMNI_GRAPH_AUTO="false"
    )
    async with open_core(settings) as (core, _info):
        for start in range(0, MEMORIES, 100):
            await asyncio.gather(
                *(
                    core.memories.add(
                        AddMemoryRequest.model_validate(
                            {"text": memory_text(i), "metadata": {"tags": [PLACES[(i // 3) % len(PLACES)].lower()]}}
                        )
                    )
                    for i in range(start, min(start + 100, MEMORIES))
                )
            )
        observed = await observe(core, data_dir)
    return observed


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    template = Path(tempfile.mkdtemp(prefix="zt-", dir="/tmp"))
    try:
        observed = asyncio.run(build_store(template))
        assert (observed.memories, observed.chunks) == (MEMORIES, MEMORIES)
        yield Store(template, observed)
    finally:
        shutil.rmtree(template, ignore_errors=True)


@pytest.fixture(scope="module")
def store_backup(store: Store) -> Iterator[Path]:
    """One verified backup of the store, made with the storage primitives."""
    work = Path(tempfile.mkdtemp(prefix="zt-", dir="/tmp"))
    try:
        copy_store(store, work)
        database = EmbeddedDatabase(work)
        database.open()
        try:
            client = direct_client(unix_socket=database.socket)
            result = create_backup(client, work / "db", work / "backups", "zapomni")
            client.close()
        finally:
            database.close()
        yield result.path
    finally:
        shutil.rmtree(work, ignore_errors=True)


def copy_store(store: Store, data_dir: Path) -> None:
    shutil.copytree(store.template / "db", data_dir / "db")


def copy_backup(backup: Path, into: Path) -> Path:
    return Path(shutil.copytree(backup, into / backup.name))


def tree_digest(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def safety_copies(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("db.before-restore-*"))


def leftovers(data_dir: Path) -> list[Path]:
    """Safety copies and staging directories a restore may leave beside db/."""
    return [*safety_copies(data_dir), *sorted(data_dir.glob(".db.restoring-*"))]


def rewrite_manifest(backup: Path, change: dict[str, int]) -> None:
    manifest = json.loads((backup / MANIFEST_NAME).read_text())
    manifest["state"]["counts"].update(change)
    (backup / MANIFEST_NAME).write_text(json.dumps(manifest))


@pytest.mark.anyio
async def test_round_trip_restores_counts_schema_claim_and_search_results(
    store: Store, settings: Settings, data_dir: Path
) -> None:
    copy_store(store, data_dir)
    async with open_core(settings) as (core, _info):
        before = await observe(core, data_dir)
        outcome = make_backup(settings)
    assert before == store.observed  # a copy opens exactly as the store was written
    manifest = verify_backup(outcome.result.path)  # checksums, and a fresh load answers the same probe
    assert (manifest.state.counts.memories, manifest.state.counts.chunks) == (MEMORIES, MEMORIES)
    assert manifest.matched_server and outcome.result.verified and manifest.state.probe is not None
    assert outcome.result.path.parent == data_dir / "backups"

    shutil.rmtree(data_dir / "db")  # the disaster
    result = restore_backup(settings, outcome.result.path.name)
    assert result.safety_copy is None  # there was nothing left to keep
    assert (data_dir / "db" / RDB_NAME).is_file() and (data_dir / "db" / "appendonlydir").is_dir()
    async with open_core(settings) as (core, _info):
        after = await observe(core, data_dir)
    assert after == before


@pytest.mark.anyio
async def test_restore_over_live_data_keeps_a_safety_copy(
    store: Store, store_backup: Path, settings: Settings, data_dir: Path
) -> None:
    copy_store(store, data_dir)
    async with open_core(settings) as (core, _info):
        await writes_resumed(core)
        extra = await core.memories.add(AddMemoryRequest(text="Written after the backup was taken."))
    files_before = tree_digest(data_dir / "db")
    assert KeywordIndexDirs.beside(data_dir).proven(settings.graph_name) is not None  # left by the last to close

    result = restore_backup(settings, str(store_backup))
    # The index beside the data is the replaced files': no search is answered from it before the next load.
    assert KeywordIndexDirs.beside(data_dir).proven(settings.graph_name) is None
    assert result.safety_copy is not None and leftovers(data_dir) == [result.safety_copy]
    assert tree_digest(result.safety_copy) == files_before  # the replaced files, byte for byte
    async with open_core(settings) as (core, _info):
        stats = await core.workspaces.stats()
        found = await core.memories.search(SearchRequest(query="Written after the backup was taken.", limit=3))
    assert stats.total_memories == MEMORIES
    assert extra.memory_id not in {hit.memory_id for hit in found.results}


@pytest.mark.anyio
async def test_check_compares_the_running_database_and_undo_puts_the_safety_copy_back(
    store: Store, store_backup: Path, settings: Settings, data_dir: Path
) -> None:
    copy_store(store, data_dir)
    async with open_core(settings) as (core, _info):
        await writes_resumed(core)
        await core.memories.add(AddMemoryRequest(text="Written after the backup was taken."))
    result = restore_backup(settings, str(store_backup))
    assert check_live(settings, str(store_backup)) == []  # the running database holds the backup

    async with open_core(settings) as (core, _info):
        await writes_resumed(core)
        await core.memories.add(AddMemoryRequest(text="Written after the restore."))
    differences = check_live(settings, str(store_backup))
    assert f"memories: expected {MEMORIES}, found {MEMORIES + 1}" in differences

    assert result.safety_copy is not None
    assert KeywordIndexDirs.beside(data_dir).proven(settings.graph_name) is not None
    aside = undo_restore(settings, result.safety_copy)
    assert KeywordIndexDirs.beside(data_dir).proven(settings.graph_name) is None
    assert aside is not None and aside.is_dir()  # the restored files are kept too, never deleted
    async with open_core(settings) as (core, _info):
        found = await core.memories.search(SearchRequest(query="Written after the backup was taken.", limit=1))
        assert (await core.workspaces.stats()).total_memories == MEMORIES + 1
    assert found.results[0].text == "Written after the backup was taken."


@pytest.mark.anyio
async def test_damaged_backups_are_refused_and_nothing_changes(
    store: Store, store_backup: Path, settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    copy_store(store, data_dir)
    files_before = tree_digest(data_dir / "db")

    truncated = copy_backup(store_backup, tmp_path / "truncated")
    rdb = truncated / RDB_NAME
    os.truncate(rdb, rdb.stat().st_size // 2)
    flipped = copy_backup(store_backup, tmp_path / "flipped")
    with (flipped / RDB_NAME).open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    no_manifest = copy_backup(store_backup, tmp_path / "no-manifest")
    (no_manifest / MANIFEST_NAME).unlink()
    garbled = copy_backup(store_backup, tmp_path / "garbled")
    (garbled / MANIFEST_NAME).write_text('{"format": "zapomni-backup", "files": [')

    cases = {
        truncated: "(truncated or altered)",
        flipped: "does not match its sha256",
        no_manifest: "has no manifest.json",
        garbled: "cannot be read",
    }
    for backup, reason in cases.items():
        with pytest.raises(BackupInvalid, match=re.escape(reason)):
            verify_backup(backup)
        with pytest.raises(BackupFailed) as refused:
            restore_backup(settings, str(backup))
        assert reason in str(refused.value) and "nothing was changed" in str(refused.value)
        assert tree_digest(data_dir / "db") == files_before
        assert leftovers(data_dir) == []
    async with open_core(settings) as (core, _info):
        assert (await core.workspaces.stats()).total_memories == MEMORIES


@pytest.mark.anyio
async def test_a_backup_that_does_not_hold_what_its_manifest_says_is_refused(
    store: Store, store_backup: Path, settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    """Checksums fine, the snapshot loads, but a verifying load finds other counts than the manifest."""
    copy_store(store, data_dir)
    files_before = tree_digest(data_dir / "db")
    lying = copy_backup(store_backup, tmp_path)
    rewrite_manifest(lying, {"memories": MEMORIES + 1})

    with pytest.raises(BackupFailed, match=rf"memories: expected {MEMORIES + 1}, found {MEMORIES}"):
        restore_backup(settings, str(lying))
    assert tree_digest(data_dir / "db") == files_before
    assert leftovers(data_dir) == []
    async with open_core(settings) as (core, _info):
        assert (await core.workspaces.stats()).total_memories == MEMORIES


@contextlib.contextmanager
def small_filesystem(size_bytes: int, at: Path | None = None) -> Iterator[Path]:
    """A tmpfs of `size_bytes` (root only): a volume of its own, or a disk that fills up."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a filesystem")
    mount_point = at or Path(tempfile.mkdtemp(prefix="zt-fs-", dir="/tmp"))
    mount_point.mkdir(exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "none", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        # The embedded keeper releases its lock a moment before its process (holding keeper.log) exits.
        deadline = time.monotonic() + 10
        while subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                subprocess.run(["umount", "--lazy", str(mount_point)], check=True)
                break
            time.sleep(0.1)
        mount_point.rmdir()


@pytest.mark.anyio
async def test_a_restore_that_runs_out_of_disk_changes_nothing(store: Store, store_backup: Path) -> None:
    """The disk fills while the AOF is written from the restored snapshot, beside the current files."""
    current = sum(path.stat().st_size for path in (store.template / "db").rglob("*") if path.is_file())
    rdb_size = (store_backup / RDB_NAME).stat().st_size
    # Room for the current files and the copied dump.rdb, not for the AOF written from it.
    with small_filesystem(current + rdb_size + 512 * 1024) as mount_point:
        data_dir = mount_point / "d"
        data_dir.mkdir()
        copy_store(store, data_dir)
        files_before = tree_digest(data_dir / "db")

        with pytest.raises(RestoreFailed, match="nothing was changed") as failed:
            restore(store_backup, data_dir / "db", embedded=EmbeddedPaths(data_dir))
        assert "writing the AOF" in str(failed.value)
        assert tree_digest(data_dir / "db") == files_before
        assert leftovers(data_dir) == []
        settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")
        async with open_core(settings) as (core, _info):
            assert (await core.workspaces.stats()).total_memories == MEMORIES


def test_restore_into_a_mount_point_keeps_the_safety_copy_inside(store: Store, store_backup: Path) -> None:
    """A container volume cannot be renamed: the previous files move into a hidden directory in it."""
    with small_filesystem(64 * 1024 * 1024) as db_dir:
        shutil.copytree(store.template / "db", db_dir, dirs_exist_ok=True)
        files_before = tree_digest(db_dir)
        result = restore(store_backup, db_dir, server_address=("127.0.0.1", 1))
        assert result.safety_copy is not None and result.safety_copy.parent == db_dir
        assert result.safety_copy.name.startswith(".before-restore-")
        assert tree_digest(result.safety_copy) == files_before
        assert sorted(path.name for path in db_dir.iterdir()) == [result.safety_copy.name, "appendonlydir", RDB_NAME]


def test_a_swap_that_fails_part_way_is_rolled_back(store: Store, store_backup: Path) -> None:
    """Something in the volume cannot be moved aside (a mount of its own): what was moved comes back."""
    with small_filesystem(64 * 1024 * 1024) as db_dir:
        shutil.copytree(store.template / "db", db_dir, dirs_exist_ok=True)
        # Sorted after appendonlydir and dump.rdb, which are moved aside before it fails.
        with small_filesystem(1024 * 1024, at=db_dir / "zz-other-mount") as stuck:
            (stuck / "note.txt").write_text("not the database's")
            files_before = tree_digest(db_dir)
            names_before = sorted(path.name for path in db_dir.iterdir())
            with pytest.raises(RestoreFailed, match="rolled back"):
                restore(store_backup, db_dir, server_address=("127.0.0.1", 1))
            assert tree_digest(db_dir) == files_before
            assert sorted(path.name for path in db_dir.iterdir()) == names_before  # no staging or safety left


@pytest.mark.anyio
async def test_restore_refuses_while_the_embedded_database_is_in_use(
    store: Store, store_backup: Path, settings: Settings, data_dir: Path
) -> None:
    copy_store(store, data_dir)
    async with open_core(settings) as (core, _info):
        files_before = tree_digest(data_dir / "db")
        with pytest.raises(BackupFailed, match="is running; stop every Zapomni process using it"):
            restore_backup(settings, str(store_backup))
        assert leftovers(data_dir) == []
        assert (await core.workspaces.stats()).total_memories == MEMORIES  # still serving
    # The server saved on the way down (new bytes, same files); the restore moved nothing aside.
    assert set(tree_digest(data_dir / "db")) == set(files_before) and safety_copies(data_dir) == []


def test_retention_keeps_the_newest_complete_backups_only(store_backup: Path, tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    backups.mkdir()
    names = [f"zapomni-2020010{day}T000000Z" for day in range(1, 6)]
    for name in names:
        shutil.copytree(store_backup, backups / name)
    damaged = backups / "zapomni-20191231T000000Z"  # older, but not a complete backup: never deleted
    shutil.copytree(store_backup, damaged)
    (damaged / MANIFEST_NAME).unlink()
    partial = backups / ".partial-abc123"
    partial.mkdir()
    (backups / "notes.txt").write_text("mine")
    (backups / "zapomni-important").mkdir()

    removed = prune_backups(backups, keep=2)

    assert sorted(path.name for path in removed) == names[:3]
    remaining = sorted(path.name for path in backups.iterdir())
    assert remaining == sorted([*names[3:], damaged.name, partial.name, "notes.txt", "zapomni-important"])


def test_backup_command_applies_retention(store: Store, store_backup: Path, settings: Settings, data_dir: Path) -> None:
    copy_store(store, data_dir)
    backups = data_dir / "backups"
    backups.mkdir()
    for day in (1, 2, 3):
        shutil.copytree(store_backup, backups / f"zapomni-2020010{day}T000000Z")
    outcome = make_backup(settings, keep=2)
    assert [path.name for path in outcome.pruned] == ["zapomni-20200101T000000Z", "zapomni-20200102T000000Z"]
    assert sorted(path.name for path in backups.iterdir()) == ["zapomni-20200103T000000Z", outcome.result.path.name]


@pytest.mark.anyio
async def test_a_backup_taken_while_memories_are_added_describes_its_own_snapshot(
    store: Store, settings: Settings, data_dir: Path
) -> None:
    copy_store(store, data_dir)
    async with open_core(settings) as (core, _info):
        await writes_resumed(core)
        stop, first_added = asyncio.Event(), asyncio.Event()

        async def keep_adding() -> int:
            added = 0
            while not stop.is_set():
                await core.memories.add(AddMemoryRequest(text=f"Added during the backup, number {added}."))
                added += 1
                first_added.set()
            return added

        writer = asyncio.create_task(keep_adding())
        # The backup starts once an add is acknowledged: on a loaded machine 0.2 s was not always enough.
        await asyncio.wait_for(first_added.wait(), timeout=60)
        try:
            outcome = await asyncio.to_thread(make_backup, settings)
        finally:
            stop.set()
        added = await writer
    counts = outcome.result.manifest.state.counts
    assert added > 0 and MEMORIES < counts.memories <= MEMORIES + added
    assert outcome.result.verified  # a fresh load of the copy held exactly what the manifest says


def zapomni(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env(ZAPOMNI_DATA_DIR=str(data_dir), LOG_LEVEL="WARNING")
    return run_cli(args, env)


def test_cli_backup_list_and_restore(store: Store, data_dir: Path) -> None:
    copy_store(store, data_dir)
    made = zapomni(data_dir, "backup", "--json")
    assert made.returncode == 0, made.stderr
    backup = json.loads(made.stdout)
    assert (backup["memories"], backup["chunks"], backup["verified"]) == (MEMORIES, MEMORIES, True)
    assert Path(backup["path"]).parent == data_dir / "backups"

    listed = zapomni(data_dir, "restore", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(row["name"], row["complete"]) for row in json.loads(listed.stdout)] == [(Path(backup["path"]).name, True)]

    restored = zapomni(data_dir, "restore", "latest", "--json")
    assert restored.returncode == 0, restored.stderr
    summary = json.loads(restored.stdout)
    assert summary["restored_from"] == backup["path"] and summary["memories"] == MEMORIES
    assert summary["safety_copy"] is not None and Path(summary["safety_copy"]).is_dir()

    os.truncate(Path(backup["path"]) / RDB_NAME, 1000)
    refused = zapomni(data_dir, "restore", Path(backup["path"]).name)
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.startswith("zapomni restore: ") and "nothing was changed" in refused.stderr
    missing = zapomni(data_dir, "restore")
    assert missing.returncode == 2 and "name a backup" in missing.stderr


@pytest.mark.anyio
async def test_a_backup_carries_the_knowledge_graph(data_dir: Path) -> None:
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=True, ZAPOMNI_JOB_POLL_S=0.2
    )

    async def graph_of(core: ZapomniCore) -> tuple[Any, list[tuple[str, str]]]:
        related = await core.graph.related(GetRelatedRequest(entity="Maria Garcia"))
        return (await core.graph.status(GraphStatusRequest())).graph, sorted(
            (item.entity.name, item.relation.type) for item in related.related
        )

    async with open_core(settings) as (core, _info):
        await core.memories.add(AddMemoryRequest(text="Maria Garcia lives in Berlin and works for Siemens."))
        deadline = time.monotonic() + 60
        while (await core.graph.status(GraphStatusRequest())).graph.memories_pending or not (
            await core.graph.status(GraphStatusRequest())
        ).graph.entities:
            assert time.monotonic() < deadline, "the graph was never built"
            await asyncio.sleep(0.2)
        built = await graph_of(core)
        outcome = make_backup(settings)
    assert ("Berlin", "LIVES_IN") in built[1] and built[0].relations >= 2

    shutil.rmtree(data_dir / "db")
    restore_backup(settings, outcome.result.path.name)
    async with open_core(settings) as (core, _info):
        assert await graph_of(core) == built
