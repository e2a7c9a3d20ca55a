"""ZapomniCore: the services, built once at start-up, that every adapter (MCP, CLI, ops, HTTP) reaches the same way.

`core.memories.search(...)`, `core.graph.related(...)`, `core.files.ingest(...)`: one attribute per
service, each method taking a validated request and returning a reply model. Nothing here does work
of its own beyond shutdown, which spans the services.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from zapomni_core.access.oauth import OAuthService
from zapomni_core.access.service import AccessService
from zapomni_core.code.service import CodeService
from zapomni_core.disk import DiskGuard
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.files.service import FileService
from zapomni_core.graph.service import GraphService
from zapomni_core.jobs import JobService
from zapomni_core.memories.service import MemoryService
from zapomni_core.transfer.service import TransferService
from zapomni_core.workspaces.service import WorkspaceService


@dataclass(frozen=True)
class ZapomniCore:
    """Everything an adapter may call. Built by `open_core`, which also takes it down."""

    memories: MemoryService  # add, update, delete, get, page, search
    workspaces: WorkspaceService  # list, delete, stats
    graph: GraphService  # build, status, entities, related
    code: CodeService  # find_symbol, callers, callees
    files: FileService  # ingest, index_codebase
    jobs: JobService  # status, list, cancel
    transfer: TransferService  # export_to, import_from
    access: AccessService  # tokens: create, list, revoke, verify
    oauth: OAuthService  # clients that sign in: registration, consent, grants (served by `serve --http --oauth`)
    embedder: CachedEmbedder
    disk: DiskGuard  # free space on the data directory's disk
    # (workspace, job id) -> run that job in this process now; False when another worker has it.
    run_job_here: Callable[[str, str], Coroutine[Any, Any, bool]]  # a coroutine: the CLI runs it as a task

    @property
    def writes_committed(self) -> int:
        return self.memories.writes_committed + self.workspaces.writes_committed + self.transfer.writes_committed

    @property
    def writes_in_flight(self) -> int:
        return self.memories.writes_in_flight

    def begin_shutdown(self, grace_s: float) -> None:
        """Refuse new writes; let the ones in flight finish within `grace_s` seconds."""
        self.memories.begin_shutdown(grace_s)

    async def drain(self) -> None:
        """Wait until every write already started has been stored or abandoned."""
        await self.memories.drain()
