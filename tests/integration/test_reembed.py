"""Re-embedding a real store: ONNX MiniLM (384-d) to Ollama nomic-embed-text (768-d, the fake Ollama)."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import subprocess
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli
from tests.fakes.ollama_server import FakeOllama, embed_text
from tests.helpers import open_core, wait_for
from tests.processes import ZAPOMNI, server_env
from zapomni_core import ConfigurationError, EmbedderUnavailable, Settings
from zapomni_core.database import open_database
from zapomni_core.embedders import build_embedder
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.progress import Progress, ProgressFn
from zapomni_core.reembedding import ReembedReport, reembed
from zapomni_db import EmbeddedDatabase, GraphClient, Maintenance
from zapomni_db.embedded_layout import ping
from zapomni_db.schema import vector_index_dimension
from zapomni_db.server_commands import falkordb_command

pytestmark = pytest.mark.anyio

OLLAMA_MODEL = "ollama:nomic-embed-text"
ONNX_MODEL = "onnx:all-MiniLM-L6-v2-int8"
MEMORIES = {
    "bread": "Sourdough bread needs a lively starter and a long, slow rise before baking.",
    "k8s": "The Kubernetes cluster autoscaler adds nodes when pods cannot be scheduled.",
    "tea": "Green tea should steep for two minutes in water just below boiling.",
    "bike": "Oil the bicycle chain every two hundred kilometres, more often after rain.",
    "garden": "Tomato seedlings go outside after the last frost, usually in mid May.",
    "wifi": "The office wifi password is written on the back of the fridge calendar.",
    "boiler": "The boiler needs its yearly service every October; error F22 means low pressure.",
    "passport": "Passports are renewed at the consulate; book the appointment eight weeks ahead.",
    # Long enough for several 256-token chunks.
    "history": " ".join(
        f"In year {1900 + i} the village library added {i * 7} books about river navigation and old maps."
        for i in range(60)
    ),
}


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(models=["nomic-embed-text"]) as server:
        yield server


def onnx_settings(data_dir: Path) -> Settings:
    return Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")


def ollama_settings(data_dir: Path, fake: FakeOllama) -> Settings:
    # No retries: an injected failure stops the run at once.
    return Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir,
        ZAPOMNI_EMBEDDER="ollama",
        OLLAMA_HOST=fake.url,
        ZAPOMNI_OLLAMA_RETRIES=0,
        LOG_LEVEL="WARNING",
    )


@pytest.fixture
async def onnx_store(data_dir: Path) -> dict[str, str]:
    """The memories, stored with the ONNX embedder; returns their ids by key."""
    ids = {}
    async with open_core(onnx_settings(data_dir)) as (core, _info):
        for key, text in MEMORIES.items():
            ids[key] = (await core.memories.add(AddMemoryRequest(text=text))).memory_id
    return ids


@asynccontextmanager
async def graph(settings: Settings) -> AsyncIterator[GraphClient]:
    async with AsyncExitStack() as stack:
        yield (await open_database(settings, stack)).client


async def run_reembed(settings: Settings, batch_size: int, progress: ProgressFn | None = None) -> ReembedReport:
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        embedder = await build_embedder(settings)
        stack.push_async_callback(embedder.aclose)
        return await reembed(database, embedder, settings, batch_size=batch_size, progress=progress)


async def chunks(client: GraphClient) -> dict[str, tuple[str, str | None, list[float]]]:
    """chunk id -> (text, embedding_model, embedding)."""
    rows = await client.ro_query(
        "MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id, coalesce(c.text, m.text), c.embedding_model, c.embedding"
    )
    return {cid: (text, model, vector) for cid, text, model, vector in rows}


async def vector_query_ids(client: GraphClient, vector: list[float], k: int) -> list[str]:
    rows = await client.ro_query(
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node RETURN node.id",
        {"k": k, "v": vector},
    )
    return [row[0] for row in rows]


def embedded_texts(fake: FakeOllama) -> list[str]:
    """Document texts sent to the fake Ollama, prefix removed; the embedder's start-up probe left out."""
    texts = [text for r in fake.embed_requests for text in r.body["input"]]
    return [t.removeprefix("search_document: ") for t in texts if t != "dimension probe"]


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=True))


