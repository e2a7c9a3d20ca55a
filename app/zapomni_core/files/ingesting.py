"""`ingest_path`: documents (PDF, DOCX, HTML, Markdown, text) from a file or a directory tree, as a job."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from zapomni_core.content.chunking import Chunker
from zapomni_core.errors import ZapomniError
from zapomni_core.files.formats import DOCUMENT_EXTENSIONS, extract_document
from zapomni_core.files.pieces import document_pieces, document_text
from zapomni_core.files.sync import FileContent, FileRef, FileWalk, WalkArgs, walk_outcome
from zapomni_core.files.walker import FoundFile
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_db import GraphStores, JobRow

log = structlog.get_logger(__name__)

KIND = "ingest_path"


class DocumentReader:
    kind = "document"

    def __init__(self, chunker: Chunker) -> None:
        self._chunker = chunker

    def suffixes(self, args: WalkArgs) -> frozenset[str]:
        return DOCUMENT_EXTENSIONS

    def read(self, found: FoundFile, data: bytes) -> FileContent:
        document = extract_document(found.path, data)
        return FileContent(document_text(document), document_pieces(self._chunker, document))

    async def finish(self, stores: GraphStores, memory_id: str, file: FileRef, content: FileContent) -> bool:
        return await stores.files.mark_ingested(memory_id, file.file_hash)


class IngestPath:
    kind = KIND

    def __init__(self, walk: FileWalk, on_changed: Callable[[Workspace], Awaitable[None]] | None = None) -> None:
        self._walk = walk
        self._on_changed = on_changed  # e.g. queue the new documents' entity extraction

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return self._walk.refuses(WalkArgs.from_json(job.args_json))

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        outcome = await self._walk.run(WalkArgs.from_json(job.args_json), run)
        if outcome.changed and self._on_changed is not None:
            await self._on_changed(run.workspace)
        log.info("files.ingested", workspace=run.workspace.name, job_id=job.id, **outcome.counts)
        return walk_outcome(job, outcome)
