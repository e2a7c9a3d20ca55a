"""Large adds through MCP: time to answer, indexing time, and searches while a job indexes.

Drives `zapomni serve` (embedded defaults, appendfsync always) with the official MCP client, as an
agent would. For a 1 MB and a 10 MB document of real prose (SciFact abstracts; the 10 MB one is
several passes over the corpus with each abstract's sentences shuffled, so no chunk repeats and
the embedding cache never helps):
- the time `add_memory` takes to answer, and the time until its job has made it searchable;
- the job's chunks/s beside the bare embedder's on the same chunks (the ceiling);
- search p50/p95 through MCP on an idle server, and on the same server while the 1 MB add indexes.

Run: `.venv/bin/python -m bench.large_adds` (about 15 minutes on 2 cores); `--sizes-kb 40 --searches 5`
for a quick look.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import DATA_DIR, call, load_scifact, summary_ms
from zapomni_core import Settings
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_core.runtime import chunker_for

RESULTS = Path(__file__).resolve().parent / "results"
ZAPOMNI = shutil.which("zapomni", path=str(Path(sys.executable).parent)) or "zapomni"
SEED_MEMORIES = 300  # abstracts stored first, so searches have something to find
BARE_SAMPLE = 400  # chunks the bare embedder embeds for the ceiling


def document(abstracts: Sequence[str], size_bytes: int) -> str:
    """Abstracts, pass after pass (sentences shuffled from the second pass on), just under `size_bytes`."""
    parts: list[str] = []
    size = 0
    rng = random.Random(7)
    for round_ in range(1000):
        for abstract in abstracts:
            if round_:
                sentences = abstract.split(". ")
                rng.shuffle(sentences)
                abstract = ". ".join(sentences)
            size += len(abstract.encode()) + 2
            if size > size_bytes:  # stop just under: 10 MB is add_memory's limit
                return "\n\n".join(parts)
            parts.append(abstract)
    return "\n\n".join(parts)


@asynccontextmanager
async def server(data_dir: Path, **variables: str) -> AsyncIterator[ClientSession]:
    """`zapomni serve` on the embedded defaults over `data_dir`, with more environment `variables` if given."""
    env = {"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING", "PATH": str(Path(sys.executable).parent)}
    env |= variables
    if os.environ.get("PYTHONPATH"):  # a tree other than the installed one (measuring a branch, or main before it)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=env)
    with open(data_dir.parent / "server.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def searches(session: ClientSession, queries: Sequence[str]) -> list[float]:
    return [(await call(session, "search_memory", {"query": q}))[1] for q in queries]


async def wait_job(session: ClientSession, job_id: str) -> dict[str, Any]:
    while True:
        info, _ = await call(session, "job_status", {"job_id": job_id, "wait_s": 30})
        if info["state"] not in ("pending", "running"):
            assert info["state"] == "completed", info
            return info


async def large_add(session: ClientSession, text: str, queries: Sequence[str] | None) -> dict[str, Any]:
    """Add `text`; while its job runs, search with `queries` round after round (if given)."""
    added, answer_ms = await call(session, "add_memory", {"text": text})
    assert added["status"] == "indexing", added
    started = time.perf_counter()
    during: list[float] = []
    if queries:
        while (await call(session, "job_status", {"job_id": added["job_id"]}))[0]["state"] in ("pending", "running"):
            during += await searches(session, queries)
    info = await wait_job(session, added["job_id"])
    seconds = time.perf_counter() - started
    chunks = info["counts"]["chunks"]
    return {
        "bytes": len(text.encode()),
        "answer_ms": round(answer_ms, 1),
        "chunks": chunks,
        "indexing_s": round(seconds, 1),
        "chunks_per_s": round(chunks / seconds, 1),
        "searches_during": during,
    }


def bare_rate(text: str) -> float:
    """Chunks/s of the bare embedder on an evenly spaced sample of the document's chunks."""
    embedder = OnnxMiniLMEmbedder()
    chunks = chunker_for(embedder, Settings()).split(text)
    sample = chunks[:: max(1, len(chunks) // BARE_SAMPLE)]
    started = time.perf_counter()
    embedder.embed_sync(sample)
    return len(sample) / (time.perf_counter() - started)


async def run(data_dir: Path, sizes_kb: Sequence[int], search_count: int, workdir: Path) -> dict[str, Any]:
    data = load_scifact(data_dir, None)
    abstracts = [t for t in data.doc_texts if len(t) > 200] or data.doc_texts
    queries = data.query_texts[:search_count]
    seed, body = abstracts[:SEED_MEMORIES], abstracts[SEED_MEMORIES:] or abstracts
    report: dict[str, Any] = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "adds": []}
    async with server(workdir / "store") as session:
        for abstract in seed:
            await call(session, "add_memory", {"text": abstract})
        await searches(session, queries)  # warm: model, cache of this process, keyword index
        report["search_idle_ms"] = summary_ms(await searches(session, queries))
        report["searches_idle"] = len(queries)
        for i, size_kb in enumerate(sizes_kb):
            text = document(body, size_kb * 1024)
            result = await large_add(session, text, queries if i == 0 else None)
            during = result.pop("searches_during")
            if i == 0:
                report["search_during_ingestion_ms"] = summary_ms(during) if during else None
                report["searches_during_ingestion"] = len(during)
            result["bare_embedder_chunks_per_s"] = round(bare_rate(text), 1)
            result["share_of_bare"] = round(result["chunks_per_s"] / result["bare_embedder_chunks_per_s"], 3)
            report["adds"].append(result)
    return report


def render(report: dict[str, Any]) -> str:
    idle, during = report["search_idle_ms"], report["search_during_ingestion_ms"]
    lines = [
        "# Large adds through MCP",
        "",
        f"Measured {report['measured_at']} on this machine (2 cores), `zapomni serve` on the embedded defaults "
        "(appendfsync always), driven by the official MCP client. Source: `bench/large_adds.py`.",
        "",
        "| document | answer (ms) | chunks | indexed after (s) | job chunks/s | bare embedder chunks/s | share |",
        "|---|---|---|---|---|---|---|",
    ]
    for add in report["adds"]:
        lines.append(
            f"| {add['bytes'] / 1e6:.2f} MB | {add['answer_ms']} | {add['chunks']} | {add['indexing_s']} | "
            f"{add['chunks_per_s']} | {add['bare_embedder_chunks_per_s']} | {add['share_of_bare']:.0%} |"
        )
    lines += [
        "",
        "Search through MCP (query embedding included), the same queries:",
        "",
        "| server | p50 ms | p95 ms | searches |",
        "|---|---|---|---|",
        f"| idle | {idle['p50']} | {idle['p95']} | {report['searches_idle']} |",
    ]
    if during:
        count = report["searches_during_ingestion"]
        lines.append(f"| indexing the first document | {during['p50']} | {during['p95']} | {count} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="BEIR SciFact folder")
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[1024, 10240], help="document sizes")
    parser.add_argument("--searches", type=int, default=50, help="queries per search round")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where large_adds.md/.json go")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    if not (args.data_dir / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data_dir} (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="zb-large-", dir="/tmp"))
    try:
        report = asyncio.run(run(args.data_dir, args.sizes_kb, args.searches, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "large_adds.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "large_adds.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
