"""Export and import on real stores: a round trip reproduces search exactly; bad files change nothing."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.fakes.ollama_server import FakeOllama
from tests.helpers import graph_client, open_core
from tests.processes import ZAPOMNI, child_env, run_zapomni
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    ListMemoriesRequest,
    SearchFilters,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_core.progress import Progress
from zapomni_core.transfer import TransferError, export, importer
from zapomni_core.transfer.format import EXPORTING, IMPORTING, VALIDATING

pytestmark = pytest.mark.anyio


SUBJECTS = [
    "the postgres replica", "the billing service", "the Kubernetes ingress", "the payment gateway",
    "the nightly backup job", "the search cluster", "the VPN concentrator", "the mobile app release",
    "the office wifi", "the CI runners", "the data warehouse", "the mail relay", "the DNS resolver",
    "the staging database", "the feature flag service", "the log shipper", "the CDN edge",
    "the auth provider", "the message queue", "the build cache",
]  # fmt: skip
EVENTS = [
    "ran out of disk space after a burst of writes, error E{n}",
    "was upgraded to version {n}.2 during the maintenance window",
    "failed its health check three times, tracked in ticket OPS-{n}",
    "had its TLS certificate renewed; the old one expired on day {n}",
    "started timing out under load, latency rose to {n} ms",
    "was moved to a new rack in the Frankfurt data centre, slot {n}",
    "got a new on-call owner, Maria from team {n}",
    "leaked memory until the pod was OOMKilled, restart count {n}",
    "was rate limited by the upstream provider at {n} requests per second",
    "lost connectivity because of a misconfigured firewall rule {n}",
]  # fmt: skip
LONG_TEXT = "\n\n".join(
    f"Logbook entry {i}: the lighthouse keeper recorded {['calm', 'gusty', 'stormy', 'foggy'][i % 4]} weather, "
    f"{i % 9 + 1} fishing boats passing the northern reef, and a lamp check at {i % 12 + 1} o'clock."
    for i in range(120)
)
QUERIES = [
    "postgres replica disk space",
    "E1013",
    "ticket OPS-1047",
    "which service was OOMKilled?",
    "certificate renewal for the auth provider",
    "lighthouse keeper stormy weather fishing boats",
    "logbook entry 97",
    "who is on call for the message queue",
    "Frankfurt rack move",
    "slow responses when traffic is high",
]
MODES = ("hybrid", "vector", "keyword")


@dataclass(frozen=True)
class Source:
    """A store built once for the module, its export, and what it answered before the export."""

    data_dir: Path
    export: bytes
    ids: list[str]  # in the order they were added
    long_id: str
    results: dict[tuple[str, str], list[dict[str, Any]]]
    memories: int
    chunks: int


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _settings(data_dir: Path, **extra: Any) -> Settings:
    # No automatic graph extraction: these tests compare exports line by line, and a build job
    # running in the background would add entity and relation lines (test_graph_store covers those).
    return Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False, **extra)


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    """The import target of each test (conftest's `core` opens it): without automatic graph extraction."""
    return _settings(data_dir)


def _request(i: int) -> AddMemoryRequest:
    text = f"{SUBJECTS[i % 20].capitalize()} {EVENTS[i // 20].format(n=1000 + i)}."
    metadata: dict[str, Any] = {}
    if i % 3 == 0:
        metadata["tags"] = ["ops", f"team-{i % 5}"]
    if i % 4 == 0:
        metadata["source"] = "incident-log" if i % 8 else "pager"
    if i % 5 == 0:
        metadata["date"] = f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}"
    if i % 7 == 0:
        metadata.update({"severity": i % 4, "cost": i / 8, "resolved": i % 2 == 0, "owner": f"person {i}"})
    return AddMemoryRequest.model_validate({"text": text, "metadata": metadata or None})


async def _answers(core: ZapomniCore) -> dict[tuple[str, str], list[dict[str, Any]]]:
    results = {}
    for query in QUERIES:
        for mode in MODES:
            found = await core.memories.search(
                SearchRequest.model_validate({"query": query, "mode": mode, "limit": 10})
            )
            results[(query, mode)] = [hit.model_dump() for hit in found.results]
    return results


