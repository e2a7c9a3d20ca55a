"""Backups of the FalkorDB files: a consistent snapshot, a verified copy with a manifest, retention.

A backup is a directory ``zapomni-<UTC YYYYmmddTHHMMSSZ>/`` holding

    dump.rdb          the snapshot: what a restore loads
    appendonlydir/    the AOF as it was at the time (a secondary copy, not used by restore)
    manifest.json     what the snapshot holds (counts, schema, embedder, a vector-query probe) and
                      the size and sha256 of every file

It is written under a hidden temporary name and renamed into place only when complete (and, by
default, verified), so a directory with the final name is always a whole backup.

Consistency: the server's counts, schema version and embedder are read just before and just after
the BGSAVE forks; when both reads agree, that is what the snapshot holds, and a scratch server that
loads the copy must find exactly that (`matched_server` in the manifest). The probe, a top-k vector
query, is recorded from that load: a live server's vector index may answer differently (see
`_state_and_saves`), a loaded RDB always the same. The RDB on disk is our snapshot only until the
server saves again; the copy checks the server's save counter after opening the file.

Everything here is synchronous and talks Redis directly (raw GRAPH.RO_QUERY replies): it runs in
operator commands and against scratch servers, where an event loop would only add ceremony.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import redis
import structlog
from falkordb.helpers import stringify_param_value
from pydantic import TypeAdapter, ValidationError

from zapomni_db.errors import DatabaseError, DatabaseUnavailable
from zapomni_db.server import ScratchServer, direct_client

log = structlog.get_logger(__name__)

FORMAT = "zapomni-backup"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
RDB_NAME = "dump.rdb"
AOF_DIR_NAME = "appendonlydir"
PROBE_K = 10
BACKUP_PREFIX = "zapomni-"
_NAME = re.compile(r"^zapomni-(\d{8}T\d{6}Z)(?:-(\d+))?$")
_PARTIAL_PREFIX = ".partial-"
_STAMP = "%Y%m%dT%H%M%SZ"
_BLOCK = 1 << 20
# Another save landing between ours and the copy is rare (save points are minutes apart); a few
# tries are plenty, and a server that saves continuously is worth an error rather than a loop.
_SNAPSHOT_ATTEMPTS = 3
_AOF_COPY_ATTEMPTS = 3

_COUNT_QUERIES = {
    "memories": "MATCH (m:Memory) RETURN count(m)",
    "chunks": "MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN count(c)",
    "nodes": "MATCH (n) RETURN count(n)",
    "relationships": "MATCH ()-[r]->() RETURN count(r)",
}
_SCHEMA_VERSION = "MATCH (s:SchemaVersion {id: 'schema'}) RETURN s.version"
_EMBEDDER = "MATCH (e:EmbedderInfo {id: 'embedder'}) RETURN e.model, e.dimension"
# The probe: a stored chunk's own vector as the query. Ties are ordered by id so the same index
# contents give the same list.
_PROBE_TAIL = (
    "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, c.embedding) YIELD node, score "
    "RETURN c.id, node.id ORDER BY score, node.id"
)
_PROBE_PICK = f"MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) WITH c LIMIT 1 {_PROBE_TAIL}"
_PROBE_RERUN = f"MATCH (c:Chunk {{id: $chunk_id}}) WITH c LIMIT 1 {_PROBE_TAIL}"
_INDEX_STATUS = "CALL db.indexes() YIELD label, status RETURN label, status"
_EMPTY_GRAPH = "empty key"


class BackupError(DatabaseError):
    """A backup could not be made, read or trusted; the message says which and why."""


class BackupInvalid(BackupError):
    """A backup directory is incomplete, damaged, or does not hold what its manifest says."""


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the backup directory, with "/" separators
    size: int
    sha256: str


@dataclass(frozen=True)
class EmbedderClaim:
    model: str
    dimension: int


@dataclass(frozen=True)
class GraphCounts:
    memories: int = 0
    chunks: int = 0
    nodes: int = 0
    relationships: int = 0


@dataclass(frozen=True)
class Probe:
    """A top-k vector query with a stored chunk's embedding, and the chunk ids it returned in order."""

    chunk_id: str
    k: int
    ids: list[str]


