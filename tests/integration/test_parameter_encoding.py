"""Query parameters through the db layer: any text comes back as it was sent, and what FalkorDB's query
text cannot carry (a NUL character, a lone surrogate) is refused as a db error naming the parameter.

The FalkorDB client writes parameters into the query text (`CYPHER v="..." RETURN $v`), escaping
only backslashes and double quotes; this checks that nothing else can break out of that quoting.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples, wait_for
from zapomni_db import DatabaseTarget, GraphClient, QueryFailed, connect
from zapomni_db._cypher import VectorParam
from zapomni_db.server import direct_client, is_ready
from zapomni_db.server_commands import falkordb_command

pytestmark = pytest.mark.anyio

SPECIALS = ["\\", '"', "'", "`", "\\u0000", '\\"', "\\'", "\n", "\r", "\u2028", "\u2029", "\x85", "\ufeff", "\x7f"]
SPECIALS += ["\x01", "\x1b", "$v", "{", "}", "]", " RETURN 1", "CYPHER v=1 ", "/*", "*/", "//", "\U0010ffff", "😀"]
piece = st.one_of(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), st.sampled_from(SPECIALS))
text = st.lists(piece, max_size=40).map("".join)


@pytest.fixture
def socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s.sock"
    process = subprocess.Popen(falkordb_command(tmp_path, unix_socket=path), stdout=subprocess.DEVNULL)
    client = direct_client(unix_socket=path)
    try:
        assert wait_for(lambda: is_ready(client), 30), "the server did not start"
        yield path
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture
async def graph(socket: Path) -> AsyncIterator[GraphClient]:
    connection = connect(DatabaseTarget(str(socket.parent), "t", socket=socket))
    try:
        client = GraphClient(connection, "t")
        await client.query("MERGE (:Seed)", create=True)  # writes go only to a graph that exists
        yield client
    finally:
        await connection.close()


async def test_what_the_query_text_cannot_carry_is_a_db_error_naming_the_parameter(graph: GraphClient) -> None:
    for value, reason in (("a\x00b", "NUL"), ("half \ud800", "lone surrogate")):
        with pytest.raises(QueryFailed) as refused:
            await graph.query("CREATE (:T {v: $value})", {"n": 1, "value": value})
        assert "parameter value" in str(refused.value) and reason in str(refused.value), refused.value
        with pytest.raises(QueryFailed):
            await graph.ro_query("RETURN $deep", {"deep": [{"k": [value]}]})
        with pytest.raises(QueryFailed):
            await graph.ro_query("RETURN $map", {"map": {value: 1}})
    assert await graph.ro_query("MATCH (t:T) RETURN count(t)") == [[0]]  # nothing was written


async def test_a_vector_sent_as_text_is_stored_as_the_float32_values_it_holds(graph: GraphClient) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    values = np.concatenate([
        rng.standard_normal(380).astype(np.float32) / 20,
        np.array([1e-45, -3.4e38, 1.17549435e-38, -0.0], dtype=np.float32),  # the smallest, largest, tiniest normal
    ])  # fmt: skip
    vector = [float(x) for x in values]  # what an embedder hands over: float32 values as Python floats
    rows = await graph.query(
        "CREATE (c:V {e: vecf32($v)}) WITH c UNWIND $rows AS r RETURN c.e, vecf32(r.e)",
        {"v": VectorParam(vector), "rows": [{"e": VectorParam(vector)}]},  # alone, and in a map (as chunk rows)
    )
    [[stored, in_map]] = rows
    assert np.array_equal(np.asarray(stored, dtype=np.float32), values)
    assert np.array_equal(np.asarray(in_map, dtype=np.float32), values)


@pytest.mark.property
def test_any_other_text_comes_back_as_it_was_sent(socket: Path) -> None:
    with start_blocking_portal() as portal:
        connection = connect(DatabaseTarget(str(socket.parent), "t", socket=socket))
        graph = GraphClient(connection, "t")
        portal.call(functools.partial(graph.query, "MERGE (:Seed)", create=True))

        @settings(max_examples=examples(300), deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(value=text, other=text)
        def round_trip(value: str, other: str) -> None:
            rows = portal.call(
                graph.query,
                "CREATE (n:T {v: $value, w: [$other]}) RETURN n.v, n.w, $value",
                {"value": value, "other": other},
            )
            assert rows == [[value, [other], value]]
            found = portal.call(graph.ro_query, "MATCH (n:T {v: $value}) RETURN count(n) > 0", {"value": value})
            assert found == [[True]]

        try:
            round_trip()
        finally:
            portal.call(connection.close)
