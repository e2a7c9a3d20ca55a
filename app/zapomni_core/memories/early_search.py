"""Search before the embedded database has loaded (decision 0045).

FalkorDB decodes a large store for seconds (8.9 s and more at a million chunks) before it answers anything. The
keyword index beside it opens in milliseconds, and it keeps what a hit shows; a proof left by the last process
that closed the store says it holds every change. Until the engine is ready, a search that the index can answer
alone is answered from it: the keyword leg only, no similarity scores, no update links, and a note saying so.
Anything else waits for the engine, and so does a search once the database answers (the engine is then moments
away, and both legs are better than one).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from zapomni_core.database import embedded_paths
from zapomni_core.memories.replies import SearchHit, SearchResult
from zapomni_core.memories.requests import SearchRequest
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.keyword_index import KeywordIndexAlone, KeywordIndexDirs
from zapomni_core.settings import Settings
from zapomni_db.embedded_layout import probe
from zapomni_db.workspaces import graph_for

# How long the database may take to answer a PING before it counts as loading (a loading one may hold the connection).
_PROBE_S = 0.2

NOTE = (
    "the database is still loading: these results are the keyword index's alone, as the store was when it was last "
    "closed (no similarity scores, no update links, no vector leg until it has loaded)"
)


class EarlySearch:
    """The searches of one embedded data directory that its keyword indexes can answer alone."""

    def __init__(
        self,
        dirs: KeywordIndexDirs,
        socket: Path,
        *,
        base_graph: str,
        default_workspace: str,
        rrf_k: int,
        leg_depth: int,
    ) -> None:
        self._dirs = dirs
        self._socket = socket
        self._base = base_graph
        self._default = default_workspace
        self._rrf_k = rrf_k
        self._leg_depth = leg_depth
        self._analyzer = Analyzer()
        self._opened: dict[str, KeywordIndexAlone | None] = {}

    @classmethod
    def for_settings(cls, settings: Settings) -> EarlySearch | None:
        """Where the settings keep the keyword indexes beside an embedded database; None for a database server (its
        keyword indexes are held in memory, and it is not this process that loads it)."""
        if settings.db_mode != "embedded":
            return None
        paths = embedded_paths(settings)
        return cls(
            KeywordIndexDirs.beside(paths.data_dir),
            paths.socket,
            base_graph=settings.graph_name,
            default_workspace=settings.workspace,
            rrf_k=settings.rrf_k,
            leg_depth=settings.search_leg_depth,
        )

    async def database_state(self) -> str:
        """ "down" (not started yet), "loading" (started, still loading the store) or "ready" (answering)."""
        return await asyncio.to_thread(probe, self._socket, _PROBE_S)

    async def database_loading(self) -> bool:
        """Whether the database is still starting or loading the store. Once it answers, the engine is open in
        moments: a search then waits for it and is answered by both legs."""
        return await self.database_state() != "ready"

    def answer(self, request: SearchRequest) -> SearchResult | None:
        """The answer from the keyword index alone; None when it cannot give one (filters or a mode it does not
        serve, no proof, or a process has opened the store since): then the search waits for the engine."""
        filters = request.filters.to_store() if request.filters is not None else None
        if request.mode == "vector" or request.min_score is not None or request.graph_context:
            return None
        if filters is not None and filters.narrows:
            return None
        workspace = request.workspace or self._default
        graph = graph_for(self._base, workspace)
        if graph not in self._opened:
            self._opened[graph] = KeywordIndexAlone.open(self._dirs, graph)
        index = self._opened[graph]
        depth = max(self._leg_depth, request.limit if request.all_chunks else 2 * request.limit)
        found = index.search(self._analyzer.query_terms(request.query), depth) if index is not None else None
        if found is None:
            return None
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for chunk_id, _score, shown in found:
            if not request.all_chunks and shown.memory.id in seen:
                continue  # a memory is shown by its best chunk
            seen.add(shown.memory.id)
            place = shown.place
            hit = SearchHit.of(
                shown.memory,
                workspace,
                chunk_id=chunk_id,
                text=shown.text,
                similarity_score=None,
                rank_score=1.0 / (self._rrf_k + len(hits) + 1),  # the keyword leg's alone, as reciprocal ranks
                page=place.page,
                section=place.section,
                line_start=place.line_start,
                line_end=place.line_end,
                matched_by=["keyword"],
            )
            hits.append(hit)
            if len(hits) == request.limit:
                break
        return SearchResult(workspace=workspace, results=hits, count=len(hits), legs=["keyword"], note=NOTE)
