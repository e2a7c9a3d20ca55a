"""What the benchmarks share: the BEIR SciFact data, timing, progress bars, MCP calls (metrics: bench.metrics,
LoCoMo: bench.locomo).

Nothing here imports the application, so a broken `app/` cannot break data loading.
"""

from __future__ import annotations

import asyncio
import csv
import json
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import httpx
import numpy as np

if TYPE_CHECKING:
    from mcp import ClientSession

REPO_ROOT = Path(__file__).resolve().parent.parent
# The installed command beside this interpreter: the checkout the bench runs from.
ZAPOMNI = str(Path(sys.executable).parent / "zapomni")
DATA_DIR = (REPO_ROOT / ".." / "shared" / "data" / "scifact").resolve()


@dataclass(frozen=True)
class SciFact:
    doc_ids: list[str]
    doc_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: graded relevance}


def read_jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)  # header: query-id, corpus-id, score
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def claims(data_dir: Path, split: str) -> tuple[list[str], list[str], dict[str, dict[str, int]]]:
    """Ids and texts of the claims of `split` (train, test) that have judgements, and those judgements."""
    qrels = read_qrels(data_dir / "qrels" / f"{split}.tsv")
    ids, texts = [], []
    for query in read_jsonl(data_dir / "queries.jsonl"):
        if str(query["_id"]) in qrels:
            ids.append(str(query["_id"]))
            texts.append(str(query["text"]))
    return ids, texts, qrels


def scifact_documents(data_dir: Path, way: str = "issue") -> list[tuple[str, str, dict[str, str]]]:
    """(doc id, text, metadata) of every corpus document as a client stores it through MCP.

    `issue` (issue 25's independent run, what bench/conversations.py reports): `title` + newline + text,
    metadata `source` = `scifact/<doc id>`; `bench` (how bench/conversations.py stored them before):
    `title` + space + text, no metadata.
    """
    out = []
    for doc in read_jsonl(data_dir / "corpus.jsonl"):
        doc_id, title, text = str(doc["_id"]), str(doc.get("title", "")), str(doc.get("text", ""))
        if way == "issue":
            out.append((doc_id, f"{title}\n{text}".strip(), {"source": f"scifact/{doc_id}"}))
        else:
            out.append((doc_id, f"{title} {text}".strip(), {}))
    return out


def load_scifact(data_dir: Path, limit_docs: int | None) -> SciFact:
    doc_ids: list[str] = []
    doc_texts: list[str] = []
    for doc in read_jsonl(data_dir / "corpus.jsonl"):
        if limit_docs is not None and len(doc_ids) >= limit_docs:
            break
        doc_ids.append(str(doc["_id"]))
        doc_texts.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
    qrels = read_qrels(data_dir / "qrels" / "test.tsv")
    query_ids: list[str] = []
    query_texts: list[str] = []
    for query in read_jsonl(data_dir / "queries.jsonl"):
        if str(query["_id"]) in qrels:
            query_ids.append(str(query["_id"]))
            query_texts.append(str(query["text"]))
    return SciFact(doc_ids, doc_texts, query_ids, query_texts, qrels)


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(data_dir: Path, seed: int = 7) -> list[str]:
    corpus = data_dir / "corpus.jsonl"
    if corpus.is_file():
        found = [s for doc in read_jsonl(corpus) for s in _SENTENCE.split(doc.get("text", "")) if len(s) > 40]
    else:
        print(f"note: {corpus} not found, generating sentences", file=sys.stderr)
        rng = random.Random(seed)
        words = [f"term{i}" for i in range(5000)]
        found = [" ".join(rng.choices(words, k=12)) + "." for _ in range(50_000)]
    return found


def memory_texts(pool: list[str], count: int, seed: int) -> list[str]:
    """`count` distinct texts of two sentences each (the same text twice would be stored once)."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        texts[f"{rng.choice(pool)} {rng.choice(pool)}"] = None
    return list(texts)


def queries(data_dir: Path, pool: list[str], count: int) -> list[str]:
    path = data_dir / "queries.jsonl"
    claims = [str(q["text"]) for q in read_jsonl(path)] if path.is_file() else []
    rng = random.Random(11)
    claims += [" ".join(rng.choice(pool).split()[:8]) for _ in range(max(0, count - len(claims)))]
    return claims[:count]


def progress(total: int, desc: str) -> Any:
    """A tqdm bar on stderr when tqdm is installed, else None."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="text", file=sys.stderr)


def summary_ms(samples_ms: Sequence[float], quantiles: Sequence[float] = (0.50, 0.95, 0.99)) -> dict[str, float]:
    """Nearest-rank percentiles (p50, p95, ...) and the mean of millisecond samples, rounded to 0.01."""
    ordered = sorted(samples_ms)
    out = {f"p{round(q * 100)}": round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) for q in quantiles}
    out["mean"] = round(float(np.mean(ordered)), 2)
    return out


async def timed_ms(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def commit() -> str:
    """The checkout's short commit, for a results file to say what it measured."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def write_results(report: str, results: Any, output: Path, json_path: Path) -> None:
    """Save the markdown report and the raw figures as JSON beside it, and print the report."""
    for path, text in ((output, report), (json_path, json.dumps(results, indent=2) + "\n")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(report)


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Call a tool that must succeed: its structured content and the client-measured round trip (ms)."""
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"{tool} failed through MCP: {result.content}")
    return result.structured_content, elapsed_ms


T = TypeVar("T")


def in_scratch_dir(prefix: str, work: Callable[[Path], Coroutine[Any, Any, T]]) -> T:
    """Run `work` in a fresh directory under /tmp (short: unix socket paths are limited), removed after."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        return asyncio.run(work(workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_http(
    env: dict[str, str], port: int, *, stderr: IO[bytes] | int = subprocess.DEVNULL, timeout_s: float = 180.0
) -> subprocess.Popen[bytes]:
    """`zapomni serve --http` on 127.0.0.1:`port`, handed back once its /readyz answers (killed if it never does)."""
    server = subprocess.Popen(
        [ZAPOMNI, "serve", "--http", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"zapomni serve --http exited with {server.returncode} before it was ready")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    server.kill()
    raise RuntimeError(f"zapomni serve --http did not become ready in {timeout_s:g} s")
