"""Small helpers shared by the integration and end-to-end tests."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from mcp.types import (
    CallToolResult,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from structlog.testing import capture_logs

from zapomni_core import RuntimeInfo, Settings, ZapomniCore
from zapomni_core import open_core as open_engine
from zapomni_core.memories.replies import SearchHit
from zapomni_db.embedded_layout import EmbeddedPaths

if TYPE_CHECKING:
    from mcp import ClientSession

    from zapomni_core.access.service import AccessService
    from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
    from zapomni_db import GraphClient


# -- one ONNX model for the whole run ----------------------------------------------------------------

_model: OnnxMiniLMEmbedder | None = None


def shared_model() -> OnnxMiniLMEmbedder:
    """The suite's one ONNX embedder (loading it costs most of a second; hundreds of engines use it).

    Stateless between calls: it keeps no cache (each engine has its own) and serves any event loop.
    """
    global _model
    if _model is None:
        from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder

        _model = OnnxMiniLMEmbedder()
    return _model


def close_shared_model() -> None:
    global _model
    if _model is not None:
        asyncio.run(_model.aclose())
        _model = None


def _default_onnx(settings: Settings) -> bool:
    """The settings would build exactly the shared model (any other choice builds its own, errors included)."""
    defaults = Settings.model_fields
    return (
        settings.embedder == "onnx"
        and settings.embedding_model is None
        and settings.embedding_batch_size == defaults["embedding_batch_size"].default
        and settings.embedding_threads == defaults["embedding_threads"].default
    )


@asynccontextmanager
async def open_core(
    settings: Settings, *, background_jobs: bool = True
) -> AsyncIterator[tuple[ZapomniCore, RuntimeInfo]]:
    """`zapomni_core.open_core`, on the shared ONNX model when the settings name the default one."""
    model = shared_model() if _default_onnx(settings) else None
    async with open_engine(settings, background_jobs=background_jobs, model=model) as opened:
        yield opened


def similarity(hit: SearchHit) -> float:
    """A hit's similarity score, which only an answer given before the database has loaded leaves out."""
    assert hit.similarity_score is not None, hit
    return hit.similarity_score


def configured(settings: Settings, **variables: str) -> Settings:
    """`settings` (a test's data directory and graph) with more settings named as in the environment
    (ZAPOMNI_GRAPH_AUTO="true", OLLAMA_HOST=...): what `zapomni serve` would run with those variables set."""
    return Settings.from_variables(
        ZAPOMNI_DATA_DIR=settings.data_dir, GRAPH_NAME=settings.graph_name, LOG_LEVEL=settings.log_level, **variables
    )


@asynccontextmanager
async def local_session(settings: Settings, *, background_jobs: bool = True) -> AsyncIterator[ClientSession]:
    """An initialised session of the official SDK client with the real MCP server object (what `zapomni serve`
    runs) on an engine over `settings`, through the SDK's in-memory transport: tool behaviour without a
    subprocess. stdio framing, signals, shutdown, HTTP and the CLI keep their subprocess tests (tests/e2e)."""
    from mcp import Client

    from zapomni_mcp.handlers import build_server
    from zapomni_mcp.opening import Opening
    from zapomni_mcp.transport import STDIO_IS_LOCAL

    async with open_core(settings, background_jobs=background_jobs) as (core, _info):
        server = build_server(Opening.of(core), local=STDIO_IS_LOCAL)
        async with Client(server, mode="legacy") as client:
            yield client.session


# `make test-properties` sets it: the property runs' examples, 20 times the default run's.
EXHAUSTIVE = os.environ.get("ZAPOMNI_TEST_EXHAUSTIVE") == "1"

# For tests about jobs, progress and kills mid-write, where what matters is how many chunks a text has, not how
# long each is: a chunk of 64 tokens embeds in about a fifth of the CPU of the default 256 (one ONNX thread, 64
# chunks: 1.3 against 6.1 s), so a text a third as long gives as many chunks for about a quarter of the cost.
SMALL_CHUNKS = {"ZAPOMNI_CHUNK_MAX_TOKENS": "64"}


