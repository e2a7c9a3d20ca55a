"""Ingestion throughput on SciFact: the bare embedder, concurrent adds, and one add at a time through MCP.

On an evenly spaced sample of SciFact documents (title + abstract, chunked as any memory: most
chunks are near the model's 256-token window), measured on the same chunks:
(a) the bare embedder: `OnnxMiniLMEmbedder.embed_sync` on all of a round's chunks at once, the ceiling;
(b) 4 concurrent `ZapomniCore.add_memory` calls through `open_core`, as bench/quality.py ingests,
    once with appendfsync everysec (as quality.py) and once with always (the product default);
(c) sequential adds through MCP: the official client (`ClientSession` + `stdio_client`) driving
    `zapomni serve` with the product defaults (appendfsync always), one add at a time as an agent
    adds: adds/s, p50/p95 latency, chunks/s.
The sample is cut into short rounds and each round runs (a), (b) and (c) back to back on its
documents, so a change of load on the 2 shared cores falls on every row alike. Rates are totals
over rounds; beside them, the median over rounds of each round's share of (a), which a burst of
load elsewhere moves least. (a) is also run on the whole sample in one call, before and after, as a
reference for what a round's smaller batches cost.

Run: `.venv/bin/python -m bench.ingestion` (about 5 minutes on 2 cores); `--docs 8 --rounds 2` for a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import DATA_DIR, load_scifact, summary_ms
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_core.runtime import chunker_for

RESULTS = Path(__file__).resolve().parent / "results"
DOCS = 240
ROUNDS = 12  # short rounds: the load other work puts on the shared cores changes within seconds
CONCURRENCY = 4
WARM_UP = "Warm-up memory: loads the model and opens the store before the clock starts."


@dataclass
class Tally:
    """Chunks and seconds summed over rounds; per-add latencies for the sequential run."""

    chunks: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0

    def add(self, other: Tally) -> None:
        self.chunks += other.chunks
        self.seconds += other.seconds
        self.latencies_ms += other.latencies_ms


def sample(data_dir: Path, docs: int) -> list[str]:
    texts = load_scifact(data_dir, None).doc_texts
    return texts[:: max(1, len(texts) // docs)][:docs]


def bare(embedder: OnnxMiniLMEmbedder, chunks: list[str], tally: Tally) -> None:
    started = time.perf_counter()
    embedder.embed_sync(chunks)
    tally.seconds += time.perf_counter() - started
    tally.chunks += len(chunks)


async def concurrent_adds(core: ZapomniCore, texts: list[str], tally: Tally) -> None:
    queue = list(texts)
    created = 0

    async def worker() -> None:
        nonlocal created
        while queue:
            result = await core.memories.add(AddMemoryRequest(text=queue.pop(0)))
            created += result.chunks_created  # after the await: `created += await ...` would lose updates

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    tally.seconds += time.perf_counter() - started
    tally.chunks += created


async def sequential_mcp_adds(session: ClientSession, texts: list[str], tally: Tally) -> None:
    for text in texts:
        started = time.perf_counter()
        result = await session.call_tool("add_memory", {"text": text})
        elapsed = time.perf_counter() - started
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"add_memory failed through MCP: {result.content}")
        tally.seconds += elapsed
        tally.latencies_ms.append(elapsed * 1000)
        tally.chunks += int(result.structured_content["chunks_created"])


@asynccontextmanager
async def mcp_server(data_dir: Path) -> AsyncIterator[ClientSession]:
    """`zapomni serve` with the product's defaults (appendfsync always), driven by the official client."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "zapomni"),
        args=["serve"],
        env={"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING", "PATH": os.environ.get("PATH", "")},
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def later_sections(workdir: Path) -> dict[str, Any]:
    """RESERVED for the lead: "one 1 MB add through the job path" and "search latency during ingestion".

    Return {section title: {figure: value}}; `render` prints each as a section of the report.
    """
    return {}


