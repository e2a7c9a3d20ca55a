"""The import tool's background job: another tool's files imported where jobs run, with progress, durable.

The import is idempotent (stable ids, stored memories skipped), so a job taken over after its worker died simply
runs again: what the first attempt wrote is skipped, the rest written. A file that cannot be read fails the job
with the importer's message (file, line or conversation, what is wrong), having written nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import structlog
from pydantic import Field

from zapomni_core.errors import ZapomniError
from zapomni_core.files.walker import OutsideRoots, PathRefused, plan_walk
from zapomni_core.jobs.replies import AskedPath
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_core.kernel.writing import new_id
from zapomni_core.progress import Progress, ProgressFn
from zapomni_core.transfer.format import TransferError
from zapomni_core.transfer.requests import ImportSourceRequest
from zapomni_core.transfer.source_import import SourceImport
from zapomni_db import JobRecord, JobRow

log = structlog.get_logger(__name__)

KIND = "import_source"
RunImport = Callable[[ImportSourceRequest, ProgressFn], Coroutine[Any, Any, SourceImport]]


class ImportQueued(AskedPath):
    job_id: str = Field(description="Follow it with job_status(job_id) (wait_s waits for the end).")
    workspace: str
    format: str
    path: str = Field(
        description="The file or folder the job reads, resolved on the server (for a client on another machine: "
        "the path as it was given)."
    )


def import_job(request: ImportSourceRequest, path: Path) -> JobRecord:
    args = request.model_copy(update={"path": str(path), "workspace": None})
    return JobRecord(id=new_id(), kind=KIND, created_at=time.time(), args_json=args.model_dump_json(), unit="memories")


def checked_path(request: ImportSourceRequest, roots: Sequence[Path]) -> Path:
    """The resolved path, inside the allowed roots; raises PathRefused (naming the roots) otherwise."""
    return plan_walk(request.path, roots).target


class ImportSource:
    kind = KIND

    def __init__(self, run_import: RunImport, roots: Sequence[Path]) -> None:
        self._run_import = run_import
        self._roots = roots

    def refuses(self, job: JobRow) -> ZapomniError | None:
        try:
            checked_path(ImportSourceRequest.model_validate_json(job.args_json), self._roots)
        except OutsideRoots as exc:  # another server's roots may hold it
            return exc
        except PathRefused:
            pass  # gone or unreadable: the run fails with the reason, as every server would
        return None

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        request = ImportSourceRequest.model_validate_json(job.args_json).model_copy(
            update={"workspace": run.workspace.name}
        )
        latest: list[Progress] = [run.progress]
        task = asyncio.create_task(self._run_import(request, latest.append))
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=max(run.settings.lease_s / 3, 0.5))
                await run.report(latest[-1])  # renews the lease; raises JobLost when the job was taken or cancelled
        except BaseException:
            task.cancel()  # the import stops between two writes, each memory written whole
            with contextlib.suppress(BaseException):
                await task
            raise
        try:
            done = task.result()
        except (TransferError, PathRefused) as exc:
            log.warning("transfer.import_failed", job_id=job.id, error=str(exc))
            return JobOutcome("failed", 0, {}, error=str(exc))
        return _outcome(done)


def _outcome(done: SourceImport) -> JobOutcome:
    conversion = done.conversion
    counts = {"read": conversion.items, "left_out": sum(conversion.skipped.values())}
    if done.report is not None:
        report = done.report
        counts |= {"added": report.imported, "already_there": report.skipped,
                   "entities": report.entities_imported, "relations": report.relations_imported}  # fmt: skip
        message = f"imported from {done.path} ({conversion.format})"
    else:
        assert done.preview is not None
        preview = done.preview
        counts |= {"would_add": preview.memories_in_file - preview.already_stored,
                   "already_there": preview.already_stored, "entities": preview.entities_in_file,
                   "relations": preview.relations_in_file}  # fmt: skip
        message = f"dry run, nothing written: read {done.path} ({conversion.format})"
    left_out = "; ".join(f"{count} {reason}" for reason, count in conversion.skipped.items())
    message += f"; left out: {left_out}" if left_out else ""
    return JobOutcome("completed", conversion.items, counts, message=message[:2000])