@dataclass(frozen=True)
class GraphState:
    """What a verification compares: the same queries against the live server and a loaded copy."""

    schema_version: int = 0
    embedder: EmbedderClaim | None = None
    counts: GraphCounts = field(default_factory=GraphCounts)
    probe: Probe | None = None


@dataclass(frozen=True)
class Manifest:
    format: str
    format_version: int
    created_at: str
    zapomni_version: str
    redis_version: str
    falkordb_version: str
    graph_name: str
    state: GraphState
    # True when the copy was loaded and matched the live server's counts, schema and embedder at
    # the instant of the snapshot (False: not verified, or writes kept landing around the fork).
    matched_server: bool
    files: list[FileEntry]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False) + "\n"

    @property
    def size_bytes(self) -> int:
        return sum(entry.size for entry in self.files)


_MANIFEST = TypeAdapter(Manifest)


@dataclass(frozen=True)
class BackupEntry:
    """A directory named like a backup; `manifest` is None when its manifest is missing or unreadable."""

    path: Path
    manifest: Manifest | None
    problem: str | None = None

    @property
    def complete(self) -> bool:
        return self.manifest is not None


@dataclass(frozen=True)
class BackupResult:
    path: Path
    manifest: Manifest
    verified: bool
    snapshot_s: float  # BGSAVE and copying the files
    verify_s: float


# -- Reading a graph's state ------------------------------------------------------------------


def _cypher(query: str, params: dict[str, Any] | None = None) -> str:
    if not params:
        return query
    header = " ".join(f"{name}={stringify_param_value(value)}" for name, value in params.items())
    return f"CYPHER {header} {query}"


def _queue_state(pipe: Any, graph: str, *, probe: bool, probe_chunk_id: str | None = None) -> None:
    """Queue the state queries on a pipeline; `_parse_state` reads their replies in this order."""
    for query in _COUNT_QUERIES.values():
        pipe.execute_command("GRAPH.RO_QUERY", graph, query)
    pipe.execute_command("GRAPH.RO_QUERY", graph, _SCHEMA_VERSION)
    pipe.execute_command("GRAPH.RO_QUERY", graph, _EMBEDDER)
    if not probe:
        return
    if probe_chunk_id is None:
        pipe.execute_command("GRAPH.RO_QUERY", graph, _cypher(_PROBE_PICK, {"k": PROBE_K}))
    else:
        pipe.execute_command("GRAPH.RO_QUERY", graph, _cypher(_PROBE_RERUN, {"k": PROBE_K, "chunk_id": probe_chunk_id}))


def _state_replies(*, probe: bool) -> int:
    return len(_COUNT_QUERIES) + 2 + int(probe)


def _rows(reply: Any, *, optional: bool = False) -> list[list[Any]]:
    """The rows of a raw GRAPH.RO_QUERY reply; a graph that does not exist yet has none."""
    if isinstance(reply, Exception):
        if _EMPTY_GRAPH in str(reply) or optional:
            return []
        raise BackupError(f"a query for the backup failed: {reply}")
    return [[_text(value) for value in row] for row in reply[1]]


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _parse_state(replies: list[Any]) -> GraphState:
    count_replies = replies[: len(_COUNT_QUERIES)]
    counts = GraphCounts(
        **{
            name: int(rows[0][0]) if (rows := _rows(reply)) else 0
            for name, reply in zip(_COUNT_QUERIES, count_replies, strict=True)
        }
    )
    schema_rows = _rows(replies[len(_COUNT_QUERIES)])
    embedder_rows = _rows(replies[len(_COUNT_QUERIES) + 1])
    # No vector index (a new store, or mid re-embed) fails the probe: the backup then has none.
    probe_rows = (
        _rows(replies[len(_COUNT_QUERIES) + 2], optional=True) if len(replies) > _state_replies(probe=False) else []
    )
    return GraphState(
        schema_version=int(schema_rows[0][0]) if schema_rows else 0,
        embedder=EmbedderClaim(str(embedder_rows[0][0]), int(embedder_rows[0][1])) if embedder_rows else None,
        counts=counts,
        probe=Probe(chunk_id=probe_rows[0][0], k=PROBE_K, ids=[row[1] for row in probe_rows]) if probe_rows else None,
    )