async def run(data_dir: Path, docs: int, rounds: int, workdir: Path) -> dict[str, Any]:
    texts = sample(data_dir, docs)
    embedder = OnnxMiniLMEmbedder()
    chunker = chunker_for(embedder, Settings.from_variables(ZAPOMNI_DATA_DIR=workdir / "unused"))
    pieces = [chunker.split(text) for text in texts]
    tokens = embedder.count_tokens([chunk for chunks in pieces for chunk in chunks])
    embedder.embed_sync([WARM_UP])
    everything = [chunk for chunks in pieces for chunk in chunks]
    whole = Tally()
    bare(embedder, everything, whole)
    tallies = {name: Tally() for name in ("bare", "everysec", "always", "mcp")}
    per_round: list[dict[str, float]] = []
    async with (
        open_core(
            Settings.from_variables(
                ZAPOMNI_DATA_DIR=workdir / "everysec", ZAPOMNI_APPENDFSYNC="everysec", LOG_LEVEL="WARNING"
            )
        ) as (fast, _i1),
        open_core(
            Settings.from_variables(
                ZAPOMNI_DATA_DIR=workdir / "always", ZAPOMNI_APPENDFSYNC="always", LOG_LEVEL="WARNING"
            )
        ) as (
            safe,
            _i2,
        ),
        mcp_server(workdir / "mcp") as session,
    ):
        for core in (fast, safe):
            await core.memories.add(AddMemoryRequest(text=WARM_UP))
        await session.call_tool("add_memory", {"text": WARM_UP})
        size = -(-len(texts) // rounds)
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            this_round = {name: Tally() for name in tallies}
            bare(embedder, [chunk for chunks in pieces[start : start + size] for chunk in chunks], this_round["bare"])
            await concurrent_adds(fast, batch, this_round["everysec"])
            await concurrent_adds(safe, batch, this_round["always"])
            await sequential_mcp_adds(session, batch, this_round["mcp"])
            for name, tally in this_round.items():
                tallies[name].add(tally)
            per_round.append({name: round(tally.rate, 2) for name, tally in this_round.items()})
            print(f"round {len(per_round)}/{rounds}: {per_round[-1]} chunks/s", file=sys.stderr)
    bare(embedder, everything, whole)
    await embedder.aclose()
    ceiling = tallies["bare"].rate
    for name in ("everysec", "always", "mcp"):
        assert tallies[name].chunks == tallies["bare"].chunks, (name, tallies[name].chunks, tallies["bare"].chunks)
    mcp = tallies["mcp"]
    return {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "cpus": os.cpu_count(),
        "documents": len(texts),
        "rounds": rounds,
        "chunks": tallies["bare"].chunks,
        "chunk_tokens": {
            "mean": round(float(np.mean(tokens)), 1),
            "share_at_least_200": round(float(np.mean(np.asarray(tokens) >= 200)), 3),
        },
        "bare_chunks_per_s": round(ceiling, 2),
        "bare_whole_sample_chunks_per_s": round(whole.rate, 2),
        "concurrent": {
            policy: {
                "chunks_per_s": round(tallies[policy].rate, 2),
                "share_of_bare": round(tallies[policy].rate / ceiling, 3),
                "median_round_share": round(float(np.median(round_shares(per_round, policy))), 3),
                "seconds": round(tallies[policy].seconds, 1),
            }
            for policy in ("everysec", "always")
        },
        "mcp_sequential": {
            "appendfsync": "always",
            "adds_per_s": round(len(mcp.latencies_ms) / mcp.seconds, 2),
            "latency_ms": summary_ms(mcp.latencies_ms),
            "chunks_per_s": round(mcp.rate, 2),
            "share_of_bare": round(mcp.rate / ceiling, 3),
            "median_round_share": round(float(np.median(round_shares(per_round, "mcp"))), 3),
        },
        "chunks_per_s_by_round": per_round,
        "later": await later_sections(workdir),
    }


def round_shares(per_round: list[dict[str, float]], name: str) -> list[float]:
    return [r[name] / r["bare"] for r in per_round if r["bare"]]


def spread(results: dict[str, Any], name: str) -> str:
    shares = round_shares(results["chunks_per_s_by_round"], name)
    return f"{np.median(shares) * 100:.0f} % ({min(shares) * 100:.0f}–{max(shares) * 100:.0f})" if shares else ""


def render(results: dict[str, Any]) -> str:
    mcp = results["mcp_sequential"]
    ceiling, whole = results["bare_chunks_per_s"], results["bare_whole_sample_chunks_per_s"]
    lines = [
        "# Ingestion throughput — SciFact chunks",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (shared); {results['documents']} documents → "
        f"{results['chunks']} chunks (mean {results['chunk_tokens']['mean']} tokens, "
        f"{results['chunk_tokens']['share_at_least_200'] * 100:.0f} % of 200 tokens or more), in "
        f"{results['rounds']} rounds; each round runs every row back to back on the same documents.",
        "- Produced by `python -m bench.ingestion`.",
        "",
        "| path | chunks/s | share of bare | median share of a round (min–max) |",
        "|---|---:|---:|---:|",
        f"| (a) bare embedder (`embed_sync`, a round's chunks at once) | {results['bare_chunks_per_s']} | 100 % | |",
        f"| (a) bare embedder, the whole sample in one call (reference) | {whole} | {whole / ceiling * 100:.0f} % | |",
    ]
    for policy, row in results["concurrent"].items():
        lines.append(
            f"| (b) {CONCURRENCY} concurrent `add_memory` (`open_core`), appendfsync {policy} "
            f"| {row['chunks_per_s']} | {row['share_of_bare'] * 100:.0f} % | {spread(results, policy)} |"
        )
    lines += [
        f"| (c) one `add_memory` at a time through MCP (official client, `zapomni serve`), appendfsync "
        f"{mcp['appendfsync']} | {mcp['chunks_per_s']} | {mcp['share_of_bare'] * 100:.0f} % "
        f"| {spread(results, 'mcp')} |",
        "",
        f"Sequential adds through MCP: {mcp['adds_per_s']} adds/s, latency p50 {mcp['latency_ms']['p50']} ms, "
        f"p95 {mcp['latency_ms']['p95']} ms (client side, one add at a time).",
    ]
    for title, figures in results["later"].items():
        lines += ["", f"## {title}", ""] + [f"- {name}: {value}" for name, value in figures.items()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--docs", type=int, default=DOCS, help="documents in the sample")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds the sample is cut into")
    parser.add_argument("--output", type=Path, default=RESULTS / "ingestion.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "ingestion.json")
    args = parser.parse_args(argv)
    if not (args.data_dir / "corpus.jsonl").is_file():
        print(f"SciFact not found at {args.data_dir}: nothing to measure", file=sys.stderr)
        return 2
    configure_logging("WARNING")
    workdir = Path(tempfile.mkdtemp(prefix="zi-", dir="/tmp"))
    try:
        results = asyncio.run(run(args.data_dir, args.docs, max(1, args.rounds), workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = render(results)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
