"""Export and import as the adapters call them: every workspace out to JSONL, a JSONL file in."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, BinaryIO

import structlog

from zapomni_core.disk import DiskGuard
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.faults import storage_boundary
from zapomni_core.graph.service import GraphService
from zapomni_core.kernel.registry import Workspaces
from zapomni_core.kernel.writing import WritePipeline
from zapomni_core.progress import ProgressFn
from zapomni_core.transfer.export import ExportReport, ExportSource, export_memories
from zapomni_core.transfer.format import EmbedderInfo
from zapomni_core.transfer.import_job import ImportQueued, checked_path, import_job
from zapomni_core.transfer.importer import ImportPreview, ImportReport, ImportTarget, import_memories, preview_import
from zapomni_core.transfer.requests import ImportSourceRequest
from zapomni_core.transfer.source_import import SourceImport
from zapomni_core.transfer.sources import IMPORT_FORMATS, LineWriter, ReadOptions

log = structlog.get_logger(__name__)


@storage_boundary
class TransferService:
    def __init__(
        self,
        *,
        workspaces: Workspaces,
        embedder: CachedEmbedder,
        writer: WritePipeline,
        graph: GraphService,
        disk: DiskGuard,
        graph_name: str,
        roots: Sequence[Path] = (),
        wake_jobs: Callable[[], None] = lambda: None,
    ) -> None:
        self._workspaces = workspaces
        self._embedder = embedder
        self._writer = writer
        self._graph = graph
        self._disk = disk
        self._graph_name = graph_name
        self._roots = roots  # where the import tool may read (the CLI reads anywhere its user can)
        self._wake_jobs = wake_jobs
        self.writes_committed = 0

    async def export_to(
        self, out: IO[str], progress: ProgressFn | None = None, *, only: str | None = None
    ) -> ExportReport:
        """Write every memory of every workspace (or of workspace `only`) to `out` as portable JSONL
        (docs/export-format.md)."""
        embedder = EmbedderInfo(self._embedder.name, self._embedder.dimension)
        names = [name for name in await self._workspaces.names() if only is None or name == only]
        sources = [ExportSource(name, self._workspaces.stores(name)) for name in names]
        return await export_memories(sources, embedder, out, progress, graph_name=self._graph_name)

    async def import_from(self, src: BinaryIO, progress: ProgressFn | None = None) -> ImportReport:
        """Store the memories of a JSONL export that this store lacks; a bad file changes nothing."""
        target = ImportTarget(self._workspaces, self._embedder, self._writer)
        # The file's size stands in for what it adds: an export holds each vector as text too.
        await self._disk.ensure_writable(_size_of(src))
        report = await import_memories(target, src, progress)
        self.writes_committed += report.imported
        for name in await self._workspaces.names():  # memories imported without their graph get one
            workspace = await self._workspaces.get(name, create=False)
            if workspace is not None and await workspace.stores.graph.count_pending():
                await self._graph.queue_new_memories(workspace)
        return report

    async def queue_import(self, request: ImportSourceRequest) -> ImportQueued:
        """The import tool: the path checked now (inside the allowed roots), the import run by a job."""
        path = checked_path(request, self._roots)
        workspace = await self._workspaces.get(request.workspace, create=True)
        assert workspace is not None
        job = import_job(request, path)
        await workspace.stores.jobs.create(job)
        self._wake_jobs()
        log.info("transfer.import_queued", workspace=workspace.name, job_id=job.id, format=request.format)
        queued = ImportQueued(job_id=job.id, workspace=workspace.name, format=request.format, path=str(path))
        return queued.asked_as(request.path)

    async def preview_from(self, src: BinaryIO) -> ImportPreview:
        """What importing the export `src` would add (validated whole, nothing written)."""
        return await preview_import(ImportTarget(self._workspaces, self._embedder, self._writer), src)

    async def import_source(self, request: ImportSourceRequest, progress: ProgressFn | None = None) -> SourceImport:
        """Import the files of another tool (`IMPORT_FORMATS`): read whole first, then written as an export's lines are;
        with `dry_run`, only read and counted against the store."""
        workspace = self._workspaces.resolve(request.workspace)
        path = Path(request.path).expanduser().resolve()  # the provenance names the file wherever it ran
        embedder = EmbedderInfo(self._embedder.name, self._embedder.dimension)
        with tempfile.TemporaryFile(prefix="zapomni-import-") as lines:
            writer = LineWriter(
                lines, format=request.format, workspace=workspace, embedder=embedder, pieces=self._writer.chunker.split
            )
            options = ReadOptions(user_name=request.user_name)
            await asyncio.to_thread(IMPORT_FORMATS[request.format].read, path, writer, options)
            conversion = writer.finish()
            lines.seek(0)
            if request.dry_run:
                preview = await self.preview_from(lines)
                return SourceImport(str(path), workspace, conversion, preview=preview)
            report = await self.import_from(lines, progress)
        return SourceImport(str(path), workspace, conversion, report=report)


def _size_of(src: BinaryIO) -> int:
    """The bytes left to read in `src`, or 0 when it cannot tell (a pipe)."""
    try:
        return max(os.fstat(src.fileno()).st_size - src.tell(), 0)
    except (OSError, ValueError, AttributeError):
        return 0