def read_state(client: redis.Redis, graph: str, *, probe_chunk_id: str | None = None) -> GraphState:
    """Counts, schema version, embedder claim and the probe (with `probe_chunk_id`'s vector, or the
    first linked chunk's), read in one transaction."""
    pipe = client.pipeline(transaction=True)
    _queue_state(pipe, graph, probe=True, probe_chunk_id=probe_chunk_id)
    return _parse_state(pipe.execute(raise_on_error=False))


def wait_for_indexes(client: redis.Redis, graph: str, timeout_s: float = 600.0) -> None:
    """A server that just loaded an RDB rebuilds its indexes in the background: wait until they are built."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            rows = _rows(client.execute_command("GRAPH.RO_QUERY", graph, _INDEX_STATUS))
        except redis.ResponseError as exc:
            rows = _rows(exc)
        if all(status == "OPERATIONAL" for _label, status in rows):
            return
        if time.monotonic() > deadline:
            raise BackupError("the indexes of the loaded backup did not finish building in time")
        time.sleep(0.1)


def state_differences(expected: GraphState, actual: GraphState, *, probe: bool = True) -> list[str]:
    """What differs between two states, in words; empty when they match."""
    differences = []
    for name in _COUNT_QUERIES:
        want, got = getattr(expected.counts, name), getattr(actual.counts, name)
        if want != got:
            differences.append(f"{name}: expected {want}, found {got}")
    if expected.schema_version != actual.schema_version:
        differences.append(f"schema version: expected {expected.schema_version}, found {actual.schema_version}")
    if expected.embedder != actual.embedder:
        differences.append(f"embedder: expected {expected.embedder}, found {actual.embedder}")
    if probe and expected.probe != actual.probe:
        differences.append("the probe vector query returned different chunks")
    return differences


# -- Snapshot ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """A BGSAVE that finished, and the server's state (no probe) at its fork when that could be pinned down.

    `state` is None when writes landed between the reads around the BGSAVE: the snapshot then
    holds some state between the two, and only the file itself can say which.
    """

    state: GraphState | None
    saves: int  # the server's rdb_saves counter once our save had started
    saved_at: float  # the server's rdb_last_save_time after our save
    taken_at: datetime
    redis_version: str
    falkordb_version: str


def take_snapshot(client: redis.Redis, graph: str, *, attempts: int = 3, timeout_s: float = 3600.0) -> Snapshot:
    """BGSAVE between two reads of the state, and wait until the RDB is written.

    The reads run in MULTI/EXEC, on the server's main thread, so no FalkorDB write commits in the
    middle of one. When both reads agree (and the save started between them), that is the state
    at the fork. A BGSAVE inside the MULTI would not do: Redis only schedules it there, to fork up
    to 100 ms later. CLIENT PAUSE WRITE would not do either: with a FalkorDB write in flight it
    crashes the server (Redis 8.2 asserts on the write the module propagates while paused).
    """
    deadline = time.monotonic() + timeout_s
    for attempt in range(1, attempts + 1):
        _wait_until_no_save(client, deadline)
        taken_at = datetime.now(UTC)
        before, saves_before = _state_and_saves(client, graph)
        try:
            client.bgsave()
        except redis.ResponseError as exc:
            # An automatic save or an AOF rewrite got in first: wait for it and take our own.
            log.info("backup.snapshot.waiting", reason=str(exc))
            continue
        after, saves = _state_and_saves(client, graph)
        stable = before == after and saves == saves_before + 1
        if stable or attempt == attempts:
            break
        # Writes landed in the few milliseconds around the fork: let the save finish and retry.
        log.info("backup.snapshot.moving", attempt=attempt)
        _wait_until_no_save(client, deadline)
    else:
        raise BackupError("the server kept refusing to snapshot (another save or AOF rewrite was always running)")
    persistence = _wait_until_no_save(client, deadline)
    if persistence.get("rdb_last_bgsave_status") != "ok":
        raise BackupError("the server could not write its snapshot (rdb_last_bgsave_status is not ok; see its log)")
    if not stable:
        log.warning("backup.snapshot.moving", detail="writes kept landing; the manifest will describe the file")
    return Snapshot(
        state=before if stable else None,
        saves=saves,
        saved_at=float(persistence.get("rdb_last_save_time", 0)),
        taken_at=taken_at,
        redis_version=str(client.info("server").get("redis_version", "unknown")),
        falkordb_version=_falkordb_version(client),
    )


def _state_and_saves(client: redis.Redis, graph: str) -> tuple[GraphState, int]:
    # No probe on the live server: its index may have been built by replaying the AOF, and
    # FalkorDB 4.16 then answers a top-k vector query with only k/2 nodes. The probe is taken
    # from a load of the copied RDB instead, which is how a restored server builds its index.
    pipe = client.pipeline(transaction=True)
    _queue_state(pipe, graph, probe=False)
    pipe.info("persistence")
    replies = pipe.execute(raise_on_error=False)
    return _parse_state(replies[:-1]), int(replies[-1].get("rdb_saves", 0))


def _wait_until_no_save(client: redis.Redis, deadline: float) -> dict[str, Any]:
    """Wait until no RDB save or AOF rewrite runs (either would make BGSAVE refuse)."""
    while True:
        persistence = client.info("persistence")
        busy = ("rdb_bgsave_in_progress", "aof_rewrite_in_progress")
        if not any(int(persistence.get(key, 0)) for key in busy):
            return persistence
        if time.monotonic() > deadline:
            raise BackupError("the server's snapshot did not finish in time")
        time.sleep(0.05)


def _falkordb_version(client: redis.Redis) -> str:
    with contextlib.suppress(redis.RedisError):
        for module in client.execute_command("MODULE", "LIST"):  # redis-py parses each into a dict
            if _text(module.get(b"name")) == "graph":
                return str(module.get(b"ver"))
    return "unknown"


def _server_file_names(client: redis.Redis) -> tuple[str, str]:
    """The server's RDB file and AOF directory names (CONFIG may be renamed away: then the defaults)."""
    names = [RDB_NAME, AOF_DIR_NAME]
    for i, key in enumerate(("dbfilename", "appenddirname")):
        with contextlib.suppress(redis.RedisError):
            value = client.config_get(key).get(key)
            if value:
                names[i] = str(value)
    return names[0], names[1]


