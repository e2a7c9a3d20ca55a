"""`find_updates`: link the memories of a store that was filled before update detection (or with it off, or by an
import of a file without update lines), oldest first, as if each had just been added.

A link is made once (`UpdateLinks.link`), so the job is safe to run again, and an attempt that dies starts over: it
finds what it already linked and adds nothing twice. Each memory costs a neighbour query, as an add does.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import structlog

from zapomni_core.errors import ZapomniError
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobOutcome, JobRun
from zapomni_core.kernel.writing import new_id
from zapomni_core.memories.supersession import UpdateLinker, said
from zapomni_core.progress import Progress
from zapomni_db import JobRecord, JobRow, PageKey, SearchFilter

log = structlog.get_logger(__name__)

KIND = "find_updates"
PAGE = 200  # memories read per page (their chunks one query each)


def find_updates_job(total: int) -> JobRecord:
    return JobRecord(
        id=new_id(), kind=KIND, created_at=time.time(), args_json=json.dumps({}), unit="memories", total=total
    )


class FindUpdates:
    kind = KIND

    def __init__(self, supersession: UpdateLinker) -> None:
        self._supersession = supersession

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return None  # every server on the store can

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        stores = run.workspace.stores
        total = (await stores.maintenance.counts()).memories
        counts: Counter[str] = Counter()
        done = 0
        after: PageKey | None = None
        while page := await stores.reads.page(SearchFilter(), order="oldest", after=after, limit=PAGE):
            for info, _head, key in page:
                after, done = key, done + 1
                chunks = await stores.reads.chunks(info.id) if info.kind in ("note", "turn") else []
                if info.status != "indexed" or len(chunks) != 1:
                    counts["skipped"] += 1  # a file's or a large text's: not a fact that replaces another
                    continue
                memory = said(info.id, chunks[0].text, info.speaker, info.date, info.created_at)
                counts["links"] += await self._supersession.link(run.workspace, memory)
                counts["memories"] += 1
            await run.report(Progress(done, max(total, done), "memories", "finding updates"))
        log.info("memory.updates_found", workspace=run.workspace.name, job_id=job.id, **counts)
        return JobOutcome("completed", done, counts, message=f"{counts['links']} update link(s) made")