async def _export(core: ZapomniCore) -> bytes:
    out = io.StringIO()
    await core.transfer.export_to(out)
    return out.getvalue().encode()


@pytest.fixture(scope="module")
async def source() -> AsyncIterator[Source]:
    data_dir = Path(tempfile.mkdtemp(prefix="zt-src-", dir="/tmp"))
    try:
        async with open_core(_settings(data_dir)) as (core, _info):
            ids = []
            for i in range(199):
                ids.append((await core.memories.add(_request(i))).memory_id)
                if i == 100:  # the long memory sits in the middle, so its position in the order counts
                    long = await core.memories.add(
                        AddMemoryRequest.model_validate({"text": LONG_TEXT, "metadata": {"tags": ["sea"]}})
                    )
                    assert long.chunks_created > 5
                    ids.append(long.memory_id)
            # A link the client stated: an export carries it, and an import brings it back as it was.
            await core.memories.update(UpdateMemoryRequest(memory_id=ids[7], replaces=[ids[3]]))
            stats = await core.workspaces.stats()
            yield Source(
                data_dir=data_dir,
                export=await _export(core),
                ids=ids,
                long_id=long.memory_id,
                results=await _answers(core),
                memories=stats.total_memories,
                chunks=stats.total_chunks,
            )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def lines(export: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in export.decode().splitlines()]


def body(export: bytes) -> list[str]:
    """Every line but the header (whose `exported_at` differs from one export to the next)."""
    return export.decode().splitlines()[1:]


def assert_same_answers(expected: dict[Any, list[dict[str, Any]]], actual: dict[Any, list[dict[str, Any]]]) -> None:
    for key, hits in expected.items():
        got = actual[key]
        assert [(h["memory_id"], h["chunk_id"]) for h in got] == [(h["memory_id"], h["chunk_id"]) for h in hits], key
        for want, have in zip(hits, got, strict=True):
            assert abs(want["similarity_score"] - have["similarity_score"]) <= 1e-6, key
            assert abs(want["rank_score"] - have["rank_score"]) <= 1e-6, key
            drop = ("similarity_score", "rank_score")
            assert {k: v for k, v in want.items() if k not in drop} == {k: v for k, v in have.items() if k not in drop}


async def node_counts(data_dir: Path) -> tuple[int, int]:
    """Memory nodes and Chunk nodes (linked or not), read straight from the embedded database."""
    async with graph_client(data_dir) as client:
        memories = await client.ro_query("MATCH (m:Memory) RETURN count(m)")
        chunks = await client.ro_query("MATCH (c:Chunk) RETURN count(c)")
    return int(memories[0][0]), int(chunks[0][0])


async def test_the_export_holds_every_memory_in_order(source: Source) -> None:
    parsed = lines(source.export)
    header, end = parsed[0], parsed[-1]
    memories = [line for line in parsed[1:-1] if line["type"] == "memory"]
    [update] = [line for line in parsed if line["type"] == "update"]  # after the memories it names
    assert parsed.index(update) == len(parsed) - 2
    assert (update["older"], update["newer"]) == (source.ids[3], source.ids[7])
    assert (update["method"], update["attribute"], update["confidence"]) == ("stated", "stated", 1.0)
    assert header["type"] == "zapomni-export" and header["format_version"] == 5
    assert header["embedder"] == {"model": "onnx:all-MiniLM-L6-v2-int8", "dimension": 384}
    assert header["schema_version"] >= 2 and header["graph_name"] == "zapomni"
    assert [m["id"] for m in memories] == source.ids
    assert {m["workspace"] for m in memories} == {"default"}
    # No knowledge graph was built: no entity or relation lines, every memory pending for the graph.
    assert end == {
        "type": "end", "memories": source.memories, "chunks": source.chunks, "entities": 0, "relations": 0,
        "updates": 1,
    }  # fmt: skip
    assert {m["graph_state"] for m in memories} == {None}
    assert sum(len(m["chunks"]) for m in memories) == source.chunks
    long = next(m for m in memories if m["id"] == source.long_id)
    assert len(long["chunks"]) > 5 and [c["index"] for c in long["chunks"]] == list(range(len(long["chunks"])))
    assert all(len(c["embedding"]) == 384 for c in long["chunks"])
    dated = next(m for m in memories if m["id"] == source.ids[0])
    assert dated["date"] == "2024-01-01T00:00:00+00:00" and dated["tags"] == ["ops", "team-0"]
    assert dated["source"] == "pager"
    assert dated["metadata"] == {"cost": 0.0, "owner": "person 0", "resolved": True, "severity": 0}


