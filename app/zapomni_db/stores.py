"""The stores of one graph (one workspace), built together on one client."""

from __future__ import annotations

from dataclasses import dataclass

from zapomni_db.client import GraphClient
from zapomni_db.code import CodeStore
from zapomni_db.files import FileStore
from zapomni_db.graph import GraphStore
from zapomni_db.graph_neighbours import GraphNeighbours
from zapomni_db.jobs import JobStore
from zapomni_db.maintenance import Maintenance
from zapomni_db.memories import MemoryWrites
from zapomni_db.memory_reads import MemoryReads
from zapomni_db.search_reads import SearchReads
from zapomni_db.updates import UpdateLinks


@dataclass(frozen=True)
class GraphStores:
    client: GraphClient
    writes: MemoryWrites
    reads: MemoryReads
    search: SearchReads
    maintenance: Maintenance
    jobs: JobStore
    graph: GraphStore
    neighbours: GraphNeighbours  # the graph-expansion search leg's reads
    files: FileStore  # memories read from files
    code: CodeStore  # indexed codebases: files, symbols and their links
    updates: UpdateLinks  # which memory replaced which

    @classmethod
    def on(cls, client: GraphClient) -> GraphStores:
        """The stores of `client`'s graph."""
        return cls(
            client,
            MemoryWrites(client),
            MemoryReads(client),
            SearchReads(client),
            Maintenance(client),
            JobStore(client),
            GraphStore(client),
            GraphNeighbours(client),
            FileStore(client),
            CodeStore(client),
            UpdateLinks(client),
        )
