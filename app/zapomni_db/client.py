"""Cypher against one named graph: parameterised queries, with the connection's failure policy, errors wrapped."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from zapomni_db.connection import Connection, is_write_command
from zapomni_db.errors import GraphMissing, QueryFailed, QueryTimedOut

Row = list[Any]
_EMPTY_GRAPH = "empty key"
_TIMED_OUT = "Query timed out"


# The part of falkordb's AsyncGraph and QueryResult used here (falkordb ships no types).
class _QueryResult(Protocol):
    result_set: list[Row]


class _Graph(Protocol):
    async def query(self, q: str, params: dict[str, Any] | None = None) -> _QueryResult: ...

    async def ro_query(
        self, q: str, params: dict[str, Any] | None = None, timeout: int | None = None
    ) -> _QueryResult: ...


class GraphClient:
    """Runs Cypher against one graph over its connection's shared pool.

    Every query takes its values as parameters; callers never format user input into Cypher.
    Waiting while the server loads, retrying what never reached it, and telling an interrupted
    write apart all happen in `Connection.run`, the same for every caller; this is where a call
    says whether it writes. Driver exceptions never leave this class.
    """

    def __init__(self, connection: Connection, graph_name: str) -> None:
        self.connection = connection
        self.graph_name = graph_name
        self._graph: _Graph = connection.falkordb.select_graph(graph_name)

    async def query(self, cypher: str, params: dict[str, Any] | None = None, *, create: bool = False) -> list[Row]:
        """Run a read-write query and return its rows (a write is sent again only if it never arrived).

        Only a write with `create` may bring a graph into being (a workspace's first migration); any
        other write to a graph that does not exist raises GraphMissing (see `WriteFence`).
        """
        async with self.connection.fence(self.graph_name).writing(self.graph_name, create=create):
            if not create and not await self.exists():
                raise GraphMissing(f"graph {self.graph_name} does not exist")
            with _unsendable_named(params):
                result = await self.connection.run(lambda: self._graph.query(cypher, params), write=True)
        return result.result_set

    async def ro_query(
        self, cypher: str, params: dict[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> list[Row]:
        """Run a read-only query (the server may run it on any thread); a graph not yet created has no rows.

        `timeout_ms`: the server stops the query after this long (QueryTimedOut)."""
        try:
            with _unsendable_named(params):
                call = lambda: self._graph.ro_query(cypher, params, timeout=timeout_ms)  # noqa: E731
                result = await self.connection.run(call, write=False)
        except QueryFailed as exc:
            if _EMPTY_GRAPH in str(exc):  # the graph key does not exist until the first write
                return []
            if timeout_ms is not None and _TIMED_OUT in str(exc):
                raise QueryTimedOut(f"stopped after {timeout_ms} ms") from exc
            raise
        return result.result_set

    async def command(self, *args: Any) -> Any:
        """Run a plain Redis command (INFO, BGSAVE, ...) on the same pool."""
        call = lambda: self.connection.redis.execute_command(*args)  # noqa: E731
        return await self.connection.run(call, write=is_write_command(args[0]))

    async def ping(self) -> bool:
        return bool(await self.command("PING"))

    async def exists(self) -> bool:
        """Whether the graph exists (it does from its first write until it is deleted)."""
        return bool(await self.connection.command("EXISTS", self.graph_name))


@contextmanager
def _unsendable_named(params: dict[str, Any] | None) -> Iterator[None]:
    """Name the parameter when a query failed for a value the query text cannot carry.

    The FalkorDB client writes parameters into the query text (`CYPHER name="value" ...`), escaping
    backslashes and quotes, which carries any Unicode text but two: a NUL character ends the text
    (FalkorDB answers a syntax error about the header), and a lone surrogate cannot be encoded at all
    (the driver raises UnicodeEncodeError before sending). Requests refuse both at the edge
    (zapomni_core.models); this covers values made inside, such as a file name that is not UTF-8.
    Looked for only after a failure, so a query that succeeds costs nothing more.
    """
    try:
        yield
    except UnicodeEncodeError as exc:
        raise QueryFailed(_unsendable(params) or "a query parameter holds a lone surrogate") from exc
    except QueryFailed as exc:
        reason = _unsendable(params)
        if reason is None:
            raise
        raise QueryFailed(reason) from exc


def _unsendable(params: dict[str, Any] | None) -> str | None:
    for name, value in (params or {}).items():
        problem = _bad_text(value)
        if problem is not None:
            return f"parameter {name} holds {problem}, which FalkorDB's query text cannot carry"
    return None


def _bad_text(value: Any) -> str | None:
    if isinstance(value, str):
        if "\x00" in value:
            return "a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate"
        return None
    if isinstance(value, dict):  # map keys are written into the query text too
        items: Any = [*value.keys(), *value.values()]
    else:
        items = value if isinstance(value, list | tuple) else ()
    for item in items:
        problem = _bad_text(item)
        if problem is not None:
            return problem
    return None
