"""One walk of a file or directory into a workspace, incrementally: what ingest_path and index_codebase share.

A file is a memory keyed by its path and content: the walk reads each file the walker lets
through, and a file whose bytes hash as they did last time is left alone without being parsed. A
new file is added; a changed one replaces its memory (its old chunks, graph evidence and code
nodes go with it); a file that no longer exists is removed. Files excluded by this walk's patterns
but still on disk are kept. Every refused or unreadable file is a failed item with its reason,
and the walk goes on with the rest.

A file's write ends by recording its hash on its memory (`FileReader.finish`), so a file whose
write was interrupted has no hash and is redone by the next walk: a job that dies resumes by
walking again, finding what it finished unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import structlog

from zapomni_core.content.metadata import MAX_TEXT_BYTES
from zapomni_core.context import JOB_CONTEXT
from zapomni_core.disk import DiskGuard, write_estimate
from zapomni_core.errors import EmbedderUnavailable
from zapomni_core.files.formats import UnreadableFile
from zapomni_core.files.pieces import Piece
from zapomni_core.files.walker import (
    FileRefused,
    FoundFile,
    OutsideRoots,
    PathRefused,
    Refused,
    WalkPlan,
    plan_walk,
    read_file,
    walk,
)
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_core.kernel.writing import WritePipeline, new_id
from zapomni_core.progress import Progress
from zapomni_core.threads import off_loop
from zapomni_db import GraphStores, JobRecord, JobRow, MemoryRecord, StoredFile

log = structlog.get_logger(__name__)

# "empty": files with nothing but whitespace (an empty __init__.py): nothing to remember, and no error.
COUNTS = ("files", "added", "updated", "unchanged", "removed", "empty", "refused", "failed")


@dataclass(frozen=True)
class WalkArgs:
    """What a walk job was asked: stored as the job's args, so a resumed job walks the same way."""

    path: str  # where the client's path resolved when the job was queued: what the walk reads
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    asked: str = ""  # the path as the client sent it ("" in jobs queued before it was kept)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, value: str) -> WalkArgs:
        return cls(**json.loads(value))


@dataclass(frozen=True)
class FileRef:
    """One file of a walk: its path as walked (a memory's `source`), inside the walk's base directory."""

    path: str
    relative: str
    base: Path
    file_hash: str


@dataclass(frozen=True)
class FileContent:
    """What a reader made of one file: the memory's text and its chunks."""

    text: str
    pieces: list[Piece]
    extra: object = None  # the reader's own result (a code file's parse), handed back to `finish`


@dataclass(frozen=True)
class FileLimits:
    roots: tuple[Path, ...]  # resolved (`walker.allowed_roots`)
    max_file_bytes: int


class FileReader(Protocol):
    kind: str  # the memories' kind: "document" or "code"

    def suffixes(self, args: WalkArgs) -> frozenset[str]:
        """The file extensions this walk reads; other files are passed over."""

    def read(self, found: FoundFile, data: bytes) -> FileContent:
        """Parse one file (in a worker thread); raises UnreadableFile."""

    async def finish(self, stores: GraphStores, memory_id: str, file: FileRef, content: FileContent) -> bool:
        """The file's last write, which records `file_hash` on its memory; False when the memory is gone."""


@dataclass
class WalkOutcome:
    counts: Counter[str]
    plan: WalkPlan
    changed: bool  # a file was added, replaced or removed


def file_identity(path: str, file_hash: str) -> str:
    """A file memory's `content_hash`: its path and content, so the same text at two paths is two files."""
    return hashlib.sha256(f"file\0{path}\0{file_hash}".encode(errors="surrogatepass")).hexdigest()


def walk_job(kind: str, args: WalkArgs) -> JobRecord:
    return JobRecord(id=new_id(), kind=kind, created_at=time.time(), args_json=args.to_json(), unit="files")


def walk_outcome(job: JobRow, outcome: WalkOutcome) -> JobOutcome:
    """Completed, or completed with errors when any file was refused or could not be read."""
    troubled = job.failed or outcome.counts["refused"] or outcome.counts["failed"]
    return JobOutcome("completed_with_errors" if troubled else "completed", outcome.counts["files"], outcome.counts)


Unsaid = tuple[str, ...]


def _unsaid(plan: WalkPlan, args: WalkArgs) -> Unsaid:
    """Where the walk really reads when the client's path leads elsewhere (a symlink): a server path its failure
    lines name that the client never sent."""
    said = Path(os.path.normpath(os.path.expanduser(args.asked or args.path)))
    return tuple({str(path) for path in (plan.target, plan.base) if not said.is_relative_to(path)})


async def _fail(
    run: JobRun[Workspace], path: str, exc: FileRefused | UnreadableFile | EmbedderUnavailable, unsaid: Unsaid
) -> None:
    """One file's failure line, with every server path it may name hidden from a remote reader."""
    await run.fail_item(path, str(exc), (*unsaid, *exc.paths, *exc.hosts))