async def assert_fully_reembedded(settings: Settings) -> dict[str, tuple[str, str | None, list[float]]]:
    async with graph(settings) as client:
        stored = await chunks(client)
        repository = Maintenance(client)
        claim = await repository.stored_embedder()
        assert claim is not None and (claim.model, claim.dimension) == (OLLAMA_MODEL, 768)
        assert await repository.reembed_state() is None
        assert await vector_index_dimension(client) == 768
        # Each chunk holds the vector of its own text from the new model, tagged with it.
        for text, model, vector in stored.values():
            assert model == OLLAMA_MODEL
            assert close(vector, embed_text(text))
        # One index entry per chunk: asking for every chunk returns each exactly once.
        any_text = next(iter(stored.values()))[0]
        found = await vector_query_ids(client, embed_text(any_text), k=len(stored))
        assert sorted(found) == sorted(stored)
    return stored


async def test_reembed_moves_an_onnx_store_to_ollama(
    data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]
) -> None:
    settings = ollama_settings(data_dir, fake)
    async with graph(settings) as client:
        before = await chunks(client)
    assert len(before) > len(MEMORIES)  # the long memory has several chunks
    assert {len(vector) for _, _, vector in before.values()} == {384}

    seen: list[Progress] = []
    report = await run_reembed(settings, batch_size=4, progress=seen.append)
    progress = [(p.done, p.total) for p in seen]

    n = len(before)
    assert (report.model, report.dimension, report.chunks, report.embedded, report.skipped) == (
        OLLAMA_MODEL,
        768,
        n,
        n,
        0,
    )
    assert progress[0] == (0, n) and progress[-1] == (n, n)
    assert len(progress) == 1 + math.ceil(n / 4)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)
    assert {(p.unit, p.message) for p in seen} == {("chunks", "re-embedding workspace 'default'")}
    # Every chunk's text went to the model exactly once.
    assert Counter(embedded_texts(fake)) == Counter(text for text, _, _ in before.values())

    after = await assert_fully_reembedded(settings)
    assert {cid: text for cid, (text, _, _) in after.items()} == {cid: text for cid, (text, _, _) in before.items()}

    async with open_core(settings) as (core, info):
        assert (info.embedder, info.dimension) == (OLLAMA_MODEL, 768)
        for key, query in {"bread": "sourdough starter rise", "bike": "bicycle chain oil rain"}.items():
            found = await core.memories.search(SearchRequest(query=query, limit=1, mode="vector"))
            assert [hit.memory_id for hit in found.results] == [onnx_store[key]]
        # The keyword statistics were left alone and still find exact identifiers.
        found = await core.memories.search(SearchRequest(query="F22", limit=1, mode="keyword"))
        assert [hit.memory_id for hit in found.results] == [onnx_store["boiler"]]
        stats = await core.workspaces.stats()
        assert (stats.total_memories, stats.total_chunks) == (len(MEMORIES), n)
        added = await core.memories.add(AddMemoryRequest(text="The dentist appointment moved to Thursday."))
        found = await core.memories.search(SearchRequest(query="dentist appointment", limit=1, mode="vector"))
        assert [hit.memory_id for hit in found.results] == [added.memory_id]

    # The store now belongs to the new embedder: the old one is refused.
    with pytest.raises(ConfigurationError, match="ollama:nomic-embed-text"):
        async with open_core(onnx_settings(data_dir)):
            pytest.fail("open_core must refuse the old embedder after a re-embed")


async def interrupt_after_first_batch(settings: Settings, fake: FakeOllama, batch_size: int) -> None:
    def fail_from_the_second_batch(progress: Progress) -> None:
        if progress.done > 0:
            fake.fail_next(1000)

    with pytest.raises(EmbedderUnavailable, match="HTTP 503"):
        await run_reembed(settings, batch_size=batch_size, progress=fail_from_the_second_batch)
    fake.fail_next(0)