def examples(count: int) -> int:
    """A property run's example count: `count` in the default run, 20 × `count` in `make test-properties`."""
    return count * 20 if EXHAUSTIVE else count


def text_of(result: CallToolResult) -> str:
    """The readable text of a tool call's result (its first content block, which every Zapomni tool makes text)."""
    block = result.content[0]
    assert isinstance(block, TextContent), result.content
    return block.text


def resource_text(read: ReadResourceResult) -> str:
    """The text of a read resource (a memory is read as text)."""
    contents = read.contents[0]
    assert isinstance(contents, TextResourceContents), read.contents
    return contents.text


def annotations_of(tool: Tool) -> ToolAnnotations:
    """A listed tool's annotations, which every Zapomni tool declares."""
    assert tool.annotations is not None, tool.name
    return tool.annotations


def unit_vector(rng: random.Random, dimension: int = 384) -> list[float]:
    """A random direction, normalised: a stored vector for tests that need no model (nothing embeds to it)."""
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


async def until(condition: Callable[[], bool], timeout_s: float = 60.0, what: str = "the condition") -> None:
    """Wait in the event loop until `condition()` holds; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        await asyncio.sleep(0.05)


async def writes_resumed(core: ZapomniCore, timeout_s: float = 240.0) -> None:
    """Wait until a store just loaded has built its indexes again: writes are held until then, by design."""
    await until(lambda: not core.workspaces.registry.held_writes(None), timeout_s, "writes resumed after the load")


@contextmanager
def logged_events() -> Iterator[list[MutableMapping[str, Any]]]:
    """Every structlog event this process logs meanwhile, at any level (whatever an earlier test configured)."""
    saved = structlog.get_config()
    with capture_logs() as events:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
        try:
            yield events
        finally:
            structlog.configure(wrapper_class=saved["wrapper_class"])


def keyword_index_dirs(settings: Settings) -> list[Path]:
    """The keyword index directories beside the embedded database, one per graph
    (`zapomni_core.search.keyword_index`; its dot-named entries are the processes present, not graphs)."""
    root = settings.data_dir / "keyword-index"
    graphs = (path for path in root.iterdir() if path.is_dir() and not path.name.startswith("."))
    return sorted(graphs) if root.is_dir() else []


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_pids(data_dir: Path) -> list[int]:
    """PIDs of redis-server processes serving `data_dir` (read from /proc, no ps needed)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            # redis-server retitles itself "<path>/redis-server unixsocket:<socket>".
            if cmdline and b"redis-server" in cmdline[0] and str(data_dir).encode() in cmdline[0]:
                pids.append(int(entry.name))
    return pids


@asynccontextmanager
async def graph_client(data_dir: Path, graph: str = "zapomni") -> AsyncIterator[GraphClient]:
    """A client of one graph of the embedded database serving `data_dir` (which must be running)."""
    from zapomni_db import DatabaseTarget, GraphClient, connect
    from zapomni_db.embedded_layout import EmbeddedPaths

    connection = connect(DatabaseTarget(str(data_dir), graph, socket=EmbeddedPaths(data_dir).socket))
    try:
        yield GraphClient(connection, graph)
    finally:
        await connection.close()


async def chunk_node_count(data_dir: Path, graph: str = "zapomni") -> int:
    """Every Chunk node in a graph, linked to a memory or not: duplicates and leftovers would show."""
    async with graph_client(data_dir, graph) as client:
        rows = await client.ro_query("MATCH (c:Chunk) RETURN count(c)")
    return int(rows[0][0])


async def all_chunk_ids(data_dir: Path, graph: str = "zapomni") -> set[str]:
    """Every chunk linked to a memory, read straight from the embedded database."""
    async with graph_client(data_dir, graph) as client:
        rows = await client.ro_query("MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id")
    return {row[0] for row in rows}


