"""The engine an MCP server serves, which `zapomni serve` starts serving before it has opened (decision 0045).

Until the engine is open, every request waits for it, except a search that the keyword index kept beside the
embedded database answers alone (`EarlySearch`): at a million chunks FalkorDB decodes the store for seconds before
it answers anything, and the index opens in milliseconds.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import structlog
from pydantic import BaseModel

from zapomni_core import EarlySearch, SearchRequest, ZapomniCore
from zapomni_mcp.registry import Tool, ToolCatalog, ToolRegistry
from zapomni_mcp.tools import TOOLS, SearchMemoryTool, build_registry

log = structlog.get_logger(__name__)

_START_POLL_S = 0.05


class Opening:
    """What the MCP handlers serve: the tools' catalog at once, the engine and its tools once it is open."""

    def __init__(self, early: EarlySearch | None = None, catalog: ToolCatalog | None = None) -> None:
        self.catalog = catalog or ToolCatalog(TOOLS)  # the tools' names and schemas, known before the engine
        self._early = early
        self._opened = anyio.Event()
        self._core: ZapomniCore | None = None
        self._registry: ToolRegistry | None = None

    @classmethod
    def of(cls, core: ZapomniCore, registry: ToolRegistry | None = None) -> Opening:
        """An engine already open (HTTP, tests); `registry` when several servers share one."""
        opening = cls(catalog=registry.catalog if registry else None)
        opening.open(core, registry)
        return opening

    def open(self, core: ZapomniCore, registry: ToolRegistry | None = None) -> None:
        self._core, self._registry = core, registry or build_registry(core, self.catalog)
        self._early = None
        self._opened.set()

    @property
    def is_open(self) -> bool:
        return self._opened.is_set()

    async def started(self) -> None:
        """Return once the engine is open, or, when a search may be answered before it is, once the database has
        started (it then loads the store): what stops a start-up before that (an unusable data directory, a bad
        setting) reaches the client as a failed start, not a session that ends."""
        while not self._opened.is_set() and (self._early is None or await self._early.database_state() == "down"):
            await anyio.sleep(_START_POLL_S)

    async def engine(self) -> tuple[ZapomniCore, ToolRegistry]:
        await self._opened.wait()
        assert self._core is not None and self._registry is not None
        return self._core, self._registry

    async def tool(self, name: str) -> Tool[Any, Any]:
        _, registry = await self.engine()
        tool = registry.get(name)
        assert tool is not None, name  # the catalog knew it
        return tool

    async def early(self, tool: str, arguments: BaseModel) -> BaseModel | None:
        """What answers `tool` before the engine is open, without it: a search while the database is still loading
        the store. None: the call waits for the engine."""
        early = self._early
        if early is None or tool != SearchMemoryTool.name or not isinstance(arguments, SearchRequest):
            return None
        if not await early.database_loading() or self._opened.is_set():
            return None
        started = time.perf_counter()
        answer = early.answer(arguments)
        if answer is not None:
            elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
            log.info("memory.searched_early", workspace=answer.workspace, results=answer.count, duration_ms=elapsed_ms)
        return answer