async def test_a_round_trip_reproduces_search_stats_and_metadata(
    source: Source, core: ZapomniCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = await core.transfer.import_from(io.BytesIO(source.export))
    assert (report.imported, report.skipped, report.chunks_written) == (source.memories, 0, source.chunks)
    assert not report.re_embedded and report.chunks_from_file == source.chunks
    stats = await core.workspaces.stats()
    assert (stats.total_memories, stats.total_chunks) == (source.memories, source.chunks)
    assert_same_answers(source.results, await _answers(core))
    # Ids, created_at, tags, source, date, metadata, chunk ids, texts and vectors all came back exactly.
    assert body(await _export(core)) == body(source.export)
    # Again in pages small enough that the long memory is written a few chunks at a time.
    monkeypatch.setattr(export, "EXPORT_SEQ_WINDOW", 7)
    monkeypatch.setattr(export, "EXPORT_CHUNK_PAGE", 3)
    assert body(await _export(core)) == body(source.export)


async def test_export_and_import_report_progress(
    source: Source, core: ZapomniCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small pages and id batches, so each pass reports several times.
    monkeypatch.setattr(export, "EXPORT_SEQ_WINDOW", 64)
    monkeypatch.setattr(importer, "CHECK_BATCH_IDS", 100)
    monkeypatch.setattr(importer, "IMPORT_BATCH_MEMORIES", 100)
    imported: list[Progress] = []
    await core.transfer.import_from(io.BytesIO(source.export), imported.append)
    validating = [p for p in imported if p.message == VALIDATING]
    importing = [p for p in imported if p.message == IMPORTING]
    assert imported == validating + importing  # the whole file is checked before anything is written
    assert len(validating) >= 3 and validating[0].total is None  # the count is known only at the end
    assert validating[-1] == Progress(source.memories, source.memories, "memories", VALIDATING)
    assert len(importing) >= 2 and {p.total for p in importing} == {source.memories}
    assert [p.done for p in importing] == sorted(p.done for p in importing)
    assert importing[-1].done == source.memories
    assert importing[-1].describe() == f"{source.memories}/{source.memories} memories: {IMPORTING}"

    exported: list[Progress] = []
    await core.transfer.export_to(io.StringIO(), exported.append)
    assert len(exported) >= 4 and {(p.total, p.unit, p.message) for p in exported} == {
        (source.memories, "memories", EXPORTING)
    }
    assert [p.done for p in exported] == sorted(p.done for p in exported)
    assert exported[-1].done == source.memories


async def test_importing_twice_skips_everything_the_second_time(source: Source, core: ZapomniCore) -> None:
    first = await core.transfer.import_from(io.BytesIO(source.export))
    second = await core.transfer.import_from(io.BytesIO(source.export))
    assert first.imported == source.memories
    assert (second.imported, second.skipped, second.chunks_written) == (0, source.memories, 0)
    stats = await core.workspaces.stats()
    assert (stats.total_memories, stats.total_chunks) == (source.memories, source.chunks)


async def test_an_interrupted_import_is_finished_by_running_it_again(source: Source, core: ZapomniCore) -> None:
    # What an import that died after 120 memories leaves behind: the first 120 memories, complete.
    await core.transfer.import_from(io.BytesIO(_first(source.export, 120)))
    report = await core.transfer.import_from(io.BytesIO(source.export))
    assert (report.imported, report.skipped) == (source.memories - 120, 120)
    assert body(await _export(core)) == body(source.export)


async def test_a_version_1_file_imports_into_the_default_workspace(source: Source, core: ZapomniCore) -> None:
    # Format 1 had no `workspace` on memory lines (nor update lines); such files still import, into the default
    # workspace.
    old = []
    for line in lines(source.export):
        for newer in ("workspace", "graph_state", "entities", "relations", "updates"):
            line.pop(newer, None)
        if line["type"] == "zapomni-export":
            line["format_version"] = 1
        if line["type"] != "update":
            old.append(json.dumps(line, ensure_ascii=False))
    report = await core.transfer.import_from(io.BytesIO(("\n".join(old) + "\n").encode()))
    assert (report.imported, report.skipped) == (source.memories, 0)
    imported = lines(await _export(core))[1:]
    expected = [line for line in lines(source.export)[1:] if line["type"] != "update"]
    assert imported == [line | {"updates": 0} if line["type"] == "end" else line for line in expected]


async def test_a_memory_whose_text_is_already_stored_is_skipped(source: Source, core: ZapomniCore) -> None:
    # The same text under another id: an import deduplicates as add_memory does, and counts it as skipped.
    stored = await core.memories.add(AddMemoryRequest(text=lines(source.export)[2]["text"]))
    report = await core.transfer.import_from(io.BytesIO(_first(source.export, 3)))
    assert (report.imported, report.skipped) == (2, 1)
    stats = await core.workspaces.stats()
    assert stats.total_memories == 3
    exported = [m["id"] for m in lines(await _export(core))[1:-1]]
    assert exported == [stored.memory_id, source.ids[0], source.ids[2]]


def _replace_line(export: bytes, number: int, edit: Any) -> bytes:
    raw = export.decode().splitlines()
    raw[number - 1] = json.dumps(edit(json.loads(raw[number - 1])))
    return ("\n".join(raw) + "\n").encode()


ABSENT = "00000000-0000-4000-8000-000000000000"


def _update_line(older: str, newer: str) -> bytes:
    line = {
        "type": "update", "older": older, "newer": newer, "confidence": 0.9, "attribute": "home", "subject": "self",
        "cues": ["moved"], "evidence": "We moved.", "method": "rules",
    }  # fmt: skip
    return (json.dumps(line) + "\n").encode()


def _cases(export: bytes) -> dict[str, tuple[bytes, list[str]]]:
    raw = export.splitlines(keepends=True)
    end = len(raw)

    def with_(field: str, value: Any) -> Any:
        return lambda line: {**line, field: value}

    def chunk_edit(line: dict[str, Any]) -> dict[str, Any]:
        line["chunks"][0]["embedding"][5] = "0.5"
        return line

    def short_vector(line: dict[str, Any]) -> dict[str, Any]:
        line["chunks"][0]["embedding"] = line["chunks"][0]["embedding"][:100]
        return line

    return {
        "no end line": (b"".join(raw[:-1]), [f"ends at line {end - 1} without its end line", "truncated"]),
        "cut mid-line": (
            b"".join(raw[:100]) + raw[100][: len(raw[100]) // 2],
            ["line 101: not valid JSON", "truncated"],
        ),
        "a line missing": (b"".join(raw[:50] + raw[51:]), [f"line {end - 1}: the end line counts 200 memories"]),
        "tags not a list": (_replace_line(export, 150, with_("tags", "ops")), ["line 150: tags: ", "valid array"]),
        "created_at a number": (_replace_line(export, 60, with_("created_at", 1.5)), ["line 60: created_at: "]),
        "a string in a vector": (_replace_line(export, 120, chunk_edit), ["line 120: chunks.0.embedding.5: "]),
        "a vector too short": (_replace_line(export, 180, short_vector), ["line 180: chunks.0.embedding: ", "384"]),
        "an unknown field": (_replace_line(export, 30, with_("colour", "red")), ["line 30: colour: "]),
        "metadata too deep": (_replace_line(export, 40, with_("metadata", {"a": [1]})), ["line 40: metadata.a"]),
        "a blank tag": (_replace_line(export, 41, with_("tags", [""])), ["line 41: tags.0: "]),
        "an unknown line type": (
            b"".join([*raw[:190], b'{"type":"community","name":"Maria"}\n', *raw[190:]]),
            ["line 191: type: unknown line type 'community'"],
        ),
        "a duplicate memory": (b"".join([*raw[:-1], raw[7], raw[-1]]), [f"line {end}: id: ", "appears twice"]),
        "a newer format": (_replace_line(export, 1, with_("format_version", 6)), ["line 1: format_version: "]),
        "an update of a memory not in the file": (
            b"".join([*raw[:-1], _update_line(ABSENT, json.loads(raw[1])["id"]), raw[-1]]),
            [f"line {end}: older: memory {ABSENT} is not a memory line above it in workspace 'default'"],
        ),
        "a memory replacing itself": (
            b"".join([*raw[:-1], _update_line(json.loads(raw[1])["id"], json.loads(raw[1])["id"]), raw[-1]]),
            [f"line {end}: newer: a memory cannot replace itself"],
        ),
        "not an export": (b'{"hello": "world"}\n', ["line 1: not a Zapomni export"]),
        "empty": (b"", ["the file is empty"]),
    }


async def test_a_bad_file_names_the_line_and_field_and_writes_nothing(
    source: Source, core: ZapomniCore, data_dir: Path
) -> None:
    for name, (content, fragments) in _cases(source.export).items():
        with pytest.raises(TransferError) as caught:
            await core.transfer.import_from(io.BytesIO(content))
        message = str(caught.value)
        assert all(fragment in message for fragment in fragments), (name, message)
        assert message.endswith("; nothing was imported"), (name, message)
        assert await node_counts(data_dir) == (0, 0), name


async def test_a_chunk_id_taken_by_another_memory_is_refused(source: Source, core: ZapomniCore) -> None:
    # Store the memory of line 6 with the id the file gives the first chunk of line 4's memory.
    parsed = lines(source.export)
    thief = parsed[5]
    thief["chunks"][0]["id"] = parsed[3]["chunks"][0]["id"]
    await core.transfer.import_from(io.BytesIO(_file(source.export, [thief])))
    with pytest.raises(TransferError, match=r"line 4: chunks\.0\.id: chunk \S+ already belongs to another memory"):
        await core.transfer.import_from(io.BytesIO(source.export))
    assert (await core.workspaces.stats()).total_memories == 1


def _file(export: bytes, memories: list[dict[str, Any]]) -> bytes:
    """An export with the header of `export` and these memory lines."""
    end = {"type": "end", "memories": len(memories), "chunks": sum(len(m["chunks"]) for m in memories)}
    out = [export.splitlines()[0].decode(), *(json.dumps(m) for m in memories), json.dumps(end)]
    return ("\n".join(out) + "\n").encode()


def _first(export: bytes, count: int) -> bytes:
    return _file(export, lines(export)[1 : count + 1])


async def test_a_file_without_embeddings_is_re_embedded_to_the_same_answers(source: Source, core: ZapomniCore) -> None:
    stripped = []
    for line in lines(source.export):
        for chunk in line["chunks"] if line["type"] == "memory" else []:
            del chunk["embedding"]
        stripped.append(json.dumps(line, ensure_ascii=False))
    content = ("\n".join(stripped) + "\n").encode()
    assert b'"embedding"' not in content
    report = await core.transfer.import_from(io.BytesIO(content))
    assert report.re_embedded and report.chunks_embedded == source.chunks and report.chunks_from_file == 0
    assert report.rechunked == 0 and report.imported == source.memories
    assert_same_answers(source.results, await _answers(core))


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeOllama(models=["nomic-embed-text"]) as server:
        yield server


async def test_another_embedder_re_embeds_and_chunks_again(
    source: Source, data_dir: Path, fake_ollama: FakeOllama
) -> None:
    settings = _settings(data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake_ollama.url)
    async with open_core(settings) as (core, _info):
        report = await core.transfer.import_from(io.BytesIO(source.export))
        assert report.re_embedded and report.chunks_from_file == 0
        assert report.embedder == "ollama:nomic-embed-text (768-d)" != report.file_embedder
        assert (report.imported, report.rechunked) == (source.memories, source.memories)
        # nomic reads 512 tokens where MiniLM reads 256: the long memory now takes fewer chunks.
        assert report.chunks_written < source.chunks
        assert report.chunks_embedded == report.chunks_written
        found = await core.memories.search(SearchRequest(query="ticket OPS-1047", mode="keyword", limit=1))
        assert [hit.memory_id for hit in found.results] == [source.ids[47]]


def zapomni(data_dir: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    """In this process, or as one where it reads a pipe (`stdin`)."""
    env = child_env(ZAPOMNI_DATA_DIR=str(data_dir), LOG_LEVEL="WARNING")
    if "stdin" in kwargs:
        return run_zapomni(list(args), env, text=False, **kwargs)
    return run_cli(args, env, text=False, **kwargs)


async def test_the_command_line_exports_and_imports(source: Source, data_dir: Path, tmp_path: Path) -> None:
    target = Path(tempfile.mkdtemp(prefix="zt-cli-", dir="/tmp"))
    try:
        exported = zapomni(source.data_dir, "export", "--output", str(tmp_path / "memories.jsonl"))
        assert exported.returncode == 0, exported.stderr
        assert exported.stdout == b"" and b"200 memories" in exported.stderr
        assert body((tmp_path / "memories.jsonl").read_bytes()) == body(source.export)
        assert [p.name for p in tmp_path.iterdir()] == ["memories.jsonl"]  # no temporary file left behind
        assert (tmp_path / "memories.jsonl").stat().st_mode & 0o077 == 0

        imported = zapomni(data_dir, "import", str(tmp_path / "memories.jsonl"), "--json")
        assert imported.returncode == 0, imported.stderr
        counts = json.loads(imported.stdout)
        assert (counts["imported"], counts["skipped"], counts["re_embedded"]) == (source.memories, 0, False)

        # stdout to stdin through a pipe: the import spools what it cannot read twice.
        env = child_env(ZAPOMNI_DATA_DIR=str(data_dir), LOG_LEVEL="WARNING")
        with subprocess.Popen(
            [ZAPOMNI, "export"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        ) as producer:
            piped = zapomni(target, "import", "-", stdin=producer.stdout)
        assert producer.returncode == 0 and piped.returncode == 0, piped.stderr
        assert piped.stdout.decode().startswith(f"imported {source.memories} memories ({source.chunks} chunks)")
        assert b"nothing re-embedded" in piped.stdout
        # The piped import stored exactly the memories of the file: all of them are there again.
        again = zapomni(target, "import", str(tmp_path / "memories.jsonl"))
        assert again.returncode == 0 and b"imported 0 memories" in again.stdout, again.stderr
        assert f"skipped {source.memories} already in the store".encode() in again.stdout

        (tmp_path / "cut.jsonl").write_bytes(source.export[: len(source.export) // 2])
        refused = zapomni(target, "import", str(tmp_path / "cut.jsonl"))
        assert refused.returncode == 1 and b"zapomni import: line " in refused.stderr
        assert b"truncated" in refused.stderr and refused.stdout == b""
    finally:
        shutil.rmtree(target, ignore_errors=True)


async def test_a_turn_keeps_its_speaker_and_kind_through_a_round_trip(data_dir: Path, tmp_path: Path) -> None:
    said = AddMemoryRequest.model_validate({"text": "I adopted a puppy.", "metadata": {"speaker": "Caroline"}})
    told = AddMemoryRequest(text="Caroline: We hiked up Mount Tam.")
    async with open_core(_settings(tmp_path / "a")) as (core, _info):
        ids = [(await core.memories.add(request)).memory_id for request in (said, told)]
        exported = await _export(core)
    memories = [line for line in lines(exported) if line["type"] == "memory"]
    assert [line["kind"] for line in memories] == ["note", "note"], "the stored kind: turns are notes"
    async with open_core(_settings(data_dir)) as (core, _info):
        await core.transfer.import_from(io.BytesIO(exported))
        page = await core.memories.page(ListMemoriesRequest(filters=SearchFilters(speaker="Caroline")))
        assert {(m.memory_id, m.kind) for m in page.memories} == {(ids[0], "turn"), (ids[1], "turn")}
        workspace = await core.workspaces.registry.get(None, create=False)
        assert workspace is not None
        [chunk] = await workspace.stores.reads.chunks(ids[1])
        assert chunk.context == "Caroline", "read with its speaker, as it was before the export"