async def test_an_interrupted_reembed_resumes_where_it_stopped(
    data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]
) -> None:
    settings = ollama_settings(data_dir, fake)
    await interrupt_after_first_batch(settings, fake, batch_size=4)

    async with graph(settings) as client:
        partial = await chunks(client)
        repository = Maintenance(client)
        state = await repository.reembed_state()
        assert state is not None and (state.model, state.dimension) == (OLLAMA_MODEL, 768)
        claim = await repository.stored_embedder()
        assert claim is not None and claim.model == ONNX_MODEL  # the claim moves only at the end
        assert await vector_index_dimension(client) is None  # dropped before the first write
    done = sorted(cid for cid, (_, model, _) in partial.items() if model == OLLAMA_MODEL)
    assert done == sorted(partial)[:4]  # the first batch, in id order
    assert all(len(partial[cid][2]) == 768 for cid in done)
    assert all(len(vector) == 384 for cid, (_, _, vector) in partial.items() if cid not in done)

    status = subprocess.run(
        [ZAPOMNI, "migrate", "status", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(data_dir, LOG_LEVEL="WARNING", ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake.url),
    )
    report = json.loads(status.stdout)
    assert report["reembed_needed"] is True
    assert report["reembed_in_progress"]["model"] == OLLAMA_MODEL
    assert (report["reembed_in_progress"]["chunks_done"], report["reembed_in_progress"]["chunks_total"]) == (
        4,
        len(partial),
    )

    fake.clear()
    seen: list[Progress] = []
    report = await run_reembed(settings, batch_size=4, progress=seen.append)
    progress = [(p.done, p.total) for p in seen]
    assert (report.skipped, report.embedded) == (4, len(partial) - 4)
    assert progress[0] == (4, len(partial)) and progress[-1] == (len(partial), len(partial))
    # Only the remainder went to the model, each chunk once.
    assert Counter(embedded_texts(fake)) == Counter(text for cid, (text, _, _) in partial.items() if cid not in done)
    await assert_fully_reembedded(settings)

    async with open_core(settings) as (core, _info):
        found = await core.memories.search(SearchRequest(query="green tea steep minutes", limit=1, mode="vector"))
        assert [hit.memory_id for hit in found.results] == [onnx_store["tea"]]


async def test_open_core_refuses_while_a_reembed_is_in_progress(
    data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]
) -> None:
    await interrupt_after_first_batch(ollama_settings(data_dir, fake), fake, batch_size=4)
    # Neither the old embedder (its index is gone) nor the new one (half the vectors are old).
    for settings in (onnx_settings(data_dir), ollama_settings(data_dir, fake)):
        with pytest.raises(ConfigurationError) as caught:
            async with open_core(settings):
                pytest.fail("open_core must refuse a graph in the middle of a re-embed")
        assert "zapomni migrate reembed" in str(caught.value)
        assert OLLAMA_MODEL in str(caught.value)

    # A resume refused because another process is attached keeps the mark of the run it did not start.
    other = EmbeddedDatabase(data_dir)
    await asyncio.to_thread(other.open)
    try:
        with pytest.raises(ConfigurationError, match="other Zapomni process"):
            await run_reembed(ollama_settings(data_dir, fake), batch_size=4)
    finally:
        await asyncio.to_thread(other.close)
    async with graph(onnx_settings(data_dir)) as client:
        state = await Maintenance(client).reembed_state()
        assert state is not None and state.model == OLLAMA_MODEL


async def test_an_interrupted_reembed_can_go_back_to_the_previous_embedder(
    data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]
) -> None:
    await interrupt_after_first_batch(ollama_settings(data_dir, fake), fake, batch_size=4)
    settings = onnx_settings(data_dir)
    report = await run_reembed(settings, batch_size=4)
    async with graph(settings) as client:
        stored = await chunks(client)
        repository = Maintenance(client)
        claim = await repository.stored_embedder()
        assert claim is not None and (claim.model, claim.dimension) == (ONNX_MODEL, 384)
        assert await repository.reembed_state() is None
        assert await vector_index_dimension(client) == 384
    assert report.embedded == len(stored)  # untagged chunks cannot be told apart: all are redone
    assert {(model, len(vector)) for _, model, vector in stored.values()} == {(ONNX_MODEL, 384)}
    async with open_core(settings) as (core, _info):
        found = await core.memories.search(SearchRequest(query="sourdough starter", limit=1, mode="vector"))
        assert [hit.memory_id for hit in found.results] == [onnx_store["bread"]]


async def test_reembed_refuses_while_another_process_uses_the_database(
    data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]
) -> None:
    settings = ollama_settings(data_dir, fake)
    other = EmbeddedDatabase(data_dir)  # attached like a running `zapomni serve`
    await asyncio.to_thread(other.open)
    try:
        with pytest.raises(ConfigurationError, match=r"1 other Zapomni process\(es\) are using the database"):
            await run_reembed(settings, batch_size=4)
    finally:
        await asyncio.to_thread(other.close)

    async with graph(settings) as client:  # nothing changed, and no in-progress mark was left
        repository = Maintenance(client)
        assert await repository.reembed_state() is None
        assert await vector_index_dimension(client) == 384
        assert await repository.reembedded_chunks(OLLAMA_MODEL) == 0
    async with open_core(onnx_settings(data_dir)) as (core, _info):
        found = await core.memories.search(SearchRequest(query="sourdough starter", limit=1, mode="vector"))
        assert [hit.memory_id for hit in found.results] == [onnx_store["bread"]]