# -- Files ------------------------------------------------------------------------------------


def _copy_open_file(source: Any, target: Path) -> FileEntry:
    """Copy from an open binary file, hashing as it goes, and fsync the copy."""
    digest = hashlib.sha256()
    size = 0
    with target.open("wb") as out:
        while block := source.read(_BLOCK):
            digest.update(block)
            out.write(block)
            size += len(block)
        out.flush()
        os.fsync(out.fileno())
    return FileEntry(path=target.name, size=size, sha256=digest.hexdigest())


def file_digest(path: Path) -> tuple[int, str]:
    """Size and sha256 of a file."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_snapshot_rdb(client: redis.Redis, snapshot: Snapshot, source: Path, target_dir: Path) -> FileEntry | None:
    """Copy the RDB our BGSAVE wrote; None when the server saved again before we opened it (retry)."""
    with source.open("rb") as handle:
        # Redis replaces dump.rdb by rename, so an open file stays the one we opened: if no other
        # save has started by now, it is ours whatever happens next.
        if int(client.info("persistence").get("rdb_saves", 0)) != snapshot.saves:
            return None
        mtime = os.fstat(handle.fileno()).st_mtime
        if mtime + 2 < snapshot.saved_at:
            raise BackupError(
                f"{source} is older than the snapshot the server just wrote: is this the server's data "
                "directory (FALKORDB_DATA_DIR in server mode)?"
            )
        return _copy_open_file(handle, target_dir / RDB_NAME)


def _copy_aof(source_dir: Path, target_dir: Path) -> list[FileEntry]:
    """Copy the AOF directory; a rewrite replacing files under us means another try."""
    for attempt in range(1, _AOF_COPY_ATTEMPTS + 1):
        shutil.rmtree(target_dir, ignore_errors=True)
        target_dir.mkdir()
        try:
            entries = []
            for path in sorted(p for p in source_dir.iterdir() if p.is_file()):
                with path.open("rb") as handle:
                    entry = _copy_open_file(handle, target_dir / path.name)
                entries.append(FileEntry(f"{target_dir.name}/{entry.path}", entry.size, entry.sha256))
            _fsync_dir(target_dir)
            return entries
        except FileNotFoundError:
            log.info("backup.aof_changed_during_copy", attempt=attempt)
    # The AOF is only a secondary copy: the backup stands on its RDB.
    shutil.rmtree(target_dir, ignore_errors=True)
    log.warning("backup.aof_skipped", reason="the AOF kept changing while it was copied")
    return []


# -- Manifest and verification ----------------------------------------------------------------


def read_manifest(backup_dir: Path) -> Manifest:
    """The parsed manifest of a backup directory; BackupInvalid when missing or unreadable."""
    path = backup_dir / MANIFEST_NAME
    try:
        manifest = _MANIFEST.validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BackupInvalid(f"{backup_dir} is not a complete backup: it has no {MANIFEST_NAME}") from None
    except (OSError, ValidationError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise BackupInvalid(f"the manifest of {backup_dir} cannot be read: {reason}") from None
    if manifest.format != FORMAT or manifest.format_version > FORMAT_VERSION:
        raise BackupInvalid(
            f"{backup_dir} is a {manifest.format} v{manifest.format_version} backup; this Zapomni reads "
            f"{FORMAT} up to v{FORMAT_VERSION}"
        )
    if not any(entry.path == RDB_NAME for entry in manifest.files):
        raise BackupInvalid(f"the manifest of {backup_dir} lists no {RDB_NAME}")
    return manifest


def check_files(backup_dir: Path, manifest: Manifest) -> None:
    """Every file the manifest lists is there with its size and sha256; BackupInvalid otherwise."""
    for entry in manifest.files:
        path = backup_dir / entry.path
        if ".." in Path(entry.path).parts or Path(entry.path).is_absolute():
            raise BackupInvalid(f"the manifest of {backup_dir} lists a file outside it: {entry.path}")
        if not path.is_file():
            raise BackupInvalid(f"{backup_dir} is missing {entry.path}")
        size, sha256 = file_digest(path)
        if size != entry.size:
            raise BackupInvalid(f"{path} is {size} bytes but the manifest says {entry.size} (truncated or altered)")
        if sha256 != entry.sha256:
            raise BackupInvalid(f"{path} does not match its sha256 in the manifest (damaged or altered)")


def load_state(db_dir: Path, graph: str, *, probe_chunk_id: str | None, appendonly: bool) -> GraphState:
    """Start a scratch server over `db_dir` and read its state (indexes built first)."""
    with ScratchServer(db_dir, appendonly=appendonly) as server:
        client = direct_client(unix_socket=server.socket, timeout_s=300.0)
        try:
            wait_for_indexes(client, graph)
            return read_state(client, graph, probe_chunk_id=probe_chunk_id)
        finally:
            client.close()


@contextlib.contextmanager
def scratch_directory(near: Path) -> Iterator[Path]:
    """A temporary directory beside `near` (same filesystem, so files can be linked), else in the temp dir."""
    try:
        path = Path(tempfile.mkdtemp(prefix=".zapomni-scratch-", dir=near))
    except OSError:
        path = Path(tempfile.mkdtemp(prefix="zapomni-scratch-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def place_rdb(rdb: Path, db_dir: Path) -> None:
    """Put `rdb` into `db_dir` as dump.rdb: a hard link when possible, else a copy.

    A link is safe: Redis never writes an RDB in place (it writes a temp file and renames it over),
    so a server loading the link cannot change the backup's file.
    """
    target = db_dir / RDB_NAME
    try:
        os.link(rdb, target)
    except OSError:
        shutil.copyfile(rdb, target)


def _state_of_copy(backup_dir: Path, graph: str, probe_chunk_id: str | None = None) -> GraphState:
    """Load the backup's RDB in a scratch server (the AOF off: an RDB alone) and read its state."""
    with scratch_directory(backup_dir.parent) as scratch:
        place_rdb(backup_dir / RDB_NAME, scratch)
        try:
            return load_state(scratch, graph, probe_chunk_id=probe_chunk_id, appendonly=False)
        except DatabaseUnavailable as exc:
            raise BackupInvalid(f"the snapshot in {backup_dir} does not load: {exc}") from None