@contextmanager
def mounted_tmpfs(size: str) -> Iterator[Path]:
    """A fresh tmpfs of `size` (e.g. "32m") on a short path under /tmp: a real disk that fills up.

    Needs root (the test machines run as root); elsewhere the test is skipped. Unmounted on exit,
    lazily if something still holds it, so a failing test does not leave a mount behind.
    """
    import pytest

    path = Path(tempfile.mkdtemp(prefix="zfs-", dir="/tmp"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=False)
    if mounted.returncode != 0:
        path.rmdir()
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield path
    finally:
        print_database_logs(path / "data" if (path / "data").is_dir() else path)
        if subprocess.run(["umount", str(path)], check=False, capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], check=False)
        path.rmdir()


def print_database_logs(data_dir: Path, tail_chars: int = 4000) -> None:
    """The ends of an embedded database's keeper and server logs, on stderr. Fixtures call it as they tear a data
    directory down: pytest shows what a teardown prints only under a test that failed, which is when the logs are
    wanted (a private FalkorDB that closed its connections under load left no trace once its directory was gone)."""
    paths = EmbeddedPaths(data_dir)
    for log in (paths.keeper_log, paths.log_file):
        if log.is_file():
            print(f"--- the end of {log} ---\n{log.read_text(errors='replace')[-tail_chars:]}", file=sys.stderr)


def fill_disk(path: Path, leave_bytes: int) -> Path:
    """A file that takes all the free space on `path`'s disk but `leave_bytes`; delete it to free the space."""
    filler = path / "filler"
    with filler.open("wb") as out:
        out.write(b"\0" * max(shutil.disk_usage(path).free - leave_bytes, 0))
    return filler


@asynccontextmanager
async def access_service(data_dir: Path) -> AsyncIterator[AccessService]:
    """core.access (what `zapomni token ...` uses) on the embedded database serving `data_dir` (running)."""
    from zapomni_core.access.service import AccessService
    from zapomni_db import AccessStore, DatabaseTarget, connect
    from zapomni_db.embedded_layout import EmbeddedPaths

    connection = connect(DatabaseTarget(str(data_dir), "zapomni", socket=EmbeddedPaths(data_dir).socket))
    try:
        yield AccessService(AccessStore(connection, "zapomni"))
    finally:
        await connection.close()


async def make_tokens(data_dir: Path, specs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Real tokens in the embedded database serving `data_dir`, by name: each spec has `role` and `workspaces`
    (None: all), and may say `revoked: True` or `expired: True`. Made by core.access as `zapomni token create`
    makes them; an expired one, which it refuses to make, goes straight into its store."""
    from zapomni_core import CreateTokenRequest, RevokeTokenRequest
    from zapomni_core.access.tokens import digest, new_token
    from zapomni_db import TokenRow

    tokens = {}
    async with access_service(data_dir) as service:
        for name, spec in specs.items():
            workspaces = spec["workspaces"]
            if spec.get("expired"):
                token_id, token = new_token()
                now = time.time()
                scope = tuple(workspaces) if workspaces is not None else None
                record = TokenRow(token_id, name, spec["role"], scope, now - 120, now - 60, None, None, digest(token))
                await service._store.prepare()
                assert await service._store.create(record, now - 120) is not None
                tokens[name] = token
                continue
            request = CreateTokenRequest(
                name=name, role=spec["role"], all_workspaces=workspaces is None, workspaces=list(workspaces or [])
            )
            tokens[name] = (await service.create(request)).token
            if spec.get("revoked"):
                await service.revoke(RevokeTokenRequest(name_or_id=name))
    return tokens


CODE_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "code"


def docs_and_code(root: Path) -> tuple[Path, Path]:
    """A folder of documents (a runbook with two sections) and a Python codebase under `root`, to ingest and index."""
    docs = root / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text(
        "# Runbook\n\n## Restarts\n\nRestart the ingest worker with systemctl restart zebra-worker.\n\n"
        "## Backups\n\nBackups are copied to the cold bucket every night at two.\n"
    )
    code = root / "code"
    shutil.copytree(CODE_FIXTURES / "python", code)
    return docs, code