class FileWalk:
    def __init__(self, reader: FileReader, writer: WritePipeline, disk: DiskGuard, limits: FileLimits) -> None:
        self._reader = reader
        self._writer = writer
        self._disk = disk
        self._limits = limits

    def plan(self, path: str) -> WalkPlan:
        """Check a path before a job is queued for it; raises PathRefused with the reason."""
        return plan_walk(path, self._limits.roots)

    def refuses(self, args: WalkArgs) -> OutsideRoots | None:
        """A path outside this server's allowed roots is left to a server whose roots hold it; any other trouble
        (the path is gone) fails the job when it runs, where every server would find the same."""
        try:
            self.plan(args.path)
        except OutsideRoots as exc:
            return exc
        except PathRefused:
            pass
        return None

    async def run(self, args: WalkArgs, run: JobRun[Workspace]) -> WalkOutcome:
        plan = self.plan(args.path)
        entries = await asyncio.to_thread(self._entries, plan, args)
        found = [e for e in entries if isinstance(e, FoundFile)]
        # Every count is reported, zeros too: "0 removed" is an answer.
        counts: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))
        unsaid = _unsaid(plan, args)
        for refused in (e for e in entries if isinstance(e, Refused)):
            await run.fail_item(refused.path, refused.reason, (*unsaid, *refused.hidden))
            counts["refused"] += 1
        stored = await self._stored(run.workspace.stores, plan)
        seen: set[str] = set()
        total = len(found)
        await run.report(Progress(0, total, "files", "reading"))
        for done, item in enumerate(found, start=1):
            path = str(plan.base / item.relative)
            seen.add(path)
            counts[await self._one(run, plan, args, unsaid, item, path, stored.get(path))] += 1
            await run.report(Progress(done, total, "files", f"read {item.relative}"))
        for path, old in stored.items():
            if path not in seen and not os.path.lexists(path):
                await run.workspace.stores.writes.delete([old.memory_id])
                counts["removed"] += 1
        counts["files"] = total
        changed = any(counts[k] for k in ("added", "updated", "removed"))
        return WalkOutcome(counts, plan, changed)

    def _entries(self, plan: WalkPlan, args: WalkArgs) -> list[FoundFile | Refused]:
        return list(
            walk(
                plan,
                roots=self._limits.roots,
                include=args.include,
                exclude=args.exclude,
                suffixes=self._reader.suffixes(args),
                max_file_bytes=self._limits.max_file_bytes,
            )
        )

    async def _stored(self, stores: GraphStores, plan: WalkPlan) -> dict[str, StoredFile]:
        if plan.target.is_dir():
            return await stores.files.stored_files(str(plan.target).rstrip(os.sep) + os.sep)
        return {p: f for p, f in (await stores.files.stored_files(str(plan.target))).items() if p == str(plan.target)}

    async def _one(
        self,
        run: JobRun[Workspace],
        plan: WalkPlan,
        args: WalkArgs,
        unsaid: Unsaid,
        item: FoundFile,
        path: str,
        old: StoredFile | None,
    ) -> str:
        """Bring one file up to date; the count it adds to (added, updated, unchanged, refused, failed)."""
        try:
            data = await asyncio.to_thread(
                read_file, item, roots=self._limits.roots, max_file_bytes=self._limits.max_file_bytes
            )
        except FileRefused as exc:
            await _fail(run, path, exc, unsaid)
            return "refused"
        if not data.strip():
            if old is None:
                return "empty"
            await run.workspace.stores.writes.delete([old.memory_id])  # it said something before; now nothing
            return "removed"
        file_hash = hashlib.sha256(data).hexdigest()
        if (
            old is not None
            and old.file_hash == file_hash
            and old.kind == self._reader.kind
            # A code file also needs its File node under this codebase (an imported one has none yet).
            and (self._reader.kind != "code" or old.codebase == str(plan.base))
        ):
            return "unchanged"
        try:
            content = await off_loop(self._reader.read, item, data)
            _check_size(content)
        except UnreadableFile as exc:
            await _fail(run, path, exc, unsaid)
            return "failed"
        try:
            rows = await self._writer.placed_rows(
                [p.text for p in content.pieces], [p.place for p in content.pieces], JOB_CONTEXT
            )
        except EmbedderUnavailable as exc:
            await _fail(run, path, exc, unsaid)
            return "failed"
        text_bytes = len(content.text.encode(errors="surrogatepass"))
        await self._disk.ensure_writable(write_estimate(text_bytes, len(rows[0].embedding), chunks=len(rows)))
        if old is not None:  # the old memory goes first: the new one has the same identity when only its write failed
            await run.workspace.stores.writes.delete([old.memory_id])
        memory = MemoryRecord(
            id=new_id(),
            text=content.text,
            created_at=time.time(),
            content_hash=file_identity(path, file_hash),
            tags=list(args.tags),
            source=path,
            date_ts=time.time(),
            kind=self._reader.kind,
        )
        await run.report(run.progress)  # raises JobLost before writing when the job is no longer ours
        if not await run.workspace.stores.writes.insert(memory, rows):
            return "unchanged"  # the same file at the same path is stored (another walk was quicker)
        if not await self._reader.finish(
            run.workspace.stores, memory.id, FileRef(path, item.relative, plan.base, file_hash), content
        ):
            # Deleted between its insert and its hash: nothing of this file is stored now.
            await run.fail_item(path, "its memory was deleted while it was being written; walk again to add it")
            return "failed"
        log.info("file.ingested", path=path, kind=self._reader.kind, chunks=len(rows), replaced=old is not None)
        return "updated" if old is not None else "added"


def _check_size(content: FileContent) -> None:
    if not content.text.strip() or not content.pieces:
        raise UnreadableFile("no text to remember in it")
    size = len(content.text.encode(errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise UnreadableFile(f"its text is {size / 1e6:.1f} MB, above the {MAX_TEXT_BYTES // 2**20} MB a memory holds")