def verify_backup(backup_dir: Path) -> Manifest:
    """Check a backup end to end; return its manifest or raise BackupInvalid.

    Manifest, then sizes and checksums, then a scratch server loads a copy of the RDB and must
    answer the manifest's counts, schema version, embedder and probe vector query exactly.
    """
    started = time.perf_counter()
    manifest = read_manifest(backup_dir)
    check_files(backup_dir, manifest)
    probe_id = manifest.state.probe.chunk_id if manifest.state.probe else None
    state = _state_of_copy(backup_dir, manifest.graph_name, probe_id)
    differences = state_differences(manifest.state, state, probe=manifest.state.probe is not None)
    if differences:
        raise BackupInvalid(f"{backup_dir} does not hold what its manifest says: " + "; ".join(differences))
    log.info("backup.verified", path=str(backup_dir), duration_s=round(time.perf_counter() - started, 3))
    return manifest


# -- Making a backup --------------------------------------------------------------------------


def _zapomni_version() -> str:
    try:
        return metadata.version("zapomni")
    except metadata.PackageNotFoundError:
        return "unknown"


def _final_path(backups_dir: Path, taken_at: datetime) -> Path:
    base = f"{BACKUP_PREFIX}{taken_at.strftime(_STAMP)}"
    candidate, n = backups_dir / base, 1
    while candidate.exists():
        n += 1
        candidate = backups_dir / f"{base}-{n}"
    return candidate