async def test_reembed_with_the_stored_embedder_does_nothing(data_dir: Path, onnx_store: dict[str, str]) -> None:
    settings = onnx_settings(data_dir)
    async with graph(settings) as client:
        before = await chunks(client)
    report = await run_reembed(settings, batch_size=4)
    assert (report.model, report.embedded, report.chunks) == (ONNX_MODEL, 0, len(before))
    async with graph(settings) as client:
        assert await chunks(client) == before  # no vector rewritten, no chunk tagged
        assert await vector_index_dimension(client) == 384


def zapomni(
    data_dir: Path, fake: FakeOllama, *args: str, log_level: str = "WARNING"
) -> subprocess.CompletedProcess[str]:
    env = server_env(data_dir, LOG_LEVEL=log_level, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake.url)
    return run_cli(args, env, input="", timeout_s=300)


async def test_the_reembed_command(data_dir: Path, fake: FakeOllama, onnx_store: dict[str, str]) -> None:
    status = json.loads(zapomni(data_dir, fake, "migrate", "status", "--json").stdout)
    assert status["stored_embedder"] == {"model": ONNX_MODEL, "dimension": 384}
    assert status["configured_embedder"] == {"model": OLLAMA_MODEL, "dimension": 768, "error": None}
    assert status["reembed_needed"] is True

    unconfirmed = zapomni(data_dir, fake, "migrate", "reembed")
    assert unconfirmed.returncode == 1 and "pass --yes" in unconfirmed.stderr
    assert json.loads(zapomni(data_dir, fake, "migrate", "status", "--json").stdout) == status

    done = zapomni(data_dir, fake, "migrate", "reembed", "--yes", "--batch-size", "5", log_level="INFO")
    assert done.returncode == 0, done.stderr
    n = status["chunks"]
    assert done.stdout.startswith(f"re-embedded {n} chunks with {OLLAMA_MODEL} (768-d)")
    # No terminal on stderr: progress comes as log lines, the last one complete.
    progress = [json.loads(line) for line in done.stderr.splitlines() if '"reembed.progress"' in line]
    assert progress and (progress[-1]["done"], progress[-1]["total"], progress[-1]["unit"]) == (n, n, "chunks")
    assert progress[-1]["message"] == "re-embedding workspace 'default'"

    status = json.loads(zapomni(data_dir, fake, "migrate", "status", "--json").stdout)
    assert status["stored_embedder"] == {"model": OLLAMA_MODEL, "dimension": 768}
    assert (status["vector_index_dimension"], status["reembed_needed"]) == (768, False)
    again = zapomni(data_dir, fake, "migrate", "reembed", "--yes")
    assert again.returncode == 0 and again.stdout.startswith("nothing to re-embed")

    found = zapomni(data_dir, fake, "search", "office wifi password", "--limit", "1", "--json")
    assert json.loads(found.stdout)["results"][0]["memory_id"] == onnx_store["wifi"]


async def test_reembed_in_server_mode(data_dir: Path, fake: FakeOllama) -> None:
    # Server mode has no client locks to count: the run goes ahead (with a warning) and the mark
    # still keeps the engine out until it has finished.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sock = data_dir / "s.sock"
    server = subprocess.Popen(
        falkordb_command(data_dir, port=port, unix_socket=sock, log_file=data_dir / "server.log"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: ping(sock))
        remote = {"ZAPOMNI_DB_MODE": "server", "FALKORDB_HOST": "127.0.0.1", "FALKORDB_PORT": port}
        onnx = Settings.from_variables(**remote, ZAPOMNI_DATA_DIR=data_dir / "unused", LOG_LEVEL="WARNING")
        ollama = Settings.from_variables(
            **remote, ZAPOMNI_DATA_DIR=data_dir / "unused", ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake.url
        )
        async with open_core(onnx) as (core, info):
            assert info.data_location == f"falkordb://127.0.0.1:{port}"
            bread = await core.memories.add(AddMemoryRequest(text=MEMORIES["bread"]))
            await core.memories.add(AddMemoryRequest(text=MEMORIES["tea"]))

        report = await run_reembed(ollama, batch_size=1)
        assert (report.embedded, report.model) == (2, OLLAMA_MODEL)
        await assert_fully_reembedded(ollama)
        async with open_core(ollama) as (core, _info):
            found = await core.memories.search(SearchRequest(query="sourdough starter", limit=1, mode="vector"))
            assert [hit.memory_id for hit in found.results] == [bread.memory_id]
    finally:
        server.terminate()
        server.wait(timeout=30)