def create_backup(
    client: redis.Redis, db_files_dir: Path, backups_dir: Path, graph: str, *, verify: bool = True
) -> BackupResult:
    """Snapshot the server behind `client`, whose files are in `db_files_dir`, into a new backup directory.

    With `verify`, a scratch server loads the copy, which must hold the server's counts, schema
    and embedder at the instant of the snapshot (that load also records the probe), and the files
    are read back against their checksums. One load, not a second `verify_backup`: loading builds
    the vector index, the slow part, and the probe it records is what every later load must
    answer (`verify_backup`, a restore). Nothing with a backup's name appears unless the backup is
    complete, and verified when asked.
    """
    backups_dir.mkdir(parents=True, exist_ok=True)
    rdb_name, aof_name = _server_file_names(client)
    partial = Path(tempfile.mkdtemp(prefix=_PARTIAL_PREFIX, dir=backups_dir))
    try:
        started = time.perf_counter()
        snapshot, rdb_entry = _snapshot_and_copy(client, graph, db_files_dir / rdb_name, partial)
        aof_source = db_files_dir / aof_name
        aof_entries = _copy_aof(aof_source, partial / AOF_DIR_NAME) if aof_source.is_dir() else []
        copied = time.perf_counter()
        log.info("backup.copied", files=1 + len(aof_entries), bytes=rdb_entry.size + sum(e.size for e in aof_entries))
        state, matched = _describe_copy(partial, graph, snapshot.state, load=verify)
        manifest = Manifest(
            format=FORMAT,
            format_version=FORMAT_VERSION,
            created_at=snapshot.taken_at.isoformat().replace("+00:00", "Z"),
            zapomni_version=_zapomni_version(),
            redis_version=snapshot.redis_version,
            falkordb_version=snapshot.falkordb_version,
            graph_name=graph,
            state=state,
            matched_server=matched,
            files=[rdb_entry, *aof_entries],
        )
        _write_manifest(partial, manifest)
        if verify:
            check_files(partial, read_manifest(partial))
        verified = time.perf_counter()
        final = _final_path(backups_dir, snapshot.taken_at)
        partial.rename(final)
        _fsync_dir(backups_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    log.info("backup.created", path=str(final), memories=state.counts.memories, verified=verify, matched=matched)
    return BackupResult(
        path=final,
        manifest=manifest,
        verified=verify,
        snapshot_s=round(copied - started, 3),
        verify_s=round(verified - copied, 3),
    )


def _describe_copy(backup_dir: Path, graph: str, at_fork: GraphState | None, *, load: bool) -> tuple[GraphState, bool]:
    """The state for the manifest, and whether the loaded copy matched the server at the fork."""
    if not load and at_fork is not None:
        return at_fork, False  # unverified: counts from the server, no probe
    described = _state_of_copy(backup_dir, graph)
    if at_fork is None:
        log.warning(
            "backup.unpinned", detail="writes kept landing around the snapshot; the manifest describes the file"
        )
        return described, False
    differences = state_differences(at_fork, described, probe=False)
    if differences:
        raise BackupInvalid(
            "the snapshot does not hold what the server had when it was taken: " + "; ".join(differences)
        )
    return described, True


def _snapshot_and_copy(client: redis.Redis, graph: str, rdb: Path, target_dir: Path) -> tuple[Snapshot, FileEntry]:
    for attempt in range(1, _SNAPSHOT_ATTEMPTS + 1):
        snapshot = take_snapshot(client, graph)
        log.info("backup.snapshot", state_pinned=snapshot.state is not None)
        try:
            entry = _copy_snapshot_rdb(client, snapshot, rdb, target_dir)
        except FileNotFoundError:
            raise BackupError(
                f"the snapshot is not at {rdb}: is this the server's data directory (FALKORDB_DATA_DIR in server "
                "mode), readable by this process?"
            ) from None
        if entry is not None:
            return snapshot, entry
        log.info("backup.snapshot.superseded", attempt=attempt)
    raise BackupError("the server kept saving new snapshots while the backup copied its file; try again")


def _write_manifest(backup_dir: Path, manifest: Manifest) -> None:
    path = backup_dir / MANIFEST_NAME
    with path.open("w", encoding="utf-8") as handle:
        handle.write(manifest.to_json())
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_dir(backup_dir)


# -- Listing and retention --------------------------------------------------------------------


def _sort_key(path: Path) -> tuple[str, int]:
    match = _NAME.match(path.name)
    assert match is not None
    return match.group(1), int(match.group(2) or 1)


def list_backups(backups_dir: Path) -> list[BackupEntry]:
    """Directories named like backups, oldest first, each with its manifest or the reason it has none."""
    if not backups_dir.is_dir():
        return []
    candidates = [p for p in backups_dir.iterdir() if _NAME.match(p.name) and p.is_dir() and not p.is_symlink()]
    entries = []
    for path in sorted(candidates, key=_sort_key):
        try:
            entries.append(BackupEntry(path, read_manifest(path)))
        except BackupInvalid as exc:
            entries.append(BackupEntry(path, None, str(exc)))
    return entries


def prune_backups(backups_dir: Path, keep: int) -> list[Path]:
    """Delete complete backups older than the newest `keep`; return what was deleted.

    Only directories with a backup's name and a readable manifest count; anything else (partial
    copies, damaged backups, other files) is never touched.
    """
    if keep < 1:
        raise ValueError("keep at least one backup")
    complete = [entry.path for entry in list_backups(backups_dir) if entry.complete]
    doomed = complete[:-keep]
    for path in doomed:
        shutil.rmtree(path)
        log.info("backup.pruned", path=str(path))
    return doomed
